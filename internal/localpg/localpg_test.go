package localpg

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap/zaptest"

	"github.com/jetjob/jetjob/internal/testtier"
	"github.com/jetjob/jetjob/internal/testwait"
)

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// needsBinaries skips t (or fails it, under make) where the machine has
// no PostgreSQL server binaries.
func needsBinaries(t *testing.T) {
	t.Helper()
	if _, err := FindBinaries(); err != nil {
		testtier.Missing(t, "PostgreSQL server binaries", err, "make ensure-postgres (or make test)")
	}
}

// needsServer is for every test that starts a server: it skips t in the
// short tier and where there are no binaries.
func needsServer(t *testing.T) {
	t.Helper()
	testtier.Needs(t, testtier.PostgreSQL)
	needsBinaries(t)
}

func startTest(t *testing.T, o Options) *Server {
	t.Helper()
	needsServer(t)
	o.Fast = true
	if o.Logger == nil {
		o.Logger = zaptest.NewLogger(t)
	}
	s, err := Start(testCtx(t), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

func connect(t *testing.T, ctx context.Context, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func refuses(port int) bool {
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
	if err != nil {
		return true
	}
	c.Close()
	return false
}

func TestStartAndQuery(t *testing.T) {
	ctx := testCtx(t)
	s := startTest(t, Options{})
	if s.Port() == 0 {
		t.Fatal("no port")
	}
	want := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.Port())
	if got := s.URL("postgres"); got != want {
		t.Fatalf("URL = %q, want %q", got, want)
	}
	conn := connect(t, ctx, s.URL("postgres"))
	var sum int
	if err := conn.QueryRow(ctx, "SELECT 40 + 2").Scan(&sum); err != nil || sum != 42 {
		t.Fatalf("SELECT 40 + 2 = %d, %v", sum, err)
	}
	for setting, want := range map[string]string{
		"max_connections":    "200",
		"fsync":              "off",
		"synchronous_commit": "off",
		"full_page_writes":   "off",
		"listen_addresses":   "127.0.0.1",
		"server_encoding":    "UTF8",
	} {
		var got string
		if err := conn.QueryRow(ctx, "SELECT current_setting($1)", setting).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s = %q, want %q", setting, got, want)
		}
	}
	if _, err := os.Stat(s.LogFile()); err != nil {
		t.Errorf("server log: %v", err)
	}
}

func TestStopStartKeepsDataAndPort(t *testing.T) {
	ctx := testCtx(t)
	s := startTest(t, Options{})
	port := s.Port()
	conn, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE jobs (id int PRIMARY KEY, name text); INSERT INTO jobs VALUES (1, 'nightly')"); err != nil {
		t.Fatal(err)
	}

	if err := s.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(ctx); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	// The open session is cut, as clients would see in a real outage.
	if err := conn.Ping(ctx); err == nil {
		t.Error("ping succeeded on a stopped server")
	}
	conn.Close(ctx)
	if !refuses(port) {
		t.Fatal("stopped server still accepts TCP connections")
	}
	if _, err := os.Stat(filepath.Join(s.DataDir(), "PG_VERSION")); err != nil {
		t.Fatalf("data dir gone after Stop: %v", err)
	}

	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatalf("second Start: %v", err)
	}
	if s.Port() != port {
		t.Fatalf("port changed from %d to %d", port, s.Port())
	}
	conn = connect(t, ctx, s.URL("postgres"))
	var name string
	if err := conn.QueryRow(ctx, "SELECT name FROM jobs WHERE id = 1").Scan(&name); err != nil || name != "nightly" {
		t.Fatalf("after restart: name = %q, %v", name, err)
	}
}

