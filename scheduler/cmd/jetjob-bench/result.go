package main

// Result is one scenario's outcome, written as
// bench-results/<scenario>-<YYYYMMDD-HHMMSS>.json. Field by field:
//
//	scenario            steady | sparse | burst | max | dueread
//	started_at          when the scenario started (UTC)
//	command             the exact command line (os.Args) of the orchestrator
//	source              the code measured: vcs_revision, vcs_modified (the
//	                    working tree had uncommitted changes), vcs_time, from
//	                    the binary's build info, or from git at run time
//	                    (then changes: `git status --porcelain`)
//	machine             nproc, cpu_model (/proc/cpuinfo), mem_total_mb, kernel,
//	                    go_version, postgres_version (SHOW server_version),
//	                    nats_server_version (the embedded server's VERSION)
//	config              the knobs the scenario ran with: jobs, duration_s,
//	                    warmup_s, schedulers, workers, worker_concurrency,
//	                    handler (noop | sleep50), shards, schedule (the jobs'
//	                    schedule_type and schedule_expr), block_strategy,
//	                    phases (steady and max: aligned, every job due at
//	                    the same instant, or spread over the second),
//	                    profile
//	window              the measured interval: start, end (UTC, whole
//	                    seconds) and seconds. Warm-up precedes it: the jobs'
//	                    first fire is at window.start - warmup
//	rates               per second over the window:
//	  fires_planned_per_s        runs the schedulers planned (sum of the
//	                             jetjob_runs_planned_total counters' increase)
//	  fires_due_per_s            runs whose scheduled_at is in the window
//	  triggers_published_per_s   runs whose triggered_at (publish ack) is in the window
//	  runs_finished_per_s        runs whose final status was committed
//	                             (recorded_at) in the window, any final status
//	                             (SKIPPED misfires included)
//	  runs_succeeded_per_s       of those, the SUCCEEDED ones: runs that
//	                             actually ran (the targets are judged on it)
//	fire_lag_ms, start_lag_ms, end_to_end_ms
//	                    over the runs scheduled in the window, in ms:
//	                    fire lag = triggered_at - scheduled_at, start lag =
//	                    started_at - scheduled_at (worker clock, same host),
//	                    end-to-end = recorded_at - scheduled_at. n = runs,
//	                    missing = runs without that timestamp when measured
//	                    (counted with "now" as their time, so percentiles are
//	                    lower bounds then, never flattered)
//	fire_spread_ms      per fire time (all runs due at one instant), the fire
//	                    lag of the first and of the last trigger published:
//	                    first_p50/first_p99 (over fire times) show the delay
//	                    before publishing starts, last_p50/last_p99 how long
//	                    publishing one instant's batch takes
//	correctness
//	  expected_fires     fire times of enabled jobs inside the window
//	  invoked_fires      of those, how many reached a handler (any worker)
//	  lost_fires         expected_fires - invoked_fires: must be 0
//	  shed_fires         runs of the window a misfire policy ended without
//	                     running them (SKIPPED, EXPIRED): the part of
//	                     lost_fires an overloaded run sheds on purpose
//	  unrecorded_fires   expected_fires - runs of the window: fires without
//	                     a row in job_runs, never acceptable
//	  terminal_runs      runs of the window with a final status
//	  unfinished_runs    runs of the window without one when measuring ended
//	  status_counts      runs of the window by status
//	  duplicate_runs     extra handler invocations of one (job, fire time),
//	                     over everything the workers ran (not only the
//	                     window): must be 0
//	  handler_invocations  every handler invocation of the run, all workers
//	processes           per role (orchestrator, nats, postgres, scheduler-N,
//	                    worker-N): pids, cpu_s_window (utime+stime over the
//	                    window), cpu_pct_window (of one core), cpu_s_total
//	                    (since the process started; postgres includes its
//	                    exited children), peak_rss_mb (VmHWM; for postgres
//	                    the sum over the postmaster and its children, which
//	                    counts shared buffers once per process)
//	host_cpu            the whole machine over the window (/proc/stat):
//	                    busy_pct (of all cores), busy_cpu_s,
//	                    benchmark_cpu_s (the processes above), other_cpu_s
//	                    (everything else on the host: other workloads share
//	                    the cores and skew the numbers), loadavg at the end
//	burst               burst only: fire_at, jobs, all_published_s (last
//	                    triggered_at - fire time), all_started_s,
//	                    all_finished_s (last recorded_at - fire time),
//	                    published (runs with triggered_at),
//	                    peak_pending and peak_oldest_pending_s (the highest
//	                    jetjob_group_pending_triggers and
//	                    jetjob_group_oldest_pending_seconds the schedulers
//	                    reported, read every 0.5 s, sampled every 1 s)
//	steps               max only: one entry per rate step (jobs, offered
//	                    fires/s, measured rates and lags, lost, duplicates,
//	                    sustained = start lag p99 <= 1 s and nothing lost)
//	max_sustained_fires_per_s   max only: the highest sustained step's rate
//	due_read            dueread (and sparse): per table size, the planner's
//	                    due-jobs query (selectDue, LIMIT 5000, FOR UPDATE
//	                    SKIP LOCKED, in a transaction rolled back after):
//	                    jobs, due_per_shard (rows it returns), reads, p50_ms,
//	                    p99_ms, max_ms (client side: query + decoding),
//	                    server_ms (EXPLAIN ANALYZE execution time of one read,
//	                    median of 5), plan (one of those EXPLAIN (ANALYZE,
//	                    BUFFERS) outputs)
//	publish             publish only: the broker's floor for fire lag, per
//	                    burst size: messages, bursts, handed_p50_ms (all
//	                    handed to the client library), last_ack_p50_ms and
//	                    last_ack_max_ms (the burst's last acknowledgement),
//	                    msgs_per_s (messages / last_ack_p50)
//	top_sql             with --profile: the statements PostgreSQL spent the
//	                    most time on during the window (pg_stat_statements)
//	profiles            with --profile: CPU profile files of the window
//	targets             the targets for the scenario: name, goal,
//	                    measured, met
//	notes               anything the reader must know (warnings, timeouts)

