package main

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats-server/v2/server"

	"github.com/jetjob/jetjob/internal/backoff"
	"github.com/jetjob/jetjob/internal/localpg"
	"github.com/jetjob/jetjob/scheduler/internal/store"
	"github.com/jetjob/jetjob/shared/trigsign"
)

// env is one scenario's system: a throwaway PostgreSQL (normal durability
// settings), an embedded NATS server with JetStream file storage, and the
// scheduler and worker processes, each its own process.
type env struct {
	o      *options
	name   string // <scenario>-<timestamp>
	tmp    string
	logDir string
	pg     *localpg.Server
	pool   *pgxpool.Pool
	dbURL  string
	// natsNodes are the NATS servers (one, or --nats-cluster nodes);
	// natsURL lists their client URLs, comma separated.
	natsNodes []*natsNode
	natsURL   string
	natsVer   string
	scheds    []*schedProc
	workers   []*workerProc
	notes     []string
	// profilePaths are the CPU profiles asked for (--profile).
	profilePaths []string
	// cold: insert leaves the tables as COPY made them (no VACUUM
	// ANALYZE), for coldstart.
	cold bool
	// gen counts restarts (restartAll): the logs, profiles and worker
	// counts of a restarted process get a "-restartN" suffix so that the
	// first incarnation's are kept.
	gen int
	// past holds the invocation counts of workers stopped by a restart.
	past []Seen
	// triggerKeyFile and triggerPublicKey are the schedulers' trigger
	// signing key (a file in tmp) and its public key, for the workers:
	// the benchmark signs and verifies as a deployment does.
	triggerKeyFile, triggerPublicKey string
	// river is the River baseline's process (--scenario river).
	river *child
}

// file is name (a role, or a role and an extension) in dir, with the
// restart suffix after the first incarnation.
func (e *env) file(dir, role, ext string) string {
	if e.gen > 0 {
		role = fmt.Sprintf("%s-restart%d", role, e.gen)
	}
	return filepath.Join(dir, role+ext)
}

type schedProc struct {
	c       *child
	metrics string
	profile string
}

type workerProc struct {
	c       *child
	out     string
	profile string
}

func newEnv(o *options, name string) (*env, error) {
	tmp, err := os.MkdirTemp("", "jetjob-bench-")
	if err != nil {
		return nil, err
	}
	logDir := filepath.Join(o.out, name+"-logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, err
	}
	return &env{o: o, name: name, tmp: tmp, logDir: logDir}, nil
}

func (e *env) note(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	e.notes = append(e.notes, msg)
	logf("note: %s", msg)
}

