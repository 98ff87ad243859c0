package scheduler_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/jetjob/jetjob/internal/natsembed"
	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/scheduler"
	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
	"github.com/jetjob/jetjob/scheduler/internal/lease"
	"github.com/jetjob/jetjob/scheduler/internal/pgtest"
	"github.com/jetjob/jetjob/scheduler/internal/planner"
	"github.com/jetjob/jetjob/worker"
)

// cluster is several schedulers and workers sharing one real PostgreSQL
// database and one real (embedded) NATS server, each with its own pool and
// connection, as separate processes would have.
type cluster struct {
	t        *testing.T
	log      *zap.Logger
	dbURL    string
	natsDir  string
	natsPort int
	ns       *natsembed.Server

	mu     sync.Mutex
	nodes  []*node
	fires  *invocations
	api    *client.Client
	direct *pgxpool.Pool // the test's own view of the database
	// signals are every scheduler's test signals, shared: the test waits
	// on the cluster's key moments whichever scheduler had them.
	signals scheduler.TestSignals
	// prepare, if set, adjusts each scheduler before it runs.
	prepare func(*scheduler.Scheduler)
}

// node is one scheduler.
type node struct {
	s      *scheduler.Scheduler
	cancel context.CancelFunc
	done   chan error
	url    string
	// nc is its NATS connection: closing it cuts the scheduler off NATS,
	// as its process dying would (kill9).
	nc *nats.Conn
}

// invocations counts handler calls per (job, scheduled time).
type invocations struct {
	mu sync.Mutex
	n  map[fireKey]int
}

type fireKey struct {
	job int64
	at  int64 // Unix milliseconds
}

func key(job int64, at time.Time) fireKey { return fireKey{job, at.UnixMilli()} }

func (i *invocations) add(j *worker.Job) {
	i.mu.Lock()
	i.n[key(j.JobID, j.ScheduledAt)]++
	i.mu.Unlock()
}

func (i *invocations) snapshot() map[fireKey]int {
	i.mu.Lock()
	defer i.mu.Unlock()
	out := make(map[fireKey]int, len(i.n))
	for k, v := range i.n {
		out[k] = v
	}
	return out
}

// Test timings: leases of 2 s so that failover happens within the test's
// seconds, planning every 200 ms over a 2 s window.
var (
	testLease   = lease.Config{TTL: 2 * time.Second, Renew: 400 * time.Millisecond, Margin: 300 * time.Millisecond}
	testPlanner = planner.Config{Interval: 200 * time.Millisecond, Window: 2 * time.Second}
)

// newCluster is a cluster on a fresh database of the package's
// PostgreSQL server.
func newCluster(t *testing.T) *cluster {
	t.Helper()
	return newClusterOn(t, pgtest.URL(t))
}

