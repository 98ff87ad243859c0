// Command jetjob-bench is jetjob's reproducible benchmark harness (issue
// #7), run by `make bench`. It starts its own throwaway PostgreSQL (normal
// durability settings) and an embedded NATS server with JetStream file
// storage, bulk-inserts jobs with COPY, runs schedulers and workers (no-op
// 50 ms or shell handlers) as separate processes, and measures over a fixed window
// after a warm-up: fires planned, triggers published and runs finished per
// second; fire, start and end-to-end lag; lost fires and duplicate runs
// (counted by the workers' handlers); CPU seconds and peak RSS per process.
//
// Scenarios (--scenario, comma separated; default "steady,dueread"):
//
//	steady   N jobs "@every 1s" (--jobs, default 10000): N fires/s, all due
//	         at the same instant each second (@every and cron fire on whole
//	         seconds); with --phases spread, N "fix_rate 1s" jobs, job i
//	         firing i mod 1000 ms into each second (fix_rate keeps the
//	         millisecond it started on, so such jobs created at different
//	         times spread out)
//	sparse   1,000,000 jobs "@every 1000s", first fires staggered: ~1,000 fires/s
//	burst    50,000 "once" jobs all due in the same second
//	max      "@every 1s" jobs added in steps (--jobs to start, --step more
//	         each --step-duration) until start lag p99 exceeds 1 s
//	overload steady's jobs offered beyond capacity (--jobs, default 16000):
//	         find the capacity with max, run overload at twice it with
//	         --capacity set to it; reports offered fires/s, succeeded
//	         runs/s (and as a % of --capacity), the fires the misfire
//	         policy (--misfire-policy, default fire_once as in the API)
//	         shed, grouped by their messages, other statuses, fires
//	         without a row, duplicates, and the lags of the runs that ran
//	coldstart steady (--jobs, default 10000) on a fresh cluster and
//	         database, nothing vacuumed or analysed, job_runs empty:
//	         window A; then every process (workers, schedulers, NATS,
//	         PostgreSQL unless --restart-postgres=false) is stopped with
//	         SIGTERM and started again, JetStream's store kept (--warmup 0s
//	         measures window A from the very first fire); window B
//	         --recovery after everything is up; both windows' figures, the
//	         recovery time (until start lag p99 stays within
//	         --recovery-lag) and the whole run's losses and duplicates
//	dueread  the planner's due-jobs read at 10 k, 100 k and 1 M jobs
//	publish  the broker alone: bursts of 1,000, 5,000 and 15,000 triggers
//	         published at one instant (the floor of fire lag when that
//	         many fires share an instant)
//	river    the baseline: steady's load (--jobs periodic jobs "@every 1s",
//	         no-op handler, --worker-concurrency slots) run by River on the
//	         same PostgreSQL, for a comparison in one sitting (river.go;
//	         the binary from `make bench-river`, --river-bin)
//	workflow --jobs workflows (default 200) "@every 1s", each a run of ten
//	         no-op nodes (start → a1..a4 → mid → b1..b3 → end, every node
//	         its own job): node runs/s, CPU per node run, node wait
//	         (ready → started), workflow run duration, and an audit that
//	         every run ended SUCCEEDED with no node run twice
//	         (workflow.go); compare CPU per run with steady at the same
//	         runs/s (--jobs 2000)
//
// Examples:
//
//	make bench                                   # steady 10000 for 60 s, then dueread
//	make bench ARGS='--scenario steady --jobs 15000'
//	make bench ARGS='--scenario sparse'          # --duration 210s lets the planner's
//	                                             # schedule cache reach its 200k bound
//	make bench ARGS='--scenario burst'
//	make bench ARGS='--scenario max'
//	make bench ARGS='--scenario overload --jobs 16000 --capacity 8000'
//	                                             # twice the capacity max found
//	make bench ARGS='--scenario coldstart --jobs 7000'
//	make bench ARGS='--scenario steady --jobs 7000 --schedulers 2 --workers 2'
//	                                             # scale-out: compare "CPU per run"
//	                                             # with 1 + 1 at the same rate
//	make bench ARGS='--scenario steady --jobs 2000 --duration 30s --nats-cluster 3 --profile'
//	                                             # three NATS nodes, streams R3: the
//	                                             # messages, bytes and WAL per run
//	make bench ARGS='--scenario publish'
//	make bench ARGS='--scenario steady --handler sleep50 --profile'
//	make bench ARGS='--scenario burst --jobs 200 --handler shell --worker-concurrency 4'
//	                                             # a process per run: the backlog's peak
//	make bench ARGS='--scenario steady --group-cap 1000 --group-rate 100000/10ms'
//	                                             # flow controls set, holding nothing
//	                                             # back: compare "CPU per run" and start
//	                                             # lag with the same run without them
//
// Flow controls (issue #33, docs/flow-control.md; flow.go), for steady,
// sparse, burst, max, overload and coldstart: --group-cap (the group's
// max_running), --group-rate and --job-rate (COUNT/PERIOD), --key-cap
// (every job gets a concurrency key, one per job) and --priority-spread
// (priorities 0 to 9). They are written on the rows before the schedulers
// start; the result records them (config.flow, the table's "flow
// controls" line) and notes a control that may hold runs back at the
// offered rate. How to price them: docs/performance.md, "Pricing the flow
// controls".
//
// Results: a table on stdout and bench-results/<scenario>-<YYYYMMDD-HHMMSS>.json
// (fields documented in result.go); the children's logs go to
// bench-results/<scenario>-<YYYYMMDD-HHMMSS>-logs/. --profile adds CPU
// profiles of the schedulers, workers and the NATS server over the measured
// window (bench-results/*.pprof: go tool pprof -top bin/jetjob-bench FILE),
// a goroutine dump of each at the window's end (*-goroutines.txt: where runs
// wait) and PostgreSQL's top statements (pg_stat_statements, loaded with a
// restart of the throwaway server).
//
// Every window also reports counts per run that do not depend on how busy
// the host is (per_run): the NATS servers' messages and bytes in and out
// (/varz, summed over the nodes, the routes' share apart), PostgreSQL's WAL
// bytes, transactions and rows, and with --profile its statements and the
// index entries its WAL records (pg_walinspect).
//
// Everything runs on one host: other workloads there take CPU from the
// system under test. host_cpu in the result says how much (other_cpu_s);
// compare runs only when it is small.
//
// The hidden subcommands nats, scheduler and worker are this binary
// re-executed by itself (see child.go).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/jetjob/jetjob/internal/policy"
)

