package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/jackc/pgx/v5/stdlib" // wait.ForSQL's driver "pgx"
	"github.com/moby/moby/api/types/container"
	mobynet "github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
	"github.com/testcontainers/testcontainers-go/network"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/scheduler/apiv1"
	jclient "github.com/jetjob/jetjob/scheduler/client"
)

// The cluster's fixed settings.
const (
	apiToken   = "e2e-token"
	group      = "e2e"
	pgUser     = "jetjob"
	pgPassword = "jetjob"
	pgDB       = "jetjob"
	shardCount = 16
	// leaseTTL is short so that a dead scheduler's shards move within the
	// test's seconds (renewals every TTL/4).
	leaseTTL = 3 * time.Second
	// misfireThreshold is the schedulers' default.
	misfireThreshold = 5 * time.Second
	// witnessMount is where the witness directory appears in workers.
	witnessMount = "/witness"
	// startupTimeout bounds the start of one container.
	startupTimeout = 90 * time.Second
)

// options shape a cluster; zero values mean one NATS node, two schedulers
// and two workers that write to the witness file.
type options struct {
	natsNodes  int
	schedulers int
	workers    int
	// noWitness starts workers without the witness directory: configured
	// by their environment only.
	noWitness bool
	// workerEnv is added to every worker's environment.
	workerEnv map[string]string
}

// node is one container of the cluster.
type node struct {
	name string // network alias, hostname, jetjob id
	ctr  *testcontainers.DockerContainer
	// ready is a log line the process writes once when it is ready; restarts
	// wait for one more occurrence of it (workers have no HTTP endpoint).
	ready string

	mu      sync.Mutex
	running bool
}

func (n *node) isRunning() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.running
}

func (n *node) setRunning(v bool) {
	n.mu.Lock()
	n.running = v
	n.mu.Unlock()
}

// cluster is one test's jetjob installation on its own Docker network.
type cluster struct {
	t       *testing.T
	opts    options
	nw      *testcontainers.DockerNetwork
	docker  *testcontainers.DockerClient
	pg      *node
	nats    []*node
	scheds  []*node
	workers []*node
	witness string // host directory mounted at witnessMount in workers

	mu     sync.Mutex
	db     *pgxpool.Pool
	killed map[string]bool // workers killed with SIGKILL, by name
}

// ctx is the context of the test's Docker and API calls: the test's own,
// cancelled a little before its deadline so that cleanups still run.
func (c *cluster) ctx() context.Context { return c.t.Context() }

// newCluster starts PostgreSQL, NATS, the schedulers and the workers, each
// waited for, and creates the job group.
func newCluster(t *testing.T, o options) *cluster {
	t.Helper()
	needsCluster(t)
	if o.natsNodes == 0 {
		o.natsNodes = 1
	}
	if o.schedulers == 0 {
		o.schedulers = 2
	}
	if o.workers == 0 {
		o.workers = 2
	}
	c := &cluster{t: t, opts: o, killed: map[string]bool{}}
	ctx := context.Background()
	begin := time.Now()

	docker, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		t.Fatalf("docker client: %v", err)
	}
	t.Cleanup(func() { docker.Close() })
	c.docker = docker

	nw, err := network.New(ctx, network.WithLabels(map[string]string{"org.jetjob.e2e.test": t.Name()}))
	if err != nil {
		t.Fatalf("docker network: %v", err)
	}
	c.nw = nw
	t.Cleanup(func() {
		if err := nw.Remove(context.Background()); err != nil {
			t.Errorf("removing network %s: %v", nw.Name, err)
		}
	})
	// Registered after the network's, so it runs first: pools and
	// connections close before the containers go.
	t.Cleanup(func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.db != nil {
			c.db.Close()
		}
	})

	if !o.noWitness {
		c.witness = t.TempDir()
		// Workers run as an unprivileged user (65532).
		if err := os.Chmod(c.witness, 0o777); err != nil {
			t.Fatal(err)
		}
	}

	// Tier 1: PostgreSQL and NATS. Tier 2: schedulers and workers.
	c.pg = &node{name: "postgres"}
	c.nats = make([]*node, o.natsNodes)
	for i := range c.nats {
		name := "nats"
		if o.natsNodes > 1 {
			name = fmt.Sprintf("nats-%d", i+1)
		}
		c.nats[i] = &node{name: name}
	}
	c.each(append([]*node{c.pg}, c.nats...), func(n *node) error {
		if n == c.pg {
			return c.startPostgres(n)
		}
		return c.startNATS(n)
	})
	if o.natsNodes > 1 {
		c.waitNATSClusterHealthy(60 * time.Second)
	}

	c.scheds = make([]*node, o.schedulers)
	for i := range c.scheds {
		c.scheds[i] = &node{name: fmt.Sprintf("sched-%d", i+1)}
	}
	c.workers = make([]*node, o.workers)
	for i := range c.workers {
		c.workers[i] = &node{name: fmt.Sprintf("worker-%d", i+1), ready: workerReadyLine}
	}
	c.each(append(append([]*node{}, c.scheds...), c.workers...), func(n *node) error {
		if strings.HasPrefix(n.name, "sched-") {
			return c.startScheduler(n)
		}
		return c.startWorker(n)
	})

	if _, err := c.api().CreateGroup(c.ctx(), apiv1.Group{Name: group, Title: "e2e suite"}); err != nil {
		t.Fatalf("create group: %v", err)
	}
	t.Logf("cluster up in %s: %d NATS, PostgreSQL, %d schedulers, %d workers",
		time.Since(begin).Round(100*time.Millisecond), o.natsNodes, o.schedulers, o.workers)
	return c
}

