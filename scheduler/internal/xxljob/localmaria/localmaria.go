// Package localmaria runs a throwaway MariaDB server from the machine's
// MariaDB binaries, for tests that must read a real MySQL-protocol database
// (the xxl-job import reads xxl-job's tables).
//
// It is modelled on internal/localpg: each Server has its own temporary
// data directory and its own port on 127.0.0.1, so tests never collide with
// each other or with a system MariaDB. The server runs with
// --skip-grant-tables (any user, no password): it only listens on loopback
// and holds nothing but test fixtures. `make ensure-mariadb`
// (deploy/ensure-mariadb.sh) installs the binaries when they are missing.
package localmaria

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/jetjob/jetjob/internal/testtier"
)

// EnvBin names a directory holding mariadbd and mariadb-install-db; it
// wins over the usual places.
const EnvBin = "JETJOB_MARIADB_BIN"

// startAttempts bounds how often Start picks a new port when the one it
// picked was taken before mariadbd could bind it.
const startAttempts = 3

// readyTimeout bounds the wait for a started server to accept connections;
// generous, for a loaded 2-core machine.
const readyTimeout = 90 * time.Second

// stopGrace is how long Close waits after SIGTERM before SIGKILL.
const stopGrace = 30 * time.Second

// Binaries are the MariaDB programs Start runs.
type Binaries struct {
	Server    string // mariadbd
	InstallDB string // mariadb-install-db
}

// FindBinaries looks where deploy/ensure-mariadb.sh looks, in the same
// order: $JETJOB_MARIADB_BIN, /usr/sbin and /usr/bin, then PATH.
func FindBinaries() (Binaries, error) {
	if dir := os.Getenv(EnvBin); dir != "" {
		b := Binaries{Server: filepath.Join(dir, "mariadbd"), InstallDB: filepath.Join(dir, "mariadb-install-db")}
		if !executable(b.Server) || !executable(b.InstallDB) {
			return Binaries{}, fmt.Errorf("localmaria: %s=%s has no mariadbd and mariadb-install-db", EnvBin, dir)
		}
		return b, nil
	}
	find := func(name string) string {
		for _, dir := range []string{"/usr/sbin", "/usr/bin"} {
			if p := filepath.Join(dir, name); executable(p) {
				return p
			}
		}
		p, _ := exec.LookPath(name)
		return p
	}
	b := Binaries{Server: find("mariadbd"), InstallDB: find("mariadb-install-db")}
	if b.Server == "" || b.InstallDB == "" {
		return Binaries{}, errors.New("localmaria: MariaDB server binaries not found (mariadbd, mariadb-install-db): " +
			"run `make ensure-mariadb` or `apt-get install -y mariadb-server`, or set " + EnvBin)
	}
	return b, nil
}

func executable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// Server is a running mariadbd started by Start.
type Server struct {
	dir  string // temporary root: data directory, socket, logs
	port int

	cmd    *exec.Cmd
	exited chan struct{} // closed when the process has been reaped

	closeOnce sync.Once
	closeErr  error
}

// Start initialises a data directory in a new temporary directory, starts
// mariadbd on a free port of 127.0.0.1 and returns once it accepts
// connections. On error nothing is left running and the directory is
// removed.
func Start(ctx context.Context) (*Server, error) {
	bin, err := FindBinaries()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "jetjob-maria-")
	if err != nil {
		return nil, fmt.Errorf("localmaria: %w", err)
	}
	if err := installDB(ctx, bin, dir); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		s, err := launch(ctx, bin, dir)
		if err == nil {
			return s, nil
		}
		// A port taken between choosing it and binding it is worth another
		// try; anything else is not.
		if attempt >= startAttempts || !strings.Contains(err.Error(), "in use") {
			os.RemoveAll(dir)
			return nil, err
		}
	}
}

// installDB creates the system tables in dir/data. As root (this project's
// machines and CI) the files must belong to root too, hence --user.
func installDB(ctx context.Context, bin Binaries, dir string) error {
	cmd := exec.CommandContext(ctx, bin.InstallDB, "--no-defaults",
		"--datadir="+filepath.Join(dir, "data"), "--user="+currentUser(),
		"--auth-root-authentication-method=normal", "--skip-test-db", "--skip-name-resolve")
	// A temporary directory of its own: the bootstrap server's temporary
	// tables in a shared /tmp collided with another bootstrap's (two test
	// packages starting MariaDB at once: "Unknown table
	// 'mysql.tmp_proxies_priv'").
	tmp := filepath.Join(dir, "tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return fmt.Errorf("localmaria: %w", err)
	}
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("localmaria: mariadb-install-db: %w: %s", err, problemLines(string(out), 5))
	}
	return nil
}

