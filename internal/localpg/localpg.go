// Package localpg runs a throwaway PostgreSQL server from the machine's
// PostgreSQL server binaries.
//
// It exists so that `jetjob-scheduler dev` is one command and so that every
// integration test in the repository can run against a real PostgreSQL
// instead of mocks, without anyone having to set up, configure or share a
// database server. Each Server has its own data directory, its own port on
// 127.0.0.1 and trust authentication for the `postgres` superuser, so tests
// never collide with each other or with a system PostgreSQL.
//
// A typical test package starts one Server in TestMain, builds a template
// database once, and gives each test its own copy with CreateDatabase, which
// is much cheaper than starting a server per test.
package localpg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/backoff"
)

// Options configures Start. The zero value is a fresh server in a temporary
// directory on a free port.
type Options struct {
	// Dir is the data directory. If it is empty or does not exist, a new
	// cluster is created in it; if it holds a cluster, that cluster is
	// started. "" means a new temporary directory that Close removes.
	Dir string
	// Port is the TCP port on 127.0.0.1; 0 picks a free one.
	Port int
	// Fast turns off fsync, synchronous_commit and full_page_writes (and
	// initdb's final sync). That makes writes much cheaper but means
	// an operating system crash or power loss can corrupt the cluster: use
	// it only for tests and dev data you can lose.
	Fast bool
	// Logger receives start/stop events; nil means zap.NewNop().
	Logger *zap.Logger
}

// LogFileName is the server log inside the data directory. It lives there,
// not in some global place, so it goes away with a temporary cluster and so
// that a failed start can quote its last lines.
const LogFileName = "localpg.log"

// maxConnections leaves room for several schedulers, each with a pool, plus
// test helpers, in one test against one server; PostgreSQL's default of 100
// is easy to exhaust that way.
const maxConnections = 200

// portAttempts bounds how often Start picks a new port when the one it
// picked was taken before PostgreSQL could bind it.
const portAttempts = 5

// Server is a PostgreSQL server started by Start. Its methods are safe for
// concurrent use.
type Server struct {
	bin     string
	dataDir string
	tmpRoot string // removed by Close; "" when the caller owns Dir
	port    int
	fast    bool
	as      runAs
	log     *zap.Logger

	mu      sync.Mutex
	running bool
	closed  bool
	wd      *watchdog
}

// Start creates the cluster if needed, starts PostgreSQL and returns once it
// accepts connections. On error nothing is left running and a temporary
// directory it made is removed.
func Start(ctx context.Context, o Options) (*Server, error) {
	bin, err := FindBinaries()
	if err != nil {
		return nil, err
	}
	as, err := currentRunAs()
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin, port: o.Port, fast: o.Fast, as: as, log: o.Logger}
	if s.log == nil {
		s.log = zap.NewNop()
	}
	if o.Dir == "" {
		root, err := os.MkdirTemp("", "jetjob-pg-")
		if err != nil {
			return nil, fmt.Errorf("localpg: %w", err)
		}
		s.tmpRoot = root
		s.dataDir = filepath.Join(root, "data")
	} else {
		if s.dataDir, err = filepath.Abs(o.Dir); err != nil {
			return nil, fmt.Errorf("localpg: %w", err)
		}
	}
	if err := s.prepare(ctx); err != nil {
		s.removeTemp()
		return nil, fmt.Errorf("localpg: %w", err)
	}
	if err := s.startWithRetry(ctx, o.Port == 0); err != nil {
		s.removeTemp()
		return nil, fmt.Errorf("localpg: %w", err)
	}
	return s, nil
}

// URL returns a connection string for database on this server, as the
// postgres superuser with TLS off (the server only listens on loopback).
func (s *Server) URL(database string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.port, url.PathEscape(database))
}

// Port is the TCP port the server listens on. It never changes, even across
// Stop and Start, so URLs handed out earlier stay valid.
func (s *Server) Port() int { return s.port }

// DataDir is the cluster's data directory.
func (s *Server) DataDir() string { return s.dataDir }

// LogFile is the path of the server log.
func (s *Server) LogFile() string { return filepath.Join(s.dataDir, LogFileName) }