// workerReadyLine is what jetjob-worker logs once it fetches triggers.
const workerReadyLine = "worker started"

// run creates and starts a container for n on the cluster's network, with
// n.name as its alias and hostname, and registers its removal.
func (c *cluster) run(n *node, image string, opts ...testcontainers.ContainerCustomizer) error {
	opts = append([]testcontainers.ContainerCustomizer{
		network.WithNetwork([]string{n.name}, c.nw),
		testcontainers.WithConfigModifier(func(cfg *container.Config) { cfg.Hostname = n.name }),
		testcontainers.WithLabels(map[string]string{"org.jetjob.e2e.test": c.t.Name(), "org.jetjob.e2e.node": n.name}),
		// testcontainers' progress lines (start, stop, terminate) are left
		// out: printed during clean-up, they would bury a failure's
		// messages, and CI shows only the end of the output. Errors still
		// surface as errors.
		testcontainers.WithLogger(tclog.NewNoopLogger()),
	}, opts...)
	ctr, err := testcontainers.Run(context.Background(), image, opts...)
	if ctr != nil {
		n.ctr = ctr
		c.t.Cleanup(func() { c.remove(n) })
	}
	if err != nil {
		return fmt.Errorf("start %s (%s): %w", n.name, image, err)
	}
	n.setRunning(true)
	return nil
}

// remove removes n's container, after saving its log if the test failed
// or JETJOB_E2E_KEEP_LOGS is set (to study a passing run's timing).
func (c *cluster) remove(n *node) {
	if c.t.Failed() || os.Getenv("JETJOB_E2E_KEEP_LOGS") != "" {
		c.saveLog(n)
	}
	if err := n.ctr.Terminate(context.Background(), testcontainers.StopTimeout(0)); err != nil {
		c.t.Errorf("removing container %s: %v", n.name, err)
	}
}

// saveLog writes n's whole log to e2e/logs/<test>/<node>.log (kept out
// of git) and says where, instead of printing it: the failure's own
// messages then stay the last lines of the test's output.
func (c *cluster) saveLog(n *node) {
	rc, err := n.ctr.Logs(context.Background())
	if err != nil {
		c.t.Logf("log of %s: %v", n.name, err)
		return
	}
	defer rc.Close()
	dir, _ := filepath.Abs(filepath.Join("logs", c.t.Name()))
	path := filepath.Join(dir, n.name+".log")
	err = os.MkdirAll(dir, 0o755)
	if err == nil {
		var f *os.File
		if f, err = os.Create(path); err == nil {
			_, err = io.Copy(f, rc)
			err = errors.Join(err, f.Close())
		}
	}
	if err != nil {
		c.t.Logf("log of %s not saved: %v", n.name, err)
		return
	}
	c.t.Logf("log of %s saved to %s", n.name, path)
}