// launch starts mariadbd on a fresh port and waits until it answers.
func launch(ctx context.Context, bin Binaries, dir string) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("localmaria: %w", err)
	}
	logFile := filepath.Join(dir, "error.log")
	_ = os.Remove(logFile) // a failed attempt's log would be quoted again
	cmd := exec.Command(bin.Server, "--no-defaults",
		"--datadir="+filepath.Join(dir, "data"), "--user="+currentUser(),
		"--port="+strconv.Itoa(port), "--bind-address=127.0.0.1", "--tmpdir="+filepath.Join(dir, "tmp"),
		"--socket="+filepath.Join(dir, "mysqld.sock"), "--pid-file="+filepath.Join(dir, "mysqld.pid"),
		"--log-error="+logFile, "--skip-name-resolve", "--skip-grant-tables", "--skip-log-bin",
		"--innodb-buffer-pool-size=16M", "--character-set-server=utf8mb4", "--collation-server=utf8mb4_general_ci")
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("localmaria: start mariadbd: %w", err)
	}
	s := &Server{dir: dir, port: port, cmd: cmd, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(s.exited)
	}()
	if err := s.waitReady(ctx); err != nil {
		s.stop()
		log, _ := os.ReadFile(logFile)
		return nil, fmt.Errorf("localmaria: %w; server log: %s", err, lastLines(string(log), 8))
	}
	return s, nil
}

// waitReady connects until the server answers, the process exits or the
// deadline passes: readiness is a successful ping, not a guessed delay.
func (s *Server) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	db, err := sql.Open("mysql", s.DSN(""))
	if err != nil {
		return err
	}
	defer db.Close()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		err := db.PingContext(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("mariadbd exited before accepting connections (last error: %v)", err)
		case <-ctx.Done():
			return fmt.Errorf("mariadbd not accepting connections on port %d: %w (last error: %v)", s.port, ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// DSN is a go-sql-driver/mysql data source name for database ("" for
// none) on this server, as root.
func (s *Server) DSN(database string) string {
	cfg := mysql.NewConfig()
	cfg.User = "root"
	cfg.Net = "tcp"
	cfg.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
	cfg.DBName = database
	cfg.MultiStatements = true // fixtures are SQL scripts
	return cfg.FormatDSN()
}

// Port is the TCP port the server listens on.
func (s *Server) Port() int { return s.port }

// CreateDatabase creates an empty database.
func (s *Server) CreateDatabase(ctx context.Context, name string) error {
	db, err := sql.Open("mysql", s.DSN(""))
	if err != nil {
		return fmt.Errorf("localmaria: %w", err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "CREATE DATABASE `"+strings.ReplaceAll(name, "`", "``")+"` CHARACTER SET utf8mb4"); err != nil {
		return fmt.Errorf("localmaria: create database %s: %w", name, err)
	}
	return nil
}

// LoadFiles runs SQL scripts (several statements each) in database, in
// order: a test's fixture.
func (s *Server) LoadFiles(ctx context.Context, database string, paths ...string) error {
	db, err := sql.Open("mysql", s.DSN(database))
	if err != nil {
		return fmt.Errorf("localmaria: %w", err)
	}
	defer db.Close()
	for _, p := range paths {
		script, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("localmaria: %w", err)
		}
		if _, err := db.ExecContext(ctx, string(script)); err != nil {
			return fmt.Errorf("localmaria: load %s: %w", p, err)
		}
	}
	return nil
}

// Close stops the server (SIGTERM, SIGKILL after a grace) and removes its
// directory. It is safe to call more than once.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.stop()
		s.closeErr = os.RemoveAll(s.dir)
	})
	return s.closeErr
}

func (s *Server) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(stopGrace):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

// StartTest starts a server for t and stops it when t ends. It skips t in
// the short tier, and where the machine has no MariaDB binaries (unless
// make runs the tests: package testtier).
func StartTest(t testing.TB) *Server {
	t.Helper()
	testtier.Needs(t, testtier.MariaDB)
	if _, err := FindBinaries(); err != nil {
		testtier.Missing(t, "MariaDB server binaries", err, "make ensure-mariadb (or make test)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s, err := Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("localmaria: close: %v", err)
		}
	})
	return s
}

// StartTestDB is StartTest with database created and loaded from files
// (SQL, in order): what a test of an xxl-job database starts from.
func StartTestDB(t testing.TB, database string, files ...string) *Server {
	t.Helper()
	s := StartTest(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := s.CreateDatabase(ctx, database); err != nil {
		t.Fatal(err)
	}
	if err := s.LoadFiles(ctx, database, files...); err != nil {
		t.Fatal(err)
	}
	return s
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// currentUser is the user mariadbd runs as: itself. mariadbd refuses to
// run as root unless told so with --user=root.
func currentUser() string {
	if os.Geteuid() == 0 {
		return "root"
	}
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return strconv.Itoa(os.Geteuid())
}

// problemLines is what explains a failed mariadb-install-db: the lines
// that name an error, or else its last n lines (which, on failure, are its
// advice to file a bug report).
func problemLines(s string, n int) string {
	var errs []string
	for _, line := range strings.Split(s, "\n") {
		if strings.Contains(line, "ERROR") || strings.Contains(line, "rror:") {
			errs = append(errs, strings.TrimSpace(line))
		}
	}
	if len(errs) > 0 {
		return strings.Join(errs, " | ")
	}
	return lastLines(s, n)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