type options struct {
	scenarios         []string
	jobs              int
	duration          time.Duration
	warmup            time.Duration
	schedulers        int
	workers           int
	workerConcurrency int
	handler           string
	shellCommand      string
	blockStrategy     string
	route             string
	phases            string
	shards            int
	out               string
	profile           bool
	drain             time.Duration
	burstTimeout      time.Duration
	step              int
	stepDuration      time.Duration
	stepWarmup        time.Duration
	maxSteps          int
	dueSizes          []int
	dueReads          int
	publishSizes      []int
	publishBursts     int
	logLevel          string
	misfirePolicy     string
	capacity          float64
	triggerBatch      int
	planningWindow    time.Duration
	recovery          time.Duration
	recoveryLag       time.Duration
	restartPostgres   bool
	natsCluster       int
	replicas          int
	riverBin          string
	// flow is the flow controls set on the group and jobs (flow.go).
	flow flowFlags
}

// concurrency is the workers' concurrency: the flag, or enough slots for
// the handler at the offered rate.
func (o *options) concurrency() int {
	if o.workerConcurrency > 0 {
		return o.workerConcurrency
	}
	switch o.handler {
	case "sleep50":
		return 1024
	case "shell":
		return 8 // each run forks: slots beyond the cores only queue for CPU
	}
	return 512
}

// defaultJobs is --jobs by scenario. overload's is twice the 8,000 fires/s
// --scenario max sustained on the 2-core development machine
// (docs/performance.md, "Figures of the sittings"); coldstart's is steady's.
var defaultJobs = map[string]int{"steady": 10000, "sparse": 1_000_000, "burst": 50_000, "max": 1000,
	"overload": 16000, "coldstart": 10000, "river": 10000, "workflow": 200}