// Stop shuts the server down (fast shutdown: open sessions are cut, data is
// checkpointed) and keeps the data directory, so that tests can simulate a
// PostgreSQL outage and recover from it with Start. Stopping a stopped
// server does nothing.
func (s *Server) Stop(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.stopLocked(ctx); err != nil {
		return fmt.Errorf("localpg: %w", err)
	}
	return nil
}

// Start starts a stopped server again, on the same port and data. Unlike the
// first start it does not move to another port if that one has been taken
// meanwhile, since clients hold URLs with the port in them; it fails
// instead. Starting a running server does nothing.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("localpg: server is closed")
	}
	if s.running {
		return nil
	}
	if err := s.startLocked(ctx); err != nil {
		return fmt.Errorf("localpg: %w", err)
	}
	return nil
}

// Close stops the server if it is running and removes the temporary
// directory Start created, if any. Calling it again does nothing.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err := s.stopLocked(ctx)
	if err != nil && s.tmpRoot != "" {
		// The data is about to be deleted anyway; don't let a slow
		// checkpoint keep a server running on a removed directory.
		err = s.pgCtlStop(ctx, "immediate")
	}
	if rmErr := s.removeTemp(); rmErr != nil {
		err = errors.Join(err, rmErr)
	}
	if err != nil {
		return fmt.Errorf("localpg: close: %w", err)
	}
	return nil
}

// CreateDatabase creates database name as a copy of template ("" means
// PostgreSQL's default, template1). PostgreSQL refuses to copy a template
// while anyone is connected to it, and connections closed just before (a
// pool shutting down, say) linger for a moment, so that case is retried
// until ctx ends.
func (s *Server) CreateDatabase(ctx context.Context, name, template string) error {
	sql := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize()
	if template != "" {
		sql += " TEMPLATE " + pgx.Identifier{template}.Sanitize()
	}
	conn, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		return fmt.Errorf("localpg: create database %q: %w", name, err)
	}
	defer conn.Close(context.Background())
	if s.fast && serverMajor(conn) >= 15 {
		// PostgreSQL 15's default, WAL_LOG, copies the template page by
		// page through the WAL; FILE_COPY copies files and checkpoints,
		// which costs nothing with fsync off. Measured here: about 100 ms
		// instead of 170 ms per small database, and tests make many.
		sql += " STRATEGY FILE_COPY"
	}
	err = backoff.Retry(ctx, backoff.Policy{Backoff: backoff.Backoff{Initial: 10 * time.Millisecond, Max: 200 * time.Millisecond}},
		func(ctx context.Context) error {
			_, err := conn.Exec(ctx, sql)
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) && pgErr.Code == "55006" { // object_in_use
				return err
			}
			return backoff.Permanent(err)
		})
	if err != nil {
		return fmt.Errorf("localpg: create database %q: %w", name, err)
	}
	return nil
}

// serverMajor is the server's major version, 0 if unknown.
func serverMajor(conn *pgx.Conn) int {
	n := 0
	for _, r := range conn.PgConn().ParameterStatus("server_version") { // "15.18 (Debian ...)", "17beta1"
		if r < '0' || r > '9' {
			break
		}
		n = 10*n + int(r-'0')
	}
	return n
}

// prepare makes sure the data directory exists, is owned by the user
// PostgreSQL runs as, and holds a cluster, running initdb if it is empty.
func (s *Server) prepare(ctx context.Context) error {
	// Parents are made 0755 so that the postgres user can reach the data
	// directory; the data directory itself must be private (PostgreSQL
	// refuses to start otherwise).
	if err := os.MkdirAll(filepath.Dir(s.dataDir), 0o755); err != nil {
		return err
	}
	if err := os.MkdirAll(s.dataDir, 0o700); err != nil {
		return err
	}
	if err := s.as.makeReachable(s.dataDir); err != nil {
		return err
	}
	if err := s.as.own(s.dataDir); err != nil {
		return fmt.Errorf("hand %s to user postgres: %w", s.dataDir, err)
	}
	if _, err := os.Stat(filepath.Join(s.dataDir, "PG_VERSION")); err == nil {
		return s.stopStale(ctx)
	}
	entries, err := os.ReadDir(s.dataDir)
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		return fmt.Errorf("%s is neither empty nor a PostgreSQL data directory", s.dataDir)
	}
	args := []string{
		"-D", s.dataDir, "-U", "postgres", "--auth=trust", "-E", "UTF8",
		// The C locale exists everywhere (a LANG naming an uninstalled
		// locale makes initdb fail) and sorts text the same on every machine.
		"--no-locale",
	}
	if s.fast {
		args = append(args, "--no-sync")
	}
	start := time.Now()
	out, err := s.as.command(ctx, s.bin, s.dataDir, "initdb", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("initdb %s: %w\n%s", s.dataDir, err, lastLines(out, 20))
	}
	s.log.Debug("localpg: initdb done", zap.String("dir", s.dataDir), zap.Duration("took", time.Since(start)))
	return nil
}