func TestCreateDatabaseFromTemplate(t *testing.T) {
	ctx := testCtx(t)
	s := startTest(t, Options{})
	if err := s.CreateDatabase(ctx, "tmpl", ""); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, s.URL("tmpl"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE schedules (id int); INSERT INTO schedules VALUES (7)"); err != nil {
		t.Fatal(err)
	}
	// Closing right before copying is the common pattern in tests; the
	// backend may still be exiting when CREATE DATABASE runs.
	conn.Close(ctx)

	// A name that only works when quoted properly.
	const copyName = `Copy "one"; DROP`
	if err := s.CreateDatabase(ctx, copyName, "tmpl"); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateDatabase(ctx, "copy2", "tmpl"); err != nil {
		t.Fatal(err)
	}
	c := connect(t, ctx, s.URL(copyName))
	var id int
	if err := c.QueryRow(ctx, "SELECT id FROM schedules").Scan(&id); err != nil || id != 7 {
		t.Fatalf("copy: id = %d, %v", id, err)
	}
	var db string
	if err := c.QueryRow(ctx, "SELECT current_database()").Scan(&db); err != nil || db != copyName {
		t.Fatalf("current_database() = %q, %v", db, err)
	}

	if err := s.CreateDatabase(ctx, "copy2", "tmpl"); err == nil {
		t.Fatal("creating an existing database succeeded")
	}
	if err := s.CreateDatabase(ctx, "copy3", "no_such_template"); err == nil {
		t.Fatal("copying a missing template succeeded")
	}
}

func TestCloseRemovesTempDir(t *testing.T) {
	needsServer(t)
	s, err := Start(testCtx(t), Options{Fast: true})
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Dir(s.DataDir())
	if _, err := os.Stat(root); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(root); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("temp dir %s still there after Close: %v", root, err)
	}
	if !refuses(s.Port()) {
		t.Fatal("closed server still accepts TCP connections")
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := s.Start(testCtx(t)); err == nil {
		t.Fatal("Start after Close succeeded")
	}
}