func main() {
	if len(os.Args) > 1 {
		var err error
		handled := true
		switch os.Args[1] {
		case "nats":
			err = runNATS(os.Args[2:])
		case "scheduler":
			err = runScheduler(os.Args[2:])
		case "worker":
			err = runWorker(os.Args[2:])
		default:
			handled = false
		}
		if handled {
			if err != nil {
				fmt.Fprintf(os.Stderr, "jetjob-bench %s: %v\n", os.Args[1], err)
				os.Exit(1)
			}
			return
		}
	}
	if err := orchestrate(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "jetjob-bench: %v\n", err)
		os.Exit(1)
	}
}

func orchestrate(args []string) error {
	o, err := parseOptions(args)
	if err != nil || o == nil {
		return err // nil, nil: --help
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()

	var failed []string
	for _, s := range o.scenarios {
		so := *o
		if so.jobs == 0 {
			so.jobs = defaultJobs[s]
		}
		if !slices.Contains(flowScenarios, s) {
			so.flow = flowFlags{} // dueread and publish ignore them
		}
		if err := runScenario(ctx, &so, s); err != nil {
			logf("%s: %v", s, err)
			failed = append(failed, s)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("scenario(s) failed: %s", strings.Join(failed, ", "))
	}
	return nil
}

// parseOptions reads and checks the orchestrator's flags; nil options and
// no error after --help.
func parseOptions(args []string) (*options, error) {
	var o options
	var scen, sizes string
	fs := pflag.NewFlagSet("jetjob-bench", pflag.ContinueOnError)
	fs.StringVar(&scen, "scenario", "steady,dueread", "scenarios, comma separated: steady, sparse, burst, max, overload, coldstart, dueread, publish, river, workflow")
	fs.IntVar(&o.jobs, "jobs", 0, "jobs (default: steady 10000, sparse 1000000, burst 50000, max 1000 to start with, overload 16000, coldstart 10000; workflow: workflows, 200)")
	fs.DurationVar(&o.duration, "duration", 60*time.Second, "measured window")
	fs.DurationVar(&o.warmup, "warmup", 10*time.Second, "warm-up before the window (from the first fire)")
	fs.IntVar(&o.schedulers, "schedulers", 1, "scheduler processes")
	fs.IntVar(&o.workers, "workers", 1, "worker processes")
	fs.IntVar(&o.workerConcurrency, "worker-concurrency", 0, "runs at once per worker (default 512 for noop, 1024 for sleep50, 8 for shell)")
	fs.StringVar(&o.handler, "handler", "noop", "noop, sleep50 or shell (the drop-in worker's shell builtin: a process per run)")
	fs.StringVar(&o.shellCommand, "shell-command", "true", "shell: the jobs' params, the command line each run runs with sh -c")
	fs.StringVar(&o.phases, "phases", "aligned", "steady, max, overload and coldstart: aligned (every job due at the same instant each second) or spread (\"fix_rate 1s\" jobs, job i due i mod 1000 ms into each second)")
	fs.StringVar(&o.blockStrategy, "block-strategy", "serial", "the jobs' block_strategy: serial (the default of a new job), discard_later, cover_early or concurrent (no job lock: against serial, what the lock costs)")
	fs.StringVar(&o.route, "route", "any", "the jobs' route_strategy: any (the default of a new job: the group's shared queues) or consistent_hash (each job's runs meet one worker; batched per worker)")
	fs.IntVar(&o.shards, "shards", 64, "shard count of the cluster")
	fs.StringVar(&o.out, "out", "bench-results", "directory for the JSON results, logs and profiles")
	fs.BoolVar(&o.profile, "profile", false, "CPU-profile schedulers, workers and NATS over the window, dump their goroutines at its end; PostgreSQL's top statements")
	fs.DurationVar(&o.drain, "drain", 60*time.Second, "after the window, how long to wait for its runs to finish")
	fs.DurationVar(&o.burstTimeout, "burst-timeout", 120*time.Second, "burst: how long to wait for every run to finish")
	fs.IntVar(&o.step, "step", 1000, "max: jobs (fires/s) added per step")
	fs.DurationVar(&o.stepDuration, "step-duration", 20*time.Second, "max: measured window per step")
	fs.DurationVar(&o.stepWarmup, "step-warmup", 5*time.Second, "max: warm-up per step")
	fs.IntVar(&o.maxSteps, "max-steps", 30, "max: at most this many steps")
	fs.StringVar(&sizes, "dueread-sizes", "10000,100000,1000000", "dueread: table sizes")
	fs.IntVar(&o.dueReads, "dueread-reads", 200, "dueread: reads per size")
	var pubSizes string
	fs.StringVar(&pubSizes, "publish-sizes", "1000,5000,15000", "publish: burst sizes")
	fs.IntVar(&o.publishBursts, "publish-bursts", 20, "publish: bursts per size")
	fs.StringVar(&o.misfirePolicy, "misfire-policy", string(policy.DefaultMisfire), "the jobs' misfire_policy: skip, fire_once (the API's default) or fire_all")
	fs.Float64Var(&o.capacity, "capacity", 0, "overload: the capacity measured with --scenario max (fires/s); the succeeded rate is reported as a share of it")
	fs.DurationVar(&o.recovery, "recovery", 15*time.Second, "coldstart: from everything up again after the restart to the second window")
	fs.DurationVar(&o.recoveryLag, "recovery-lag", time.Second, "coldstart: recovered once every fire time's start lag p99 stays at or below this")
	fs.BoolVar(&o.restartPostgres, "restart-postgres", true, "coldstart: restart PostgreSQL too, with the other processes")
	fs.IntVar(&o.triggerBatch, "trigger-batch", 0, "runs per trigger message, the schedulers' --trigger-batch (0: their default, 16; 1: one message per run)")
	fs.DurationVar(&o.planningWindow, "planning-window", 0, "how far ahead the schedulers plan fires, their --planning-window (0: their default, 5s)")
	fs.IntVar(&o.natsCluster, "nats-cluster", 1, "NATS servers: 1, or the nodes of a cluster on 127.0.0.1 (3: the production shape)")
	fs.IntVar(&o.replicas, "stream-replicas", 0, "replicas of the streams and buckets (0: 1 on one server, 3 on a cluster of 3 or more)")
	fs.StringVar(&o.riverBin, "river-bin", "bin/jetjob-bench-river", "river: the River baseline's binary (make bench-river)")
	o.flow.register(fs)
	fs.StringVar(&o.logLevel, "log-level", "warn", "log level of the scheduler and worker processes (their logs go to <out>/<run>-logs/)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil, nil
		}
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	for _, s := range strings.Split(scen, ",") {
		s = strings.TrimSpace(s)
		if _, ok := defaultJobs[s]; !ok && s != "dueread" && s != "publish" {
			return nil, fmt.Errorf("unknown scenario %q (want steady, sparse, burst, max, overload, coldstart, dueread, publish, river or workflow)", s)
		}
		o.scenarios = append(o.scenarios, s)
	}
	// Flags of one scenario, given without it, are a mistake.
	for flag, scenario := range map[string]string{"capacity": "overload", "recovery": "coldstart",
		"recovery-lag": "coldstart", "restart-postgres": "coldstart"} {
		if fs.Changed(flag) && !slices.Contains(o.scenarios, scenario) {
			return nil, fmt.Errorf("--%s: only for --scenario %s", flag, scenario)
		}
	}
	if err := o.flow.check(fs, o.scenarios); err != nil {
		return nil, err
	}
	mp, err := policy.ParseMisfire(o.misfirePolicy)
	if err != nil {
		return nil, fmt.Errorf("--misfire-policy: %w", err)
	}
	o.misfirePolicy = string(mp)
	for _, s := range strings.Split(sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("--dueread-sizes: %q is not a positive number", s)
		}
		o.dueSizes = append(o.dueSizes, n)
	}
	for _, s := range strings.Split(pubSizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("--publish-sizes: %q is not a positive number", s)
		}
		o.publishSizes = append(o.publishSizes, n)
	}
	if o.publishBursts < 1 {
		return nil, errors.New("--publish-bursts: want at least 1")
	}
	switch {
	case o.handler != "noop" && o.handler != "sleep50" && o.handler != "shell":
		return nil, fmt.Errorf("--handler %q: want noop, sleep50 or shell", o.handler)
	case o.phases != "aligned" && o.phases != "spread":
		return nil, fmt.Errorf("--phases %q: want aligned or spread", o.phases)
	case o.blockStrategy != "serial" && o.blockStrategy != "discard_later" && o.blockStrategy != "cover_early" && o.blockStrategy != "concurrent":
		return nil, fmt.Errorf("--block-strategy %q: want serial, discard_later, cover_early or concurrent", o.blockStrategy)
	case o.route != "any" && o.route != "consistent_hash":
		return nil, fmt.Errorf("--route %q: want any or consistent_hash", o.route)
	case o.schedulers < 1 || o.workers < 1:
		return nil, errors.New("--schedulers and --workers: want at least 1")
	case o.shards < 1 || o.shards > 4096:
		return nil, errors.New("--shards: want 1 to 4096")
	case o.duration < time.Second:
		return nil, errors.New("--duration: want at least 1s")
	case o.jobs < 0:
		return nil, errors.New("--jobs: want a positive number")
	case o.warmup < 0:
		return nil, errors.New("--warmup: want 0s or more")
	case o.triggerBatch < 0:
		return nil, errors.New("--trigger-batch: want 1 or more (0: the schedulers' default)")
	case o.planningWindow < 0:
		return nil, errors.New("--planning-window: want a positive duration (0: the schedulers' default)")
	case o.capacity < 0:
		return nil, errors.New("--capacity: want a positive rate (fires/s)")
	case o.recovery < 0:
		return nil, errors.New("--recovery: want 0s or more")
	case o.recoveryLag <= 0:
		return nil, errors.New("--recovery-lag: want more than 0s")
	case o.natsCluster < 1 || o.natsCluster > 5:
		return nil, errors.New("--nats-cluster: want 1 to 5 servers")
	case o.replicas < 0 || o.replicas > o.natsCluster:
		return nil, fmt.Errorf("--stream-replicas: want 1 to %d (the servers), or 0 for the default", o.natsCluster)
	}
	if o.replicas == 0 {
		o.replicas = min(o.natsCluster, 3)
	}
	return &o, nil
}