// startPostgres starts the throwaway server (localpg defaults: fsync,
// synchronous_commit and full_page_writes on), creates and migrates the
// database and fixes the shard count. With --profile it also loads
// pg_stat_statements (a restart) and pg_walinspect.
func (e *env) startPostgres(ctx context.Context) error {
	t := time.Now()
	pg, err := localpg.Start(ctx, localpg.Options{})
	if err != nil {
		return err
	}
	e.pg = pg
	if e.o.profile {
		if err := e.enableStatStatements(ctx); err != nil {
			return err
		}
	}
	if err := pg.CreateDatabase(ctx, "jetjob", ""); err != nil {
		return err
	}
	e.dbURL = pg.URL("jetjob")
	if err := e.openPool(ctx); err != nil {
		return err
	}
	if _, err := store.Migrate(ctx, e.pool); err != nil {
		return err
	}
	st, err := store.Open(ctx, e.pool, e.o.shards)
	if err != nil {
		return err
	}
	if st.ShardCount() != e.o.shards {
		return fmt.Errorf("cluster has %d shards, want %d", st.ShardCount(), e.o.shards)
	}
	if e.o.profile {
		for _, ext := range []string{"pg_stat_statements", "pg_walinspect"} {
			if _, err := e.pool.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS `+ext); err != nil {
				return err
			}
		}
	}
	logf("postgres ready on port %d (%s)", pg.Port(), time.Since(t).Round(time.Millisecond))
	return nil
}

// openPool opens the orchestrator's own pool on the benchmark database.
func (e *env) openPool(ctx context.Context) error {
	cfg, err := pgxpool.ParseConfig(e.dbURL)
	if err != nil {
		return fmt.Errorf("database URL: %w", err)
	}
	cfg.MaxConns = 8
	if e.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		return fmt.Errorf("open pool: %w", err)
	}
	return nil
}

func (e *env) enableStatStatements(ctx context.Context) error {
	c, err := pgxpool.New(ctx, e.pg.URL("postgres"))
	if err != nil {
		return err
	}
	_, err = c.Exec(ctx, `ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'`)
	c.Close()
	if err != nil {
		return err
	}
	if err := e.pg.Stop(ctx); err != nil {
		return err
	}
	if err := e.pg.Start(ctx); err != nil {
		return err
	}
	// Planning is CPU too, and a statement planned anew at every call
	// (custom plans over the run partitions) can spend more there than in
	// execution: count it. The setting exists once the library is loaded.
	if c, err = pgxpool.New(ctx, e.pg.URL("postgres")); err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Exec(ctx, `ALTER SYSTEM SET pg_stat_statements.track_planning = on`)
	if err == nil {
		// The window's WAL is read by type after it (pg_walinspect, the
		// index entries per run): keep it past the checkpoints meanwhile.
		_, err = c.Exec(ctx, `ALTER SYSTEM SET wal_keep_size = '8GB'`)
	}
	if err == nil {
		_, err = c.Exec(ctx, `SELECT pg_reload_conf()`)
	}
	return err
}

// triggerKeys makes the schedulers' trigger signing key, once.
func (e *env) triggerKeys() error {
	if e.triggerKeyFile != "" {
		return nil
	}
	priv, err := trigsign.GenerateKey()
	if err != nil {
		return err
	}
	data, err := trigsign.EncodePrivateKeyPEM(priv)
	if err != nil {
		return err
	}
	path := e.file(e.tmp, "trigger", ".key")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("trigger signing key: %w", err)
	}
	e.triggerKeyFile, e.triggerPublicKey = path, trigsign.EncodePublicKey(priv.Public().(ed25519.PublicKey))
	return nil
}

func (e *env) startSchedulers(n int) error {
	if err := e.triggerKeys(); err != nil {
		return err
	}
	for i := range n {
		id := fmt.Sprintf("bench-s%d", i)
		args := []string{"--database-url", e.dbURL, "--nats-url", e.natsURL, "--id", id, "--log-level", e.o.logLevel,
			"--trigger-batch", strconv.Itoa(e.o.triggerBatch), "--planning-window", e.o.planningWindow.String(),
			"--trigger-signing-key", e.triggerKeyFile, "--stream-replicas", strconv.Itoa(e.o.replicas)}
		sp := &schedProc{}
		if e.o.profile {
			sp.profile = e.file(e.o.out, fmt.Sprintf("%s-scheduler-%d", e.name, i), ".pprof")
			e.profilePaths = append(e.profilePaths, sp.profile)
			args = append(args, "--cpuprofile", sp.profile, "--cpuprofile-signal")
		}
		role := fmt.Sprintf("scheduler-%d", i)
		c, err := startChild(role, e.file(e.logDir, role, ".log"), 60*time.Second, "scheduler", args...)
		if err != nil {
			return fmt.Errorf("start %s: %w", role, err)
		}
		sp.c = c
		e.scheds = append(e.scheds, sp) // stopped with the others, even on a bad READY line
		f := strings.Fields(c.info)     // the API's URL, the metrics listener's
		if len(f) != 2 {
			return fmt.Errorf("start %s: unexpected READY line %q", role, c.info)
		}
		sp.metrics = f[1] + "/metrics"
	}
	return nil
}

func (e *env) startWorkers(n, concurrency int) error {
	if err := e.triggerKeys(); err != nil {
		return err
	}
	for i := range n {
		role := fmt.Sprintf("worker-%d", i)
		sp := &workerProc{out: e.file(e.tmp, role, ".gob")}
		args := []string{"--nats-url", e.natsURL, "--id", fmt.Sprintf("bench-w%d", i),
			"--concurrency", strconv.Itoa(concurrency), "--out", sp.out, "--log-level", e.o.logLevel,
			"--trigger-public-keys", e.triggerPublicKey, "--stream-replicas", strconv.Itoa(e.o.replicas)}
		if e.o.profile {
			sp.profile = e.file(e.o.out, fmt.Sprintf("%s-worker-%d", e.name, i), ".pprof")
			e.profilePaths = append(e.profilePaths, sp.profile)
			args = append(args, "--cpuprofile", sp.profile, "--cpuprofile-signal")
		}
		c, err := startChild(role, e.file(e.logDir, role, ".log"), 60*time.Second, "worker", args...)
		if err != nil {
			return fmt.Errorf("start %s: %w", role, err)
		}
		sp.c = c
		e.workers = append(e.workers, sp)
	}
	return nil
}

// waitShards waits until the schedulers hold every shard between them, in
// fair shares (differing by at most one).
func (e *env) waitShards(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		total, lo, hi := 0, 1<<30, 0
		ok := true
		for _, s := range e.scheds {
			m, err := scrape(ctx, s.metrics)
			if err != nil {
				ok = false
				break
			}
			n := int(m["jetjob_owned_shards"])
			total += n
			lo, hi = min(lo, n), max(hi, n)
		}
		if ok && total == e.o.shards && hi-lo <= 1 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("schedulers hold %d of %d shards (share %d..%d) after %s", total, e.o.shards, lo, hi, timeout)
		}
		if err := backoff.Sleep(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
}

// signalProfiles starts (SIGUSR1) or stops (SIGUSR2) the children's CPU
// profiles.
func (e *env) signalProfiles(sig syscall.Signal) {
	if !e.o.profile {
		return
	}
	for _, c := range e.natsRunning() {
		_ = c.cmd.Process.Signal(sig)
	}
	for _, s := range e.scheds {
		_ = s.c.cmd.Process.Signal(sig)
	}
	for _, w := range e.workers {
		_ = w.c.cmd.Process.Signal(sig)
	}
}

// scrape reads a Prometheus text page into name → summed value (labels
// are summed over).
func scrape(ctx context.Context, url string) (map[string]float64, error) {
	return scrapeWith(ctx, url, func(a, b float64) float64 { return a + b })
}

// scrapeMax is scrape with the maximum over labels instead of the sum.
func scrapeMax(ctx context.Context, url string) (map[string]float64, error) {
	return scrapeWith(ctx, url, func(a, b float64) float64 { return max(a, b) })
}

func scrapeWith(ctx context.Context, url string, merge func(a, b float64) float64) (map[string]float64, error) {
	b, err := fetchMetrics(ctx, url)
	if err != nil {
		return nil, err
	}
	m := map[string]float64{}
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		name := line[:i]
		if j := strings.IndexByte(name, '{'); j >= 0 {
			name = name[:j]
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		if old, ok := m[name]; ok {
			v = merge(old, v)
		}
		m[name] = v
	}
	return m, nil
}

// counters sums a metric over the schedulers.
func (e *env) counters(ctx context.Context, names ...string) map[string]float64 {
	out := map[string]float64{}
	for _, s := range e.scheds {
		m, err := scrape(ctx, s.metrics)
		if err != nil {
			e.note("scrape %s: %v", s.c.role, err)
			continue
		}
		for _, n := range names {
			out[n] += m[n]
		}
	}
	return out
}

// finalStatuses sums the schedulers' jetjob_run_status_changes_total over
// the final statuses a worker reports.
func (e *env) finalStatuses(ctx context.Context) int64 {
	var n float64
	for _, s := range e.scheds {
		m, err := scrapeLabeled(ctx, s.metrics, "jetjob_run_status_changes_total")
		if err != nil {
			continue
		}
		for labels, v := range m {
			for _, st := range []string{"SUCCEEDED", "FAILED", "TIMED_OUT", "CANCELLED", "DISCARDED", "EXPIRED", "LOST"} {
				if strings.Contains(labels, `"`+st+`"`) {
					n += v
				}
			}
		}
	}
	return int64(n)
}

// scrapeLabeled returns one metric's samples by label set.
func scrapeLabeled(ctx context.Context, url, name string) (map[string]float64, error) {
	b, err := fetchMetrics(ctx, url)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, name+"{") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[len(name):i]] = v
		}
	}
	return out, nil
}

