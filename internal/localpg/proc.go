package localpg

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// runAs is the identity initdb, pg_ctl and postgres run under. PostgreSQL
// refuses to run as root (a compromised server would own the machine), and
// this project's machines and CI run as root, so as root we drop to the
// `postgres` system user that the Debian package creates. As anyone else we
// run as ourselves and cred stays nil.
type runAs struct {
	cred *syscall.Credential
}

func currentRunAs() (runAs, error) {
	if os.Geteuid() != 0 {
		return runAs{}, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return runAs{}, fmt.Errorf("running as root, which PostgreSQL refuses, and there is no `postgres` system user to run it as "+
			"(installing the postgresql package creates one, or run as a non-root user): %w", err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return runAs{}, fmt.Errorf("user postgres: bad uid %q: %w", u.Uid, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return runAs{}, fmt.Errorf("user postgres: bad gid %q: %w", u.Gid, err)
	}
	// Groups left empty: root's supplementary groups are dropped too.
	return runAs{cred: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}, nil
}

// own hands dir and everything in it to the user PostgreSQL runs as. Walking
// is skipped when the top is already theirs, so restarting a big existing
// cluster costs nothing.
func (r runAs) own(dir string) error {
	if r.cred == nil {
		return nil
	}
	if fi, err := os.Stat(dir); err == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid == r.cred.Uid && st.Gid == r.cred.Gid {
			return nil
		}
	}
	return filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, int(r.cred.Uid), int(r.cred.Gid))
	})
}

// makeReachable makes sure the postgres user can traverse every ancestor
// of dir. Ancestors inside the temp directory, such as t.TempDir()'s 0700
// directories, are throwaway, so they get the o+x bit (traverse, not list);
// anywhere else we change nothing and fail with a clear message, because
// otherwise initdb fails with a bare "Permission denied" that is hard to
// connect to "the data directory is under /root".
func (r runAs) makeReachable(dir string) error {
	if r.cred == nil {
		return nil
	}
	tmp, _ := filepath.Abs(os.TempDir())
	for p := filepath.Dir(dir); ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		if !r.canTraverse(fi) {
			if !strings.HasPrefix(p, tmp+string(filepath.Separator)) {
				return fmt.Errorf("data directory %s is not reachable by the postgres user that PostgreSQL runs as: "+
					"%s has mode %v (make it traversable with chmod o+x, or leave Options.Dir empty)", dir, p, fi.Mode().Perm())
			}
			if err := os.Chmod(p, fi.Mode().Perm()|0o001); err != nil {
				return err
			}
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}

func (r runAs) canTraverse(fi os.FileInfo) bool {
	perm := fi.Mode().Perm()
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return perm&0o001 != 0
	}
	switch {
	case st.Uid == r.cred.Uid:
		return perm&0o100 != 0
	case st.Gid == r.cred.Gid:
		return perm&0o010 != 0
	default:
		return perm&0o001 != 0
	}
}

// command builds a command for one of the PostgreSQL binaries, run as the
// right user from inside dir. The working directory matters: initdb and
// pg_ctl resolve their own path relative to it and fail when it is, say,
// /root and they run as postgres.
func (r runAs) command(ctx context.Context, bin, dir, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(bin, name), args...)
	cmd.Dir = dir
	cmd.Env = childEnv()
	if r.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: r.cred}
	}
	return cmd
}

// childEnv is our environment without PG* variables (PGDATA, PGPORT,
// PGCTLTIMEOUT, ... would quietly override what we pass) and with the C
// locale, so that messages we show or match, such as "Address already in
// use", are in English.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PG") || strings.HasPrefix(kv, "LC_") || strings.HasPrefix(kv, "LANG") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "LC_ALL=C")
}

// watchdogScript stops a server when the process that started it is gone.
// Its stdin is a pipe whose only writer is our process, so `read` returns
// exactly when we exit, however we exit: a test binary killed by `go test
// -timeout`, a SIGKILLed dev command, a panic. It then asks for a fast
// shutdown, escalates to immediate after ~30 s, and removes the temp
// directory if there is one. The pid file check guards against signalling a
// recycled pid once the server has already gone. Without it, every crashed
// test run would leave PostgreSQL servers behind, holding memory and ports
// until the machine is recycled.
//
// Arguments: $1 postmaster pid, $2 data directory, $3 directory to remove or "".
const watchdogScript = `read -r _
alive() { [ "$(head -n 1 "$2/postmaster.pid" 2>/dev/null)" = "$1" ] && kill -0 "$1" 2>/dev/null; }
if alive "$@"; then
	kill -INT "$1" 2>/dev/null
	i=0
	while alive "$@" && [ "$i" -lt 600 ]; do
		[ "$i" -eq 300 ] && kill -QUIT "$1" 2>/dev/null
		i=$((i + 1))
		sleep 0.1
	done
fi
[ -n "$3" ] && rm -rf -- "$3"
exit 0
`

// watchdog is a running watchdogScript and the write end of its stdin.
type watchdog struct {
	cmd *exec.Cmd
	w   *os.File
}

// armed holds every watchdog that has not been disarmed. Its only job is to
// keep them reachable: an *os.File closes itself when garbage collected, so
// a caller that kept a server's URL but dropped the *Server would otherwise
// see its server shut down at the next GC.
var armed sync.Map // *watchdog -> struct{}

// startWatchdog starts the watchdog in its own session so that a Ctrl-C on
// the terminal, which goes to our whole process group, does not kill it
// before it has done its job.
func startWatchdog(pid int, dataDir, removeDir string) (*watchdog, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("/bin/sh", "-c", watchdogScript, "localpg-watchdog", strconv.Itoa(pid), dataDir, removeDir)
	cmd.Stdin = r
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	r.Close() // the child has its copy; ours would keep the pipe open forever
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("start watchdog: %w", err)
	}
	wd := &watchdog{cmd: cmd, w: w}
	armed.Store(wd, struct{}{})
	return wd, nil
}

// disarm ends the watchdog without letting it act: it is killed before its
// stdin is closed, so it never sees EOF.
func (wd *watchdog) disarm() {
	if wd == nil {
		return
	}
	_ = wd.cmd.Process.Kill()
	_ = wd.cmd.Wait()
	_ = wd.w.Close()
	armed.Delete(wd)
}