import "time"

// Result is one scenario run; see the comment above for every field.
type Result struct {
	Scenario            string         `json:"scenario"`
	StartedAt           time.Time      `json:"started_at"`
	Command             []string       `json:"command"`
	Source              Source         `json:"source"`
	Machine             Machine        `json:"machine"`
	Config              RunConfig      `json:"config"`
	Window              *Window        `json:"window,omitempty"`
	Rates               *Rates         `json:"rates,omitempty"`
	FireLagMs           *Latency       `json:"fire_lag_ms,omitempty"`
	StartLagMs          *Latency       `json:"start_lag_ms,omitempty"`
	EndToEndMs          *Latency       `json:"end_to_end_ms,omitempty"`
	FireSpreadMs        *Spread        `json:"fire_spread_ms,omitempty"`
	Correctness         *Correct       `json:"correctness,omitempty"`
	Processes           []ProcStat     `json:"processes,omitempty"`
	HostCPU             *HostCPU       `json:"host_cpu,omitempty"`
	Burst               *Burst         `json:"burst,omitempty"`
	Steps               []Step         `json:"steps,omitempty"`
	MaxSustainedPerSec  float64        `json:"max_sustained_fires_per_s,omitempty"`
	DueRead             []DueRead      `json:"due_read,omitempty"`
	Publish             []PublishBurst `json:"publish,omitempty"`
	TopSQL              []SQLStat      `json:"top_sql,omitempty"`
	Profiles            []string       `json:"profiles,omitempty"`
	Targets             []Target       `json:"targets,omitempty"`
	Notes               []string       `json:"notes,omitempty"`
	ElapsedSeconds      float64        `json:"elapsed_s"`
	ChildLogs           []string       `json:"child_logs,omitempty"`
	ChildLogProblemRows map[string]int `json:"child_log_warnings,omitempty"`
}

