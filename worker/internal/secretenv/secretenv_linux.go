//go:build linux

package secretenv

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// fdVar names the descriptor of the handed-over secrets in the
// re-executed process's environment; it holds nothing secret.
const fdVar = "JETJOB_INTERNAL_SECRETS_FD"

// memfdName is the memory file's name, as /proc/self/fd shows it
// ("/memfd:jetjob-secrets (deleted)"): how the re-executed process knows
// the descriptor is the one its parent made.
const memfdName = "jetjob-secrets"

// maxPayload bounds what is read back.
const maxPayload = 1 << 20

// self is the running binary, even if its file was replaced since.
const self = "/proc/self/exe"

// payload is what crosses the exec.
type payload struct {
	Env  map[string]string `json:"env"`
	Args []string          `json:"args"`
}

// Start moves the secrets p names out of the process's initial
// environment and command line (see the package doc). When there are any
// it executes the program again, so it does not return; in that second
// process it returns what was moved. Call it first in main, before
// anything reads the environment or starts a goroutine.
func Start(p Policy) (*Moved, error) {
	if v, ok := os.LookupEnv(fdVar); ok {
		_ = os.Unsetenv(fdVar)
		m, err := receive(v)
		if err != nil {
			return nil, err
		}
		restore(m, p)
		return m, nil
	}
	kept, env := split(os.Environ(), p.Env)
	args, movedArgs := splitArgs(os.Args[1:], p.Flags)
	if len(env) == 0 && len(movedArgs) == 0 {
		return &Moved{Env: env}, nil
	}
	if _, err := os.Stat(self); err != nil {
		// No /proc: nobody can read the initial environment through it
		// either. The secrets leave the Go environment all the same.
		for name := range env {
			_ = os.Unsetenv(name)
		}
		m := &Moved{Env: env, Args: movedArgs}
		os.Args = append(os.Args[:1], args...)
		restore(m, p)
		return m, nil
	}
	fd, err := hand(payload{Env: env, Args: movedArgs})
	if err != nil {
		return nil, err
	}
	err = syscall.Exec(self, append([]string{os.Args[0]}, args...), append(kept, fdVar+"="+strconv.Itoa(fd)))
	_ = unix.Close(fd)
	return nil, fmt.Errorf("secretenv: execute %s again without its secrets: %w", os.Args[0], err)
}

// hand writes pl into a new memory file and returns its descriptor, open
// across exec (no close-on-exec) and positioned at the start.
func hand(pl payload) (int, error) {
	data, err := json.Marshal(pl)
	if err != nil {
		return -1, err
	}
	fd, err := unix.MemfdCreate(memfdName, 0)
	if err != nil {
		return -1, fmt.Errorf("secretenv: memfd: %w", err)
	}
	for b := data; len(b) > 0; {
		n, err := unix.Write(fd, b)
		if err != nil {
			_ = unix.Close(fd)
			return -1, fmt.Errorf("secretenv: write memfd: %w", err)
		}
		b = b[n:]
	}
	if _, err := unix.Seek(fd, 0, io.SeekStart); err != nil {
		_ = unix.Close(fd)
		return -1, fmt.Errorf("secretenv: seek memfd: %w", err)
	}
	return fd, nil
}

// receive reads and closes the memory file whose descriptor is v. Only
// the file its parent made is read: the variable could be set by anyone,
// and a descriptor such as standard input must not be consumed.
func receive(v string) (*Moved, error) {
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 0 {
		return nil, fmt.Errorf("secretenv: %s=%q is not a descriptor", fdVar, v)
	}
	target, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil || target != "/memfd:"+memfdName+" (deleted)" {
		return nil, fmt.Errorf("secretenv: descriptor %d of %s is not the secrets' memory file (%q)", fd, fdVar, target)
	}
	f := os.NewFile(uintptr(fd), memfdName)
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxPayload+1))
	if err != nil {
		return nil, fmt.Errorf("secretenv: read the handed-over secrets: %w", err)
	}
	if len(data) > maxPayload {
		return nil, errors.New("secretenv: handed-over secrets too large")
	}
	var pl payload
	if err := json.Unmarshal(data, &pl); err != nil {
		return nil, fmt.Errorf("secretenv: handed-over secrets: %w", err)
	}
	if pl.Env == nil {
		pl.Env = map[string]string{}
	}
	return &Moved{Env: pl.Env, Args: pl.Args}, nil
}

// restore sets the moved variables p.Restore names in the Go environment.
func restore(m *Moved, p Policy) {
	if p.Restore == nil {
		return
	}
	for name, v := range m.Env {
		if p.Restore(name) {
			_ = os.Setenv(name, v)
		}
	}
}