// stopStale stops a server still running on our data directory, left by a
// process that died without the watchdog getting to it (it was SIGKILLed
// too, say). Otherwise `jetjob-scheduler dev` would refuse to start again
// until someone found and killed the old postgres by hand.
func (s *Server) stopStale(ctx context.Context) error {
	err := s.as.command(ctx, s.bin, s.dataDir, "pg_ctl", "-D", s.dataDir, "status").Run()
	if err != nil {
		return nil // exit status 3: not running (or an error we'll see on start)
	}
	s.log.Warn("localpg: stopping a server left running on the data directory", zap.String("dir", s.dataDir))
	return s.pgCtlStop(ctx, "fast")
}

// startWithRetry starts the server, moving to a new port when pickPorts is
// set and the port was taken between picking and binding. A server log
// that says so is the only reliable signal: another process can grab the
// port at any moment, and a probe beforehand only narrows the window.
func (s *Server) startWithRetry(ctx context.Context, pickPorts bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for attempt := 1; ; attempt++ {
		if pickPorts {
			p, err := pickPort()
			if err != nil {
				return err
			}
			s.port = p
		}
		err := s.startLocked(ctx)
		if err == nil || !pickPorts || !errors.Is(err, errPortInUse) || attempt == portAttempts {
			return err
		}
		s.log.Debug("localpg: port taken, trying another", zap.Int("port", s.port))
	}
}

var errPortInUse = errors.New("port already in use")

// addrInUse matches PostgreSQL's bind failure, e.g. `could not bind IPv4
// address "127.0.0.1": Address already in use`.
var addrInUse = regexp.MustCompile(`could not bind .*Address already in use`)

func (s *Server) startLocked(ctx context.Context) error {
	logPath := s.LogFile()
	logStart := fileSize(logPath)
	args := []string{"-D", s.dataDir, "-l", logPath, "-w", "-t", strconv.Itoa(waitSeconds(ctx)), "-o", s.serverOptions(), "start"}
	start := time.Now()
	out, err := s.as.command(ctx, s.bin, s.dataDir, "pg_ctl", args...).CombinedOutput()
	if err != nil {
		// pg_ctl may have given up (or been killed by ctx) while postgres
		// was still coming up; make sure nothing is left behind.
		_ = s.pgCtlStop(context.Background(), "immediate")
		tail := lastLines(readFrom(logPath, logStart), 20)
		if addrInUse.Match(tail) {
			err = fmt.Errorf("%w: %w", errPortInUse, err)
		}
		return fmt.Errorf("start postgres on port %d: %w\n%s\nserver log %s:\n%s",
			s.port, err, bytes.TrimSpace(out), logPath, tail)
	}
	if err := s.waitReady(ctx); err != nil {
		_ = s.pgCtlStop(context.Background(), "immediate")
		return fmt.Errorf("postgres on port %d started but does not accept connections: %w\nserver log %s:\n%s",
			s.port, err, logPath, lastLines(readFrom(logPath, logStart), 20))
	}
	s.running = true
	pid, err := postmasterPID(s.dataDir)
	if err == nil {
		s.wd, err = startWatchdog(pid, s.dataDir, s.tmpRoot)
	}
	if err != nil {
		// The server works; only the crash cleanup is missing.
		s.log.Warn("localpg: no watchdog; the server outlives a crash of this process", zap.Error(err))
	}
	s.log.Info("localpg: postgres started", zap.Int("port", s.port), zap.String("dir", s.dataDir),
		zap.Duration("took", time.Since(start)))
	return nil
}