// Machine describes where the numbers were taken.
type Machine struct {
	NProc             int    `json:"nproc"`
	CPUModel          string `json:"cpu_model"`
	MemTotalMB        int64  `json:"mem_total_mb"`
	Kernel            string `json:"kernel"`
	GoVersion         string `json:"go_version"`
	PostgresVersion   string `json:"postgres_version"`
	NATSServerVersion string `json:"nats_server_version"`
}

// Source identifies the code that was measured.
type Source struct {
	Revision string `json:"vcs_revision,omitempty"`
	Modified bool   `json:"vcs_modified"`
	Time     string `json:"vcs_time,omitempty"`
	// Changes is `git status --porcelain` when the build info had no
	// VCS stamp (-buildvcs=false).
	Changes []string `json:"changes,omitempty"`
}

// RunConfig is what the scenario ran with.
type RunConfig struct {
	Jobs              int     `json:"jobs"`
	DurationSeconds   float64 `json:"duration_s"`
	WarmupSeconds     float64 `json:"warmup_s"`
	Schedulers        int     `json:"schedulers"`
	Workers           int     `json:"workers"`
	WorkerConcurrency int     `json:"worker_concurrency"`
	Handler           string  `json:"handler"`
	Shards            int     `json:"shards"`
	ScheduleType      string  `json:"schedule_type,omitempty"`
	ScheduleExpr      string  `json:"schedule_expr,omitempty"`
	BlockStrategy     string  `json:"block_strategy,omitempty"`
	Phases            string  `json:"phases,omitempty"`
	Profile           bool    `json:"profile"`
}

// Window is the measured interval.
type Window struct {
	Start   time.Time `json:"start"`
	End     time.Time `json:"end"`
	Seconds float64   `json:"seconds"`
}

// Rates are per second over the window.
type Rates struct {
	FiresPlanned      float64 `json:"fires_planned_per_s"`
	FiresDue          float64 `json:"fires_due_per_s"`
	TriggersPublished float64 `json:"triggers_published_per_s"`
	RunsFinished      float64 `json:"runs_finished_per_s"`
	RunsSucceeded     float64 `json:"runs_succeeded_per_s"`
}

// Latency is a distribution in milliseconds.
type Latency struct {
	N       int64   `json:"n"`
	Missing int64   `json:"missing"`
	P50     float64 `json:"p50"`
	P99     float64 `json:"p99"`
	Max     float64 `json:"max"`
}

// Spread is, per fire time, the lag of its first and last trigger.
type Spread struct {
	FireTimes int64   `json:"fire_times"`
	FirstP50  float64 `json:"first_p50"`
	FirstP99  float64 `json:"first_p99"`
	LastP50   float64 `json:"last_p50"`
	LastP99   float64 `json:"last_p99"`
}

// Correct is the loss and duplication audit.
type Correct struct {
	ExpectedFires      int64            `json:"expected_fires"`
	InvokedFires       int64            `json:"invoked_fires"`
	LostFires          int64            `json:"lost_fires"`
	ShedFires          int64            `json:"shed_fires"`
	UnrecordedFires    int64            `json:"unrecorded_fires"`
	TerminalRuns       int64            `json:"terminal_runs"`
	UnfinishedRuns     int64            `json:"unfinished_runs"`
	StatusCounts       map[string]int64 `json:"status_counts"`
	DuplicateRuns      int64            `json:"duplicate_runs"`
	DuplicateExamples  []string         `json:"duplicate_examples,omitempty"`
	LostExamples       []string         `json:"lost_examples,omitempty"`
	HandlerInvocations int64            `json:"handler_invocations"`
}