// newClusterOn is a cluster on the database at dbURL (one on a server of
// the test's own, pgtest.OwnServer, for a test that stops PostgreSQL).
func newClusterOn(t *testing.T, dbURL string) *cluster {
	t.Helper()
	c := &cluster{t: t, log: zaptest.NewLogger(t, zaptest.Level(zap.InfoLevel)), dbURL: dbURL,
		natsDir: t.TempDir(), fires: &invocations{n: map[fireKey]int{}}}
	c.signals.Init(t)
	c.startNATS()
	t.Cleanup(func() { c.ns.Shutdown() })
	pool, err := pgxpool.New(context.Background(), c.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	c.direct = pool
	return c
}

func (c *cluster) startNATS() {
	ns, err := natsembed.Start(natsembed.Options{StoreDir: c.natsDir, Port: c.natsPort})
	if err != nil {
		c.t.Fatal(err)
	}
	c.ns, c.natsPort = ns, ns.Port()
}

func (c *cluster) connect(name string) *nats.Conn {
	nc, err := nats.Connect(fmt.Sprintf("nats://127.0.0.1:%d", c.natsPort), nats.Name(name),
		nats.RetryOnFailedConnect(true), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(nc.Close)
	return nc
}

// startScheduler starts one more scheduler and returns its index; opts
// adjust its config.
func (c *cluster) startScheduler(shards int, opts ...func(*scheduler.Config)) int {
	t := c.t
	pool, err := pgxpool.New(context.Background(), c.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	idx := len(c.nodes)
	c.mu.Unlock()
	lc := testLease
	lc.ID = fmt.Sprintf("sched-%d", idx)
	cfg := scheduler.Config{APIToken: testToken, ShardCount: shards, Lease: lc, Planner: testPlanner}
	for _, o := range opts {
		o(&cfg)
	}
	nc := c.connect(lc.ID)
	s, err := scheduler.New(cfg, scheduler.Deps{Pool: pool, NATS: nc, Listener: ln, Logger: c.log.Named(lc.ID), TriggerSigner: testTriggerSigner})
	if err != nil {
		t.Fatal(err)
	}
	s.SetTestSignals(&c.signals)
	if c.prepare != nil {
		c.prepare(s)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := &node{s: s, cancel: cancel, done: make(chan error, 1), url: "http://" + ln.Addr().String(), nc: nc}
	go func() { n.done <- s.Run(ctx); pool.Close() }()
	c.mu.Lock()
	c.nodes = append(c.nodes, n)
	c.mu.Unlock()
	t.Cleanup(func() { c.stop(n) })
	if c.api == nil {
		api, err := client.New(n.url, testToken)
		if err != nil {
			t.Fatal(err)
		}
		c.api = api
		testwait.Eventually(t, 20*time.Second, "API ready", func() bool {
			_, err := api.ListGroups(context.Background())
			return err == nil
		})
		if _, err := api.CreateGroup(context.Background(), apiv1.Group{Name: "g"}); err != nil && !isAPIError(err, http.StatusConflict) {
			t.Fatal(err)
		}
	}
	return idx
}

// stop stops a scheduler gracefully and waits for it.
func (c *cluster) stop(n *node) {
	n.cancel()
	c.wait(n)
}

// crash stops a scheduler as if its process died.
func (c *cluster) crash(i int) {
	n := c.nodes[i]
	n.s.Crash()
	c.wait(n)
}

func (c *cluster) wait(n *node) {
	select {
	case err := <-n.done:
		if err != nil {
			c.t.Errorf("scheduler stopped with %v", err)
		}
		n.done <- nil // later waits return at once
	case <-time.After(30 * time.Second):
		c.t.Error("scheduler did not stop within 30s")
	}
}

// startWorker starts a worker of group g whose handler "count" records
// every invocation.
func (c *cluster) startWorker(name string) {
	t := c.t
	w, err := worker.New(worker.Config{TriggerKeys: testTriggerKeys, NATS: c.connect(name), Group: "g", ID: name, Concurrency: 64,
		Logger: c.log.Named(name)})
	if err != nil {
		t.Fatal(err)
	}
	w.Handle("count", func(ctx context.Context, j *worker.Job) error { c.fires.add(j); return nil })
	runWorker(t, w)
}

// runWorker runs w until the test ends, then stops it and waits for it.
func runWorker(t *testing.T, w *worker.Worker) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("worker did not stop within 30s")
		}
	})
}

// createJobs creates n jobs of handler "count" and returns their ids.
func (c *cluster) createJobs(n int, spec apiv1.JobSpec) []int64 {
	ids := make([]int64, 0, n)
	for i := range n {
		s := spec
		s.Group, s.Name, s.Handler = "g", fmt.Sprintf("%s-%d", spec.Name, i), "count"
		j := createJob(c.t, c.api, s)
		ids = append(ids, j.ID)
	}
	return ids
}

// waitLeases waits until cond, a condition on the shards the schedulers
// hold, holds: it checks cond again at each change of any scheduler's
// leases (their test signal), instead of polling.
func (c *cluster) waitLeases(timeout time.Duration, what string, cond func() bool) {
	c.t.Helper()
	c.signals.Lease.Changed.WaitUntil(c.t, timeout, what, cond)
}

// owned returns how many shards each running scheduler holds.
func (c *cluster) owned(idx ...int) []int {
	out := make([]int, 0, len(idx))
	for _, i := range idx {
		out = append(out, c.nodes[i].s.OwnedShards())
	}
	return out
}

// count runs a single-number query against the test's pool.
func (c *cluster) count(query string, args ...any) int {
	c.t.Helper()
	var n int
	if err := c.direct.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		c.t.Fatal(err)
	}
	return n
}

// crashWorker is worker a of group g in a process the test kills: a
// handler calls hang to stay in its run as a run in flight stays when the
// process dies, and crash kills the process: its connection goes away with
// no ack, no nak, no final event.
type crashWorker struct {
	*worker.Worker
	nc   *nats.Conn
	hung chan struct{}
	done chan error
}

// newCrashWorker builds worker a with cfg's settings (its identity, NATS
// and keys filled in); register its handlers, then start it.
func (c *cluster) newCrashWorker(cfg worker.Config) *crashWorker {
	c.t.Helper()
	w := &crashWorker{nc: c.connect("worker-a"), hung: make(chan struct{}), done: make(chan error, 1)}
	c.t.Cleanup(func() { close(w.hung) })
	cfg.TriggerKeys, cfg.NATS, cfg.Group, cfg.ID, cfg.Logger = testTriggerKeys, w.nc, "g", "a", c.log.Named("a")
	var err error
	if w.Worker, err = worker.New(cfg); err != nil {
		c.t.Fatal(err)
	}
	return w
}

func (w *crashWorker) start() { go func() { w.done <- w.Run(context.Background()) }() }

// hang blocks a handler until the test ends.
func (w *crashWorker) hang() { <-w.hung }

func (w *crashWorker) crash() {
	w.nc.Close()
	<-w.done
}