func TestCallerOwnedDirIsKeptAndReused(t *testing.T) {
	needsServer(t)
	ctx := testCtx(t)
	dir := filepath.Join(t.TempDir(), "pgdata")
	s, err := Start(ctx, Options{Dir: dir, Fast: true, Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateDatabase(ctx, "kept", ""); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "PG_VERSION")); err != nil {
		t.Fatalf("Close removed a caller-owned data dir: %v", err)
	}

	s2 := startTest(t, Options{Dir: dir})
	conn := connect(t, ctx, s2.URL("kept"))
	if err := conn.Ping(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestNonEmptyNonClusterDirIsRefused(t *testing.T) {
	needsBinaries(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Start(testCtx(t), Options{Dir: dir, Fast: true})
	if err == nil || !strings.Contains(err.Error(), "neither empty nor a PostgreSQL data directory") {
		t.Fatalf("err = %v", err)
	}
}

func TestUnreachableDirOutsideTempIsExplained(t *testing.T) {
	needsBinaries(t)
	if os.Geteuid() != 0 {
		t.Skip("only root has to hand the data directory to another user")
	}
	base := t.TempDir()
	if err := os.Chmod(base, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", filepath.Join(base, "tmp"))
	_, err := Start(testCtx(t), Options{Dir: filepath.Join(base, "data"), Fast: true})
	if err == nil || !strings.Contains(err.Error(), "not reachable by the postgres user") {
		t.Fatalf("err = %v", err)
	}
	if fi, err := os.Stat(base); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("mode of %s changed outside the temp dir: %v, %v", base, fi.Mode(), err)
	}
}

// A server left running by a process that died before its watchdog could
// act must not block the next start on the same directory.
func TestStaleServerOnDirIsReplaced(t *testing.T) {
	needsServer(t)
	ctx := testCtx(t)
	dir := filepath.Join(t.TempDir(), "pgdata")
	old, err := Start(ctx, Options{Dir: dir, Fast: true})
	if err != nil {
		t.Fatal(err)
	}
	old.wd.disarm() // as if the owner and its watchdog were both killed
	oldPort := old.Port()

	s := startTest(t, Options{Dir: dir})
	if !refuses(oldPort) && oldPort != s.Port() {
		t.Fatal("stale server still listening")
	}
	conn := connect(t, ctx, s.URL("postgres"))
	if err := conn.Ping(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestRetriesWhenPickedPortIsTaken(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	taken := l.Addr().(*net.TCPAddr).Port

	orig := pickPort
	t.Cleanup(func() { pickPort = orig })
	calls := 0
	pickPort = func() (int, error) {
		calls++
		if calls == 1 {
			return taken, nil // lost the race: someone bound it after we checked
		}
		return orig()
	}
	s := startTest(t, Options{})
	if s.Port() == taken || calls < 2 {
		t.Fatalf("port %d after %d picks; the taken port was %d", s.Port(), calls, taken)
	}
}

func TestFixedPortTakenFailsWithLog(t *testing.T) {
	needsServer(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	taken := l.Addr().(*net.TCPAddr).Port
	_, err = Start(testCtx(t), Options{Port: taken, Fast: true})
	if err == nil {
		t.Fatal("started on a taken port")
	}
	if !errors.Is(err, errPortInUse) || !strings.Contains(err.Error(), "Address already in use") {
		t.Fatalf("error does not explain the failure: %v", err)
	}
}

func TestFindBinaries(t *testing.T) {
	needsBinaries(t)
	t.Setenv("JETJOB_PG_BIN", "")
	found, err := FindBinaries()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"initdb", "pg_ctl"} {
		if !isExecutable(filepath.Join(found, name)) {
			t.Errorf("%s not in %s", name, found)
		}
	}

	t.Setenv("JETJOB_PG_BIN", found)
	if got, err := FindBinaries(); err != nil || got != found {
		t.Errorf("JETJOB_PG_BIN=%s: got %q, %v", found, got, err)
	}

	empty := t.TempDir()
	t.Setenv("JETJOB_PG_BIN", empty)
	_, err = FindBinaries()
	if !errors.Is(err, ErrBinariesNotFound) {
		t.Fatalf("JETJOB_PG_BIN=%s (empty): err = %v", empty, err)
	}
	for _, want := range []string{empty, "apt-get install -y postgresql", "JETJOB_PG_BIN"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if _, err := Start(testCtx(t), Options{}); !errors.Is(err, ErrBinariesNotFound) {
		t.Errorf("Start with no binaries: %v", err)
	}
}

func TestVersionOrder(t *testing.T) {
	for _, c := range []struct {
		a, b string
		less bool
	}{
		{"9.6", "10", true},
		{"10", "9.6", false},
		{"15", "16", true},
		{"16", "15", false},
		{"15", "15", false},
		{"beta", "15", true},
	} {
		if got := versionLess(c.a, c.b); got != c.less {
			t.Errorf("versionLess(%q, %q) = %v", c.a, c.b, got)
		}
	}
}

const helperEnv = "LOCALPG_TEST_OWNER"

// TestHelperOwner is not a test: it is the child process of
// TestServerDiesWithOwner, started from this test binary.
func TestHelperOwner(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		t.Skip("helper process only")
	}
	s, err := Start(context.Background(), Options{Fast: true})
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	fmt.Printf("READY %d %s\n", s.Port(), filepath.Dir(s.DataDir()))
	select {} // until killed
}

// A process that dies without Close must not leave its server running or
// its temp dir behind (the watchdog's job).
func TestServerDiesWithOwner(t *testing.T) {
	needsServer(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperOwner$", "-test.v")
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var port int
	var root string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if _, err := fmt.Sscanf(sc.Text(), "READY %d %s", &port, &root); err == nil {
			break
		}
		t.Log("helper:", sc.Text())
	}
	if port == 0 {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatal("helper did not start a server")
	}
	if refuses(port) {
		t.Fatal("helper's server is not listening")
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	testwait.Eventually(t, 40*time.Second, "the orphaned server to stop", func() bool { return refuses(port) })
	testwait.Eventually(t, 40*time.Second, "the orphaned temp dir to go", func() bool {
		_, err := os.Stat(root)
		return errors.Is(err, os.ErrNotExist)
	})
}