// ProcStat is one role's resource use.
type ProcStat struct {
	Role         string  `json:"role"`
	PIDs         []int   `json:"pids"`
	CPUWindow    float64 `json:"cpu_s_window"`
	CPUPctWindow float64 `json:"cpu_pct_window"`
	CPUTotal     float64 `json:"cpu_s_total"`
	PeakRSSMB    float64 `json:"peak_rss_mb"`
}

// HostCPU is the machine's CPU use over the window.
type HostCPU struct {
	BusyPct      float64 `json:"busy_pct"`
	BusyCPU      float64 `json:"busy_cpu_s"`
	BenchmarkCPU float64 `json:"benchmark_cpu_s"`
	OtherCPU     float64 `json:"other_cpu_s"`
	LoadAvg      string  `json:"loadavg"`
}

// Burst is the burst scenario's outcome.
type Burst struct {
	FireAt           time.Time `json:"fire_at"`
	Jobs             int       `json:"jobs"`
	Published        int64     `json:"published"`
	AllPublishedSecs float64   `json:"all_published_s"`
	AllStartedSecs   float64   `json:"all_started_s"`
	AllFinishedSecs  float64   `json:"all_finished_s"`
	TimedOut         bool      `json:"timed_out"`
	// PeakPending and PeakOldestPendingSecs: the group backlog at its
	// highest, as the schedulers' metrics reported it.
	PeakPending           int64   `json:"peak_pending"`
	PeakOldestPendingSecs float64 `json:"peak_oldest_pending_s"`
}

// Step is one rate step of the max scenario.
type Step struct {
	Jobs         int      `json:"jobs"`
	OfferedPerS  float64  `json:"offered_fires_per_s"`
	Window       Window   `json:"window"`
	Rates        Rates    `json:"rates"`
	FireLagMs    Latency  `json:"fire_lag_ms"`
	StartLagMs   Latency  `json:"start_lag_ms"`
	EndToEndMs   Latency  `json:"end_to_end_ms"`
	Lost         int64    `json:"lost_fires"`
	Duplicates   int64    `json:"duplicate_runs"`
	Unfinished   int64    `json:"unfinished_runs"`
	Sustained    bool     `json:"sustained"`
	CPUPctByRole []string `json:"cpu_pct_by_role"`
}

// DueRead is the due-jobs read latency at one table size.
type DueRead struct {
	Layout      string   `json:"layout"`
	Jobs        int      `json:"jobs"`
	DuePerShard float64  `json:"due_per_shard"`
	Reads       int      `json:"reads"`
	P50Ms       float64  `json:"p50_ms"`
	P99Ms       float64  `json:"p99_ms"`
	MaxMs       float64  `json:"max_ms"`
	ServerMs    float64  `json:"server_ms"`
	InsertSecs  float64  `json:"insert_s"`
	Plan        []string `json:"plan,omitempty"`
}

// PublishBurst is the broker alone storing one size of burst (publish).
type PublishBurst struct {
	Messages     int     `json:"messages"`
	Bursts       int     `json:"bursts"`
	HandedP50Ms  float64 `json:"handed_p50_ms"`
	LastAckP50Ms float64 `json:"last_ack_p50_ms"`
	LastAckMaxMs float64 `json:"last_ack_max_ms"`
	MsgsPerSec   float64 `json:"msgs_per_s"`
}

// SQLStat is one statement from pg_stat_statements.
type SQLStat struct {
	Query       string  `json:"query"`
	Calls       int64   `json:"calls"`
	TotalMs     float64 `json:"total_ms"`
	MeanMs      float64 `json:"mean_ms"`
	Rows        int64   `json:"rows"`
	SharePct    float64 `json:"share_pct"`
	WALBytes    int64   `json:"wal_bytes"`
	BlksDirtied int64   `json:"shared_blks_dirtied"`
}

// Target is one of the goals, judged.
type Target struct {
	Name     string `json:"name"`
	Goal     string `json:"goal"`
	Measured string `json:"measured"`
	Met      bool   `json:"met"`
}