// logCount counts the lines of n's log that contain s.
func (c *cluster) logCount(n *node, s string) int {
	rc, err := n.ctr.Logs(context.Background())
	if err != nil {
		return -1
	}
	defer rc.Close()
	b, _ := io.ReadAll(rc)
	return strings.Count(string(b), s)
}

func (c *cluster) pgURL(host, port string) string {
	return fmt.Sprintf("postgres://%s:%s@%s/%s?sslmode=disable", pgUser, pgPassword, hostPort(host, port), pgDB)
}

func hostPort(host, port string) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + port
	}
	return host + ":" + port
}

func (c *cluster) startPostgres(n *node) error {
	return c.run(n, postgresImage,
		testcontainers.WithEnv(map[string]string{
			"POSTGRES_USER": pgUser, "POSTGRES_PASSWORD": pgPassword, "POSTGRES_DB": pgDB,
		}),
		// The official image's defaults would do too; fsync off keeps
		// the 2-core machine's disk out of the timings (a restart in the
		// suite is always a clean shutdown).
		testcontainers.WithCmd("postgres", "-c", "fsync=off", "-c", "max_connections=200"),
		testcontainers.WithExposedPorts("5432/tcp"),
		testcontainers.WithWaitStrategyAndDeadline(startupTimeout,
			wait.ForSQL("5432/tcp", "pgx", func(host string, port mobynet.Port) string {
				return c.pgURL(host, port.Port())
			}).WithStartupTimeout(startupTimeout).WithPollInterval(200*time.Millisecond)),
	)
}

// natsConf is the cluster configuration shipped in deploy/, used as is.
func natsConf() string {
	p, err := filepath.Abs(filepath.Join("..", "deploy", "nats", "nats-cluster.conf"))
	if err != nil {
		panic(err)
	}
	return p
}

func (c *cluster) startNATS(n *node) error {
	opts := []testcontainers.ContainerCustomizer{
		testcontainers.WithExposedPorts("4222/tcp", "8222/tcp"),
		// /healthz with js-enabled-only: a clustered node is "enabled"
		// before its peers are up; waitNATSClusterHealthy then waits
		// for the full health of every node.
		testcontainers.WithWaitStrategyAndDeadline(startupTimeout,
			wait.ForHTTP("/healthz?js-enabled-only=true").WithPort("8222/tcp").
				WithStartupTimeout(startupTimeout).WithPollInterval(200*time.Millisecond)),
	}
	if c.opts.natsNodes == 1 {
		opts = append(opts, testcontainers.WithCmd("--jetstream", "--store_dir", "/data",
			"--http_port", "8222", "--server_name", n.name))
	} else {
		opts = append(opts,
			testcontainers.WithCmd("--config", "/etc/nats/nats-cluster.conf"),
			testcontainers.WithEnv(map[string]string{"NATS_SERVER_NAME": n.name}),
			testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
				hc.Binds = append(hc.Binds, natsConf()+":/etc/nats/nats-cluster.conf:ro")
			}))
	}
	return c.run(n, natsImage, opts...)
}

// natsURLs is what schedulers and workers connect to: every node.
func (c *cluster) natsURLs() string {
	urls := make([]string, len(c.nats))
	for i, n := range c.nats {
		urls[i] = "nats://" + n.name + ":4222"
	}
	return strings.Join(urls, ",")
}

// replicas is the JetStream replication of the streams: 3 on a cluster.
// Schedulers and workers both provision the streams, so both are told.
func (c *cluster) replicas() string {
	if len(c.nats) >= 3 {
		return "3"
	}
	return "1"
}