// roles lists every process to measure, by role.
type roleRef struct {
	role string
	pid  int
	tree bool
}

func (e *env) roles() []roleRef {
	rs := []roleRef{{role: "orchestrator", pid: os.Getpid()}}
	for _, c := range e.natsRunning() {
		rs = append(rs, roleRef{role: c.role, pid: c.pid()})
	}
	if e.pg != nil {
		if pid, err := postmasterPID(e.pg.DataDir()); err == nil {
			rs = append(rs, roleRef{role: "postgres", pid: pid, tree: true})
		}
	}
	for _, s := range e.scheds {
		rs = append(rs, roleRef{role: s.c.role, pid: s.c.pid()})
	}
	for _, w := range e.workers {
		rs = append(rs, roleRef{role: w.c.role, pid: w.c.pid()})
	}
	if e.river != nil {
		rs = append(rs, roleRef{role: e.river.role, pid: e.river.pid()})
	}
	return rs
}

// usage is a snapshot of every role, in roles() order, and of the host.
type usage struct {
	order       []string
	m           map[string]roleSample
	busy, total float64
	// cost is the count snapshot taken with it at a window's ends
	// (windowStart, windowEnd), nil elsewhere.
	cost *costSnap
}

func (e *env) sample() usage {
	u := usage{m: map[string]roleSample{}}
	u.busy, u.total = hostTicks()
	for _, r := range e.roles() {
		u.order = append(u.order, r.role)
		u.m[r.role] = sampleRole(r.pid, r.tree)
	}
	return u
}