// source reads the VCS stamp go build put into the binary.
func source() Source {
	var s Source
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return s
	}
	for _, kv := range bi.Settings {
		switch kv.Key {
		case "vcs.revision":
			s.Revision = kv.Value
		case "vcs.modified":
			s.Modified = kv.Value == "true"
		case "vcs.time":
			s.Time = kv.Value
		}
	}
	if s.Revision == "" { // built with -buildvcs=false: ask git
		if out, err := exec.Command("git", "rev-parse", "HEAD").Output(); err == nil {
			s.Revision = strings.TrimSpace(string(out))
		}
		if out, err := exec.Command("git", "status", "--porcelain").Output(); err == nil {
			for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
				if line != "" {
					s.Modified = true
					s.Changes = append(s.Changes, strings.TrimSpace(line))
				}
			}
		}
	}
	return s
}

func runScenario(ctx context.Context, o *options, scenario string) error {
	started := time.Now()
	res := &Result{Scenario: scenario, StartedAt: started.UTC(), Command: os.Args, Source: source(),
		Config: RunConfig{Jobs: o.jobs, DurationSeconds: o.duration.Seconds(), WarmupSeconds: o.warmup.Seconds(),
			Schedulers: o.schedulers, Workers: o.workers, WorkerConcurrency: o.concurrency(), Handler: o.handler,
			Shards: o.shards, BlockStrategy: o.blockStrategy, Route: o.route, MisfirePolicy: o.misfirePolicy, Profile: o.profile,
			NATSServers: o.natsCluster, StreamReplicas: o.replicas}}
	switch scenario {
	case "steady", "max", "overload", "coldstart":
		res.Config.Phases = o.phases
	}
	name := fmt.Sprintf("%s-%s", scenario, started.Format("20060102-150405"))
	e, err := newEnv(o, name)
	if err != nil {
		return err
	}
	logf("scenario %s (logs in %s)", scenario, e.logDir)
	res.Config.Flow = o.flow.config(scenario, o.handler)
	if res.Config.Flow != nil {
		logf("flow controls: %s", res.Config.Flow)
		perSec := 0.0
		switch scenario {
		case "steady", "overload", "coldstart":
			perSec = float64(o.jobs)
		case "sparse":
			perSec = float64(o.jobs) / 1000
		}
		for _, w := range o.flow.warnings(perSec, o.workers*o.concurrency()) {
			e.note("%s", w)
		}
	}
	res.Config.TriggerBatch = o.triggerBatch
	res.Config.PlanningWindowSeconds = o.planningWindow.Seconds()
	switch scenario {
	case "steady", "overload":
		set := o.secondSet(1, o.jobs)
		res.Config.ScheduleType, res.Config.ScheduleExpr = set.typ, set.expr
		if scenario == "overload" {
			res.Config.CapacityPerSec = o.capacity
		}
		err = runPeriodic(ctx, e, res, []*jobSet{set})
	case "coldstart":
		set := o.secondSet(1, o.jobs)
		res.Config.ScheduleType, res.Config.ScheduleExpr = set.typ, set.expr
		res.Config.RecoverySeconds, res.Config.RestartPostgres = o.recovery.Seconds(), &o.restartPostgres
		err = runColdStart(ctx, e, res, set)
	case "sparse":
		// Job i first fires i mod 1000 s after the start, then every
		// 1000 s: 1,000 fires/s for 1 M jobs. Only the fires the run can
		// reach are armed; the rest stay parked (see jobs.go).
		const period = 1000 * time.Second
		res.Config.ScheduleType, res.Config.ScheduleExpr = "cron", "@every 1000s"
		reach := o.warmup + o.duration + o.drain + 30*time.Second
		err = runPeriodic(ctx, e, res, []*jobSet{everySet(1, o.jobs, period, o.handler, func(i int64) time.Duration {
			return time.Duration(i%int64(period/time.Second)) * time.Second
		}, reach)})
	case "burst":
		res.Config.ScheduleType, res.Config.ScheduleExpr = "once", "<the fire time>"
		err = runBurst(ctx, e, res)
	case "max":
		set := o.secondSet(1, 1)
		res.Config.ScheduleType, res.Config.ScheduleExpr = set.typ, set.expr
		err = runMax(ctx, e, res)
	case "dueread":
		res.Config = RunConfig{Shards: o.shards}
		err = runDueRead(ctx, e, res)
	case "publish":
		res.Config = RunConfig{}
		err = runPublish(ctx, e, res)
	case "workflow":
		res.Config.ScheduleType, res.Config.ScheduleExpr = "cron", "@every 1s (workflows)"
		err = runWorkflow(ctx, e, res)
	case "river":
		res.Config = RunConfig{Jobs: o.jobs, DurationSeconds: o.duration.Seconds(), WarmupSeconds: o.warmup.Seconds(),
			WorkerConcurrency: o.concurrency(), Handler: "noop (River)", ScheduleType: "cron", ScheduleExpr: "@every 1s"}
		err = runRiver(ctx, e, res)
	}
	if res.Machine.GoVersion == "" || (res.Machine.PostgresVersion == "" && e.pool != nil) {
		res.Machine = e.machine(ctx)
	}
	e.close()
	res.Notes = append(res.Notes, e.notes...)
	res.ChildLogProblemRows, res.ChildLogs = countLogProblems(e.logDir)
	res.Profiles = e.profilePaths
	res.ElapsedSeconds = round1(time.Since(started).Seconds())
	if err != nil {
		res.Notes = append(res.Notes, "FAILED: "+err.Error())
	}
	judge(res)
	path, werr := writeJSON(o.out, res)
	printTable(os.Stdout, res)
	if werr != nil {
		return errors.Join(err, werr)
	}
	fmt.Printf("results: %s\n", path)
	return err
}

// secondSet is n jobs from firstID that fire once a second, by --phases:
// "@every 1s", all due at the same instant, or "fix_rate 1s", job i (from
// 0) i mod 1000 ms into each second.
func (o *options) secondSet(firstID int64, n int) *jobSet {
	if o.phases != "spread" {
		return everySet(firstID, n, time.Second, o.handler, zeroOffset, 24*time.Hour)
	}
	set := everySet(firstID, n, time.Second, o.handler, func(i int64) time.Duration {
		return time.Duration(i%1000) * time.Millisecond
	}, 24*time.Hour)
	set.typ, set.expr = "fix_rate", "1s"
	return set
}