func (c *cluster) startScheduler(n *node) error {
	return c.run(n, schedulerImage,
		testcontainers.WithCmd("serve"),
		testcontainers.WithEnv(map[string]string{
			"JETJOB_DATABASE_URL":    c.pgURL("postgres", "5432"),
			"JETJOB_NATS_URL":        c.natsURLs(),
			"JETJOB_API_TOKEN":       apiToken,
			"JETJOB_LISTEN":          ":8080",
			"JETJOB_MIGRATE":         "true",
			"JETJOB_SCHEDULER_ID":    n.name,
			"JETJOB_SHARD_COUNT":     fmt.Sprint(shardCount),
			"JETJOB_LEASE_TTL":       leaseTTL.String(),
			"JETJOB_STREAM_REPLICAS": c.replicas(),
			"JETJOB_LOG_FORMAT":      "json",
			// Signs every trigger; the workers accept its public key.
			"JETJOB_TRIGGER_SIGNING_KEY": triggerKey.env,
		}),
		testcontainers.WithExposedPorts("8080/tcp"),
		testcontainers.WithWaitStrategyAndDeadline(startupTimeout,
			wait.ForHTTP("/readyz").WithPort("8080/tcp").
				WithStartupTimeout(startupTimeout).WithPollInterval(200*time.Millisecond)),
	)
}

func (c *cluster) startWorker(n *node) error {
	env := map[string]string{
		"JETJOB_NATS_URL":    c.natsURLs(),
		"JETJOB_GROUP":       group,
		"JETJOB_HANDLERS":    "shell",
		"JETJOB_WORKER_ID":   n.name,
		"JETJOB_CONCURRENCY": "32",
		"JETJOB_LOG_FORMAT":  "json",
		// Streams the worker provisions must match the schedulers'.
		"JETJOB_STREAM_REPLICAS": c.replicas(),
		// Only the schedulers' signed triggers run.
		"JETJOB_TRIGGER_PUBLIC_KEYS": triggerKey.public,
	}
	for k, v := range c.opts.workerEnv {
		env[k] = v
	}
	opts := []testcontainers.ContainerCustomizer{
		testcontainers.WithEnv(env),
		testcontainers.WithWaitStrategyAndDeadline(startupTimeout,
			wait.ForLog(n.ready).WithStartupTimeout(startupTimeout).WithPollInterval(200*time.Millisecond)),
	}
	if c.witness != "" {
		opts = append(opts, testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			hc.Binds = append(hc.Binds, c.witness+":"+witnessMount)
		}))
	}
	return c.run(n, workerImage, opts...)
}

// stop stops n gracefully (SIGTERM, or the image's stop signal).
func (c *cluster) stop(n *node) {
	c.t.Helper()
	timeout := 30 * time.Second
	if err := n.ctr.Stop(context.Background(), &timeout); err != nil {
		c.t.Fatalf("stop %s: %v", n.name, err)
	}
	n.setRunning(false)
	if n == c.pg {
		c.resetDB()
	}
}

// kill kills n with SIGKILL, as a crash would.
func (c *cluster) kill(n *node) {
	c.t.Helper()
	if _, err := c.docker.ContainerKill(context.Background(), n.ctr.GetContainerID(), client.ContainerKillOptions{Signal: "KILL"}); err != nil {
		c.t.Fatalf("kill %s: %v", n.name, err)
	}
	c.waitExited(n)
	n.setRunning(false)
	c.mu.Lock()
	c.killed[n.name] = true
	c.mu.Unlock()
}

func (c *cluster) waitExited(n *node) {
	c.t.Helper()
	testwait.Eventually(c.t, 20*time.Second, n.name+" to exit", func() bool {
		st, err := n.ctr.State(context.Background())
		return err == nil && !st.Running
	})
}

// start starts a stopped n again and waits until it is ready: its wait
// strategy (HTTP or SQL), and for workers one more "ready" log line.
func (c *cluster) start(n *node) {
	c.t.Helper()
	before := 0
	if n.ready != "" {
		before = c.logCount(n, n.ready)
	}
	if err := n.ctr.Start(context.Background()); err != nil {
		c.t.Fatalf("start %s: %v", n.name, err)
	}
	if n.ready != "" {
		testwait.Eventually(c.t, startupTimeout, n.name+" to log "+n.ready, func() bool { return c.logCount(n, n.ready) > before })
	}
	n.setRunning(true)
}

// restart is a graceful stop followed by a start.
func (c *cluster) restart(n *node) {
	c.t.Helper()
	c.stop(n)
	c.start(n)
}