// serverOptions are the postgres command-line settings. pg_ctl hands them
// to /bin/sh, hence the quoting.
func (s *Server) serverOptions() string {
	opts := []string{
		"-p " + strconv.Itoa(s.port),
		"-c listen_addresses=127.0.0.1",
		"-c unix_socket_directories=" + shellQuote(s.socketDir()),
		"-c max_connections=" + strconv.Itoa(maxConnections),
		"-c lc_messages=C", // the port-in-use check reads the log
	}
	if s.fast {
		opts = append(opts, "-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off")
	}
	return strings.Join(opts, " ")
}

// socketDir is where the Unix socket goes: the data directory, so servers
// never share a socket lock file and never touch /var/run/postgresql. We
// only use TCP, so when the path is too long for a socket address (108
// bytes on Linux, which t.TempDir() paths can exceed) or would need quoting
// in PostgreSQL's list syntax, there is no socket at all rather than a
// failed start.
func (s *Server) socketDir() string {
	const maxSocketPath = 107
	if len(s.dataDir)+len("/.s.PGSQL.65535.lock") > maxSocketPath || strings.ContainsAny(s.dataDir, `,"' \`) {
		return ""
	}
	return s.dataDir
}

// waitReady polls until a connection succeeds. pg_ctl -w already waits for
// the postmaster to report itself ready, but a real connection is the only
// proof that clients will get in.
func (s *Server) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return backoff.Retry(ctx, backoff.Policy{Backoff: backoff.Backoff{Initial: 20 * time.Millisecond, Max: 20 * time.Millisecond}},
		func(ctx context.Context) error {
			conn, err := pgx.Connect(ctx, s.URL("postgres"))
			if err != nil {
				return err
			}
			defer conn.Close(context.Background())
			return conn.Ping(ctx)
		})
}

func (s *Server) stopLocked(ctx context.Context) error {
	if !s.running {
		return nil
	}
	// Disarmed first: once our own stop is under way the watchdog must not
	// remove the directory under it.
	s.wd.disarm()
	s.wd = nil
	if err := s.pgCtlStop(ctx, "fast"); err != nil {
		return err
	}
	s.running = false
	s.log.Info("localpg: postgres stopped", zap.Int("port", s.port), zap.String("dir", s.dataDir))
	return nil
}

// pgCtlStop stops the server with the given shutdown mode. A server that is
// already gone (it crashed, or never came up) counts as stopped.
func (s *Server) pgCtlStop(ctx context.Context, mode string) error {
	if _, err := os.Stat(filepath.Join(s.dataDir, "postmaster.pid")); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	args := []string{"-D", s.dataDir, "-m", mode, "-w", "-t", strconv.Itoa(waitSeconds(ctx)), "stop"}
	out, err := s.as.command(ctx, s.bin, s.dataDir, "pg_ctl", args...).CombinedOutput()
	if err != nil {
		if _, statErr := os.Stat(filepath.Join(s.dataDir, "postmaster.pid")); errors.Is(statErr, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("pg_ctl stop -m %s: %w: %s", mode, err, bytes.TrimSpace(out))
	}
	return nil
}

func (s *Server) removeTemp() error {
	if s.tmpRoot == "" {
		return nil
	}
	return os.RemoveAll(s.tmpRoot)
}

// pickPort returns a port that is free on 127.0.0.1 right now. It prefers
// ports below Linux's ephemeral range (32768-60999): a port from that range
// can be taken by any outgoing connection, including our own clients',
// while the server is stopped, and Start must then get the same port back.
// It is a variable so that tests can simulate losing the race for a port.
var pickPort = func() (int, error) {
	for range 100 {
		p := 20000 + rand.IntN(12000)
		if l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p))); err == nil {
			l.Close()
			return p, nil
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pick a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitSeconds turns ctx's deadline into pg_ctl's -t (default 60 s, like
// pg_ctl's own).
func waitSeconds(ctx context.Context) int {
	d, ok := ctx.Deadline()
	if !ok {
		return 60
	}
	return max(1, int(time.Until(d).Seconds()))
}

func postmasterPID(dataDir string) (int, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return strconv.Atoi(strings.TrimSpace(line))
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// readFrom returns the file's content from offset on: the part of the log
// written by the current start attempt.
func readFrom(path string, offset int64) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil
	}
	b, _ := io.ReadAll(io.LimitReader(f, 1<<20))
	return b
}

func lastLines(b []byte, n int) []byte {
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return bytes.Join(lines, []byte("\n"))
}