// procStats turns the window's start and end snapshots into ProcStats.
func procStats(a, b usage, secs float64) []ProcStat {
	var out []ProcStat
	for _, role := range b.order {
		s0, s1 := a.m[role], b.m[role]
		out = append(out, ProcStat{
			Role: role, PIDs: s1.pids, CPUWindow: round3(s1.cpu - s0.cpu),
			CPUPctWindow: round1(100 * (s1.cpu - s0.cpu) / secs), CPUTotal: round3(s1.cpu),
			PeakRSSMB: round1(float64(s1.hwmKB) / 1024),
		})
	}
	return out
}

// hostCPU compares the machine's busy time over the window with the
// benchmark's own processes.
func hostCPU(a, b usage) *HostCPU {
	h := &HostCPU{BusyCPU: round3(b.busy - a.busy), LoadAvg: loadAvg()}
	if d := b.total - a.total; d > 0 {
		h.BusyPct = round1(100 * (b.busy - a.busy) / d)
	}
	for _, role := range b.order {
		h.BenchmarkCPU += b.m[role].cpu - a.m[role].cpu
	}
	h.BenchmarkCPU = round3(h.BenchmarkCPU)
	h.OtherCPU = round3(h.BusyCPU - h.BenchmarkCPU)
	return h
}

// stopWorkers stops the workers and reads their invocation counts, with
// those of the workers a restart stopped before them.
func (e *env) stopWorkers() (*union, error) {
	u := &union{sets: append([]Seen(nil), e.past...)}
	var errs []error
	for _, w := range e.workers {
		if err := w.c.stop(30 * time.Second); err != nil {
			errs = append(errs, err)
		}
		s, err := readSeen(w.out)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", w.c.role, err))
			continue
		}
		u.sets = append(u.sets, s)
	}
	e.workers = nil
	return u, errors.Join(errs...)
}