// endpoint is the host address of n's container port.
func (c *cluster) endpoint(n *node, port string) string {
	c.t.Helper()
	host, err := n.ctr.Host(context.Background())
	if err != nil {
		c.t.Fatal(err)
	}
	p, err := n.ctr.MappedPort(context.Background(), port)
	if err != nil {
		c.t.Fatalf("%s port %s: %v", n.name, port, err)
	}
	return hostPort(host, p.Port())
}

// api is a client of the first running scheduler (their host ports change
// when they restart).
func (c *cluster) api() *jclient.Client {
	c.t.Helper()
	for _, n := range c.scheds {
		if n.isRunning() {
			api, err := jclient.New("http://"+c.endpoint(n, "8080/tcp"), apiToken,
				jclient.WithHTTPClient(&http.Client{Timeout: 10 * time.Second}))
			if err != nil {
				c.t.Fatal(err)
			}
			return api
		}
	}
	c.t.Fatal("no scheduler is running")
	return nil
}

// ready reports whether scheduler n answers 200 on /readyz.
func (c *cluster) ready(n *node) bool { return c.answersOK(n, "8080/tcp", "/readyz") }

// answersOK reports whether node n answers 200 to a GET of path on its
// port (within two seconds).
func (c *cluster) answersOK(n *node, port, path string) bool {
	hc := &http.Client{Timeout: 2 * time.Second}
	resp, err := hc.Get("http://" + c.endpoint(n, port) + path)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// pool is the test's own connection pool to PostgreSQL, opened on demand
// (PostgreSQL's host port changes when it restarts).
func (c *cluster) pool() *pgxpool.Pool {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.db == nil {
		host, port, _ := strings.Cut(c.endpoint(c.pg, "5432/tcp"), ":")
		p, err := pgxpool.New(context.Background(), c.pgURL(host, port))
		if err != nil {
			c.t.Fatal(err)
		}
		c.db = p
	}
	return c.db
}

func (c *cluster) resetDB() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.db != nil {
		c.db.Close()
		c.db = nil
	}
}

// count runs a single-number query.
func (c *cluster) count(query string, args ...any) int {
	c.t.Helper()
	var n int
	if err := c.pool().QueryRow(c.ctx(), query, args...).Scan(&n); err != nil {
		c.t.Fatalf("%s: %v", query, err)
	}
	return n
}

// natsConn connects the test to a running NATS node. The caller closes it.
// jetStream is JetStream over a new connection to the running NATS nodes;
// call done when finished with it.
func (c *cluster) jetStream() (js jetstream.JetStream, done func()) {
	c.t.Helper()
	nc := c.natsConn()
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		c.t.Fatalf("JetStream: %v", err)
	}
	return js, nc.Close
}

func (c *cluster) natsConn() *nats.Conn {
	c.t.Helper()
	var urls []string
	for _, n := range c.nats {
		if n.isRunning() {
			urls = append(urls, "nats://"+c.endpoint(n, "4222/tcp"))
		}
	}
	nc, err := nats.Connect(strings.Join(urls, ","), nats.Name("e2e-test"), nats.Timeout(5*time.Second),
		nats.RetryOnFailedConnect(false), nats.NoReconnect())
	if err != nil {
		c.t.Fatalf("connect to NATS: %v", err)
	}
	return nc
}

// natsHealthy reports whether node n's /healthz answers 200 (JetStream
// included: meta leader known, streams and consumers current).
func (c *cluster) natsHealthy(n *node) bool { return c.answersOK(n, "8222/tcp", "/healthz") }

func (c *cluster) waitNATSClusterHealthy(within time.Duration) {
	c.t.Helper()
	testwait.Eventually(c.t, within, "every NATS node healthy", func() bool {
		for _, n := range c.nats {
			if !c.natsHealthy(n) {
				return false
			}
		}
		return true
	})
}

// at waits until the clock reaches t: the scenarios are about time passing
// (outages of a given length while jobs fire), not synchronisation.
func at(t time.Time) { testwait.SleepUntil(t) }

// halfSecond is the next x.500 instant at least d from now: faults are
// injected half-way between two fires.
func halfSecond(d time.Duration) time.Time {
	return time.Now().Add(d).Truncate(time.Second).Add(1500 * time.Millisecond)
}