func (e *env) stopSchedulers() error {
	var errs []error
	for _, s := range e.scheds {
		if err := s.c.stop(20 * time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	e.scheds = nil
	return errors.Join(errs...)
}

// close stops whatever still runs and removes the temporary directory.
func (e *env) close() {
	if e.river != nil {
		_ = e.river.stop(30 * time.Second)
		e.river = nil
	}
	if e.workers != nil {
		_, _ = e.stopWorkers()
	}
	if e.scheds != nil {
		_ = e.stopSchedulers()
	}
	if err := e.stopNATS(); err != nil {
		logf("nats: %v", err)
	}
	if e.pool != nil {
		e.pool.Close()
		e.pool = nil
	}
	if e.pg != nil {
		if err := e.pg.Close(); err != nil {
			logf("postgres: %v", err)
		}
		e.pg = nil
	}
	os.RemoveAll(e.tmp)
}

// machine describes this host and the servers.
func (e *env) machine(ctx context.Context) Machine {
	m := Machine{NProc: numCPU(), CPUModel: cpuModel(), MemTotalMB: memTotalMB(), Kernel: kernel(),
		GoVersion: goVersion(), NATSServerVersion: e.natsVer, CalibrationMs: calibrate()}
	if m.NATSServerVersion == "" {
		m.NATSServerVersion = server.VERSION
	}
	if e.pool != nil {
		_ = e.pool.QueryRow(ctx, `SELECT current_setting('server_version')`).Scan(&m.PostgresVersion)
	}
	return m
}

// calibrate times one core hashing 64 MiB with SHA-256, the best of
// three, in milliseconds (see Machine.CalibrationMs).
func calibrate() float64 {
	buf := make([]byte, 1<<20)
	best := time.Duration(math.MaxInt64)
	for range 3 {
		start := time.Now()
		for range 64 {
			sum := sha256.Sum256(buf)
			buf[0] = sum[0]
		}
		best = min(best, time.Since(start))
	}
	return round1(float64(best) / float64(time.Millisecond))
}

func sleepUntil(ctx context.Context, t time.Time) error { return backoff.Sleep(ctx, time.Until(t)) }

// fetchMetrics GETs a /metrics page (5 s bound) and returns its body.
func fetchMetrics(ctx context.Context, url string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	return b, nil
}

// restartAll is an orderly restart of the whole system: SIGTERM to the
// workers (they finish their runs in flight and write their counts), the
// schedulers and NATS, each waited for, then, with pg, a fast shutdown of
// PostgreSQL; then everything starts again in the opposite order, NATS on
// its port and its JetStream store directory (the triggers and events in
// it are replayed), PostgreSQL on its data directory. It returns when the
// first SIGTERM went out (stopped), when everything was down (down) and
// when the schedulers hold every shard again (ready).
func (e *env) restartAll(ctx context.Context, pg bool) (stopped, down, ready time.Time, err error) {
	stopped = time.Now()
	u, err := e.stopWorkers()
	if err != nil {
		return stopped, down, ready, fmt.Errorf("restart: stopping workers: %w", err)
	}
	e.past = u.sets
	if err := e.stopSchedulers(); err != nil {
		return stopped, down, ready, fmt.Errorf("restart: stopping schedulers: %w", err)
	}
	if err := e.stopNATS(); err != nil {
		return stopped, down, ready, fmt.Errorf("restart: stopping nats: %w", err)
	}
	if pg {
		e.pool.Close()
		e.pool = nil
		if err := e.pg.Stop(ctx); err != nil {
			return stopped, down, ready, fmt.Errorf("restart: stopping postgres: %w", err)
		}
	}
	down = time.Now()
	logf("restart: everything stopped in %s", down.Sub(stopped).Round(time.Millisecond))
	e.gen++
	if pg {
		if err := e.pg.Start(ctx); err != nil {
			return stopped, down, ready, fmt.Errorf("restart: starting postgres: %w", err)
		}
		if err := e.openPool(ctx); err != nil {
			return stopped, down, ready, fmt.Errorf("restart: %w", err)
		}
	}
	if err := e.startNATS(ctx); err != nil {
		return stopped, down, ready, fmt.Errorf("restart: %w", err)
	}
	if err := e.startWorkers(e.o.workers, e.o.concurrency()); err != nil {
		return stopped, down, ready, fmt.Errorf("restart: %w", err)
	}
	if err := e.startSchedulers(e.o.schedulers); err != nil {
		return stopped, down, ready, fmt.Errorf("restart: %w", err)
	}
	if err := e.waitShards(ctx, 90*time.Second); err != nil {
		return stopped, down, ready, fmt.Errorf("restart: %w", err)
	}
	ready = time.Now()
	logf("restart: everything up again, the schedulers hold all %d shards, %s after the first SIGTERM",
		e.o.shards, ready.Sub(stopped).Round(time.Millisecond))
	return stopped, down, ready, nil
}

// settle ends a measurement: it waits up to drain for the runs with ids
// first..last fired in [from, to] to reach a final status (noting how many
// did not, as what), samples every process for its peak RSS, then stops
// the workers (returning their invocation counts) and the schedulers.
func (e *env) settle(ctx context.Context, from, to time.Time, first, last int64, drain time.Duration, what string) (peak usage, u *union, err error) {
	open, err := waitFinished(ctx, e.pool, from, to, first, last, drain)
	if err != nil {
		return usage{}, nil, err
	}
	if open > 0 {
		e.note("%d runs of %s had no final status %s after it", open, what, drain)
	}
	peak = e.sample()
	u, err = e.stopWorkers()
	if err != nil {
		e.note("stopping workers: %v", err)
	}
	if err := e.stopSchedulers(); err != nil {
		e.note("stopping schedulers: %v", err)
	}
	return peak, u, nil
}
