package main

// Result is one scenario's outcome, written as
// bench-results/<scenario>-<YYYYMMDD-HHMMSS>.json. Field by field:
//
//	scenario            steady | sparse | burst | max | overload | coldstart |
//	                    dueread | publish
//	started_at          when the scenario started (UTC)
//	command             the exact command line (os.Args) of the orchestrator
//	source              the code measured: vcs_revision, vcs_modified (the
//	                    working tree had uncommitted changes), vcs_time, from
//	                    the binary's build info, or from git at run time
//	                    (then changes: `git status --porcelain`)
//	machine             nproc, cpu_model (/proc/cpuinfo), mem_total_mb, kernel,
//	                    go_version, postgres_version (SHOW server_version),
//	                    nats_server_version (the embedded server's VERSION),
//	                    calibration_ms (one core hashing 64 MiB, best of
//	                    three: the host's speed at the start of the run)
//	config              the knobs the scenario ran with: jobs, duration_s,
//	                    warmup_s, schedulers, workers, worker_concurrency,
//	                    handler (noop | sleep50), shards, schedule (the jobs'
//	                    schedule_type and schedule_expr), block_strategy,
//	                    phases (steady, max, overload, coldstart: aligned,
//	                    every job due at the same instant, or spread over
//	                    the second), misfire_policy (the jobs',
//	                    --misfire-policy, fire_once as the API's default),
//	                    capacity_per_s (overload: --capacity, 0 when not
//	                    given), recovery_s and restart_postgres (coldstart:
//	                    --recovery, --restart-postgres), profile,
//	                    nats_servers (--nats-cluster), stream_replicas
//	                    (--stream-replicas: of every stream and bucket)
//	window              the measured interval: start, end (UTC, whole
//	                    seconds) and seconds. Warm-up precedes it: the jobs'
//	                    first fire is at window.start - warmup. coldstart:
//	                    the whole run, from the first fire to the end of
//	                    window B (the correctness audit's range; its two
//	                    measured windows are in coldstart)
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
//	                    lower bounds then, never flattered). overload: only
//	                    the runs that did run (started_at set), so that
//	                    the shed ones, which never start, do not count
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
//	  unaccounted_fires  expected_fires - invoked_fires - shed_fires (at
//	                     least 0): fires that neither reached a handler nor
//	                     were shed by a misfire policy; must be 0 even in
//	                     overload and across coldstart's restart
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
//	cpu_per_run         the processes' CPU over the window per run that
//	                    succeeded in it (steady, sparse, burst, overload;
//	                    coldstart: per window): runs (SUCCEEDED, recorded_at
//	                    in the window), cpu_s (all benchmark processes, the
//	                    orchestrator too), ms (cpu_s / runs, in ms), by_kind
//	                    (postgres, nats, schedulers, workers, orchestrator:
//	                    processes, cpu_s, ms): compare --schedulers 2
//	                    --workers 2 with 1 + 1 at the same rate by it
//	per_run             counts over the window per run that succeeded in it
//	                    (runs, as cpu_per_run's; steady, sparse, burst,
//	                    overload; coldstart: per window). They do not depend
//	                    on how busy the host is, CPU does:
//	  nats                       the NATS servers' /varz counters, summed
//	                             over the nodes: servers, stream_replicas,
//	                             in_msgs, out_msgs, in_bytes, out_bytes (every
//	                             connection), client_in_msgs, client_out_msgs,
//	                             client_in_bytes, client_out_bytes (the
//	                             schedulers' and workers' connections),
//	                             route_in_msgs, route_in_bytes (in - client
//	                             in: what the nodes sent each other,
//	                             replication mostly; 0 on one server).
//	                             Bytes are message sizes (subject, headers,
//	                             payload), before route compression.
//	                             stream_msgs: the messages each stream
//	                             stored per run (its last sequence's
//	                             advance, /jsz), KV buckets' KV_* streams too
//	  postgres                   wal_bytes (pg_current_wal_lsn's advance),
//	                             wal_records, wal_fpi (full-page images;
//	                             pg_stat_wal: the whole server, checkpoints
//	                             included), transactions, rows_inserted,
//	                             rows_updated, rows_hot_updated, rows_deleted,
//	                             rows_returned, rows_fetched (pg_stat_database,
//	                             pg_stat_user_tables), job_runs_bytes (the
//	                             growth of job_runs' partitions with their
//	                             indexes, dead row versions included); with --profile
//	                             statements, statement_rows and
//	                             blocks_dirtied (pg_stat_statements: calls,
//	                             rows, shared_blks_dirtied: 8 KiB pages a
//	                             statement made dirty, each written to the
//	                             data files once after, by the checkpointer
//	                             or the background writer),
//	                             index_entries (B-tree leaf entries written:
//	                             the INSERT_LEAF, INSERT_POST and SPLIT
//	                             records of the window's WAL, pg_walinspect)
//	                             and wal_by_record (type, count, bytes per run,
//	                             the largest first); connections (not per
//	                             run: client connections to the database at
//	                             the window's end)
//	  window_totals              the raw counts: nats (the counters above,
//	                             whole), wal_bytes, start_lsn, end_lsn,
//	                             statements, index_entries
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
//	overload            overload only, over the window's fires:
//	  offered_fires_per_s        fires due in the window / its seconds (the
//	                             jobs' schedules, not the rows)
//	  succeeded_per_s            runs that SUCCEEDED with recorded_at in the
//	                             window, per second (= rates.runs_succeeded_per_s)
//	  capacity_per_s             --capacity (omitted when not given)
//	  succeeded_pct_of_capacity  succeeded_per_s / capacity_per_s in % (the
//	                             target: ≥ 90)
//	  fires, succeeded, succeeded_pct_of_offered
//	                             the window's fires, how many of them
//	                             SUCCEEDED, and that as a % of them
//	  shed, shed_per_s, shed_pct the window's fires a misfire policy shed
//	                             (rows SKIPPED by a scheduler or EXPIRED by a
//	                             worker)
//	  shed_by_message            those by status and message, numbers in the
//	                             message replaced by N: status, message,
//	                             runs, example (one real message)
//	  summarized_fires           fires in max_catchup summaries (one SKIPPED
//	                             row for many fires; counted as without_row)
//	  misfire_catchups           runs of the window of trigger type misfire
//	                             (fire_once's catch-up of a missed fire)
//	  other_statuses             the window's runs in any other status
//	                             (FAILED, LOST, still RUNNING, ...)
//	  without_row                fires without a row in job_runs: lost,
//	                             never acceptable (= unrecorded_fires)
//	  unaccounted                = correctness.unaccounted_fires
//	  duplicate_runs             = correctness.duplicate_runs
//	coldstart           coldstart only:
//	  job_runs_at_start          rows in job_runs before the first fire (0:
//	                             the run fails otherwise)
//	  tables_at_first_fire, tables_at_window_a_end
//	                             jobs, job_runs and its partitions as
//	                             pg_stat_user_tables saw them: table,
//	                             live_rows, dead_rows (the statistics' own
//	                             counts, which can lag by some seconds),
//	                             reltuples (-1: never
//	                             analysed or vacuumed), analyze_count and
//	                             vacuum_count (manual + auto),
//	                             last_autoanalyze, last_autovacuum. The
//	                             harness analyses and vacuums nothing;
//	                             autovacuum is on, as on a new database
//	  window_a, window_b         the steady figures of the window on the
//	                             fresh database and of the one after the
//	                             restart: window, rates, fire_lag_ms,
//	                             start_lag_ms, end_to_end_ms, fire_spread_ms,
//	                             correctness, processes, host_cpu,
//	                             cpu_per_run (as at the top level)
//	  restart                    stopped_at (first SIGTERM), down_at
//	                             (everything stopped), ready_at (everything
//	                             up, schedulers holding every shard), stop_s,
//	                             start_s, postgres_restarted,
//	                             recovery_lag_ms (--recovery-lag),
//	                             recovered_at (the first fire time from which
//	                             every fire time up to the end of window B
//	                             had all its runs and start lag p99 within
//	                             recovery_lag_ms), recovery_s (recovered_at -
//	                             stopped_at; -1: never), recovery_after_ready_s
//	                             (recovered_at - ready_at), seconds (per fire
//	                             time from 2 s before the stop to window B's
//	                             start: at, fires expected, runs, started,
//	                             shed, start_p99_ms, a run never started
//	                             counting with "now")
//	                    The top-level correctness is the whole run's, from
//	                    the first fire to the end of window B, both
//	                    incarnations' workers together: the restart may shed
//	                    fires (misfire policy), but unaccounted_fires,
//	                    unrecorded_fires and duplicate_runs must be 0
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
//	                    most time on during the window (pg_stat_statements;
//	                    coldstart: window B)
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
	CPUPerRun           *CPUPerRun     `json:"cpu_per_run,omitempty"`
	PerRun              *PerRun        `json:"per_run,omitempty"`
	Overload            *Overload      `json:"overload,omitempty"`
	ColdStart           *ColdStart     `json:"coldstart,omitempty"`
	Workflow            *WorkflowStats `json:"workflow,omitempty"`
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
	// CalibrationMs is how long one core took to hash 64 MiB (SHA-256),
	// the best of three: the host's own speed, which can move between
	// sittings on a shared machine (the development one's figures moved by
	// 15 % within an hour, the code unchanged); runs whose calibrations
	// differ are not compared.
	CalibrationMs float64 `json:"calibration_ms"`
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
	Route             string  `json:"route_strategy,omitempty"`
	Phases            string  `json:"phases,omitempty"`
	MisfirePolicy     string  `json:"misfire_policy,omitempty"`
	CapacityPerSec    float64 `json:"capacity_per_s,omitempty"`
	// TriggerBatch is --trigger-batch: 0 for the schedulers' default.
	TriggerBatch int `json:"trigger_batch,omitempty"`
	// PlanningWindowSeconds is --planning-window: 0 for the schedulers'
	// default.
	PlanningWindowSeconds float64 `json:"planning_window_s,omitempty"`
	RecoverySeconds       float64 `json:"recovery_s,omitempty"`
	RestartPostgres       *bool   `json:"restart_postgres,omitempty"`
	Profile               bool    `json:"profile"`
	// NATSServers and StreamReplicas: --nats-cluster, --stream-replicas.
	NATSServers    int `json:"nats_servers,omitempty"`
	StreamReplicas int `json:"stream_replicas,omitempty"`
	// Flow is the flow controls set on the group and the jobs (--group-cap,
	// --group-rate, --job-rate, --key-cap, --priority-spread): present for
	// the scenarios that take them, empty when none was set, absent for
	// the others and in results written before they existed.
	Flow *FlowConfig `json:"flow,omitempty"`
}

// FlowConfig is the flow controls of a run (docs/flow-control.md).
type FlowConfig struct {
	// GroupCap is the group's max_running; GroupRate its rate_limit.
	GroupCap  int    `json:"group_cap,omitempty"`
	GroupRate string `json:"group_rate,omitempty"`
	// JobRate is every job's rate_limit.
	JobRate string `json:"job_rate,omitempty"`
	// KeyCap is every job's key_cap, KeyExpr its concurrency_key: each job
	// has one key (a job's runs carry its params).
	KeyCap  int    `json:"key_cap,omitempty"`
	KeyExpr string `json:"key_expr,omitempty"`
	// Priorities is the range of the jobs' priorities ("0-9": job id mod
	// 10); empty: all 0.
	Priorities string `json:"priorities,omitempty"`
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
	// succeeded is the count behind RunsSucceeded (cpu_per_run's runs).
	succeeded int64
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
	UnaccountedFires   int64            `json:"unaccounted_fires"`
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
	Query   string  `json:"query"`
	Calls   int64   `json:"calls"`
	TotalMs float64 `json:"total_ms"`
	MeanMs  float64 `json:"mean_ms"`
	// PlanMs is the time spent planning the statement (all calls); the
	// share counts it with the execution time.
	PlanMs      float64 `json:"plan_ms"`
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

// CPUPerRun is the processes' CPU over a window per run that succeeded in
// it.
type CPUPerRun struct {
	Runs       int64     `json:"runs"`
	CPUSeconds float64   `json:"cpu_s"`
	Ms         float64   `json:"ms"`
	ByKind     []KindCPU `json:"by_kind"`
}

// KindCPU is one kind of process's share of CPUPerRun.
type KindCPU struct {
	Kind       string  `json:"kind"`
	Processes  int     `json:"processes"`
	CPUSeconds float64 `json:"cpu_s"`
	Ms         float64 `json:"ms"`
}

// Overload is what the overload scenario's window's fires became.
type Overload struct {
	OfferedPerS            float64          `json:"offered_fires_per_s"`
	SucceededPerS          float64          `json:"succeeded_per_s"`
	CapacityPerS           float64          `json:"capacity_per_s,omitempty"`
	SucceededPctOfCapacity float64          `json:"succeeded_pct_of_capacity,omitempty"`
	Fires                  int64            `json:"fires"`
	Succeeded              int64            `json:"succeeded"`
	SucceededPctOfOffered  float64          `json:"succeeded_pct_of_offered"`
	Shed                   int64            `json:"shed"`
	ShedPerS               float64          `json:"shed_per_s"`
	ShedPct                float64          `json:"shed_pct"`
	ShedByMessage          []ShedKind       `json:"shed_by_message"`
	SummarizedFires        int64            `json:"summarized_fires"`
	CatchUps               int64            `json:"misfire_catchups"`
	OtherStatuses          map[string]int64 `json:"other_statuses"`
	WithoutRow             int64            `json:"without_row"`
	Unaccounted            int64            `json:"unaccounted"`
	Duplicates             int64            `json:"duplicate_runs"`
}

// ShedKind is one kind of shed run: its status and message (numbers as N).
type ShedKind struct {
	Status  string `json:"status"`
	Message string `json:"message"`
	Runs    int64  `json:"runs"`
	Example string `json:"example"`
}

// ColdStart is the coldstart scenario's outcome.
type ColdStart struct {
	JobRunsAtStart     int64       `json:"job_runs_at_start"`
	TablesAtFirstFire  []TableStat `json:"tables_at_first_fire"`
	TablesAtWindowAEnd []TableStat `json:"tables_at_window_a_end"`
	WindowA            *Phase      `json:"window_a,omitempty"`
	Restart            Restart     `json:"restart"`
	WindowB            *Phase      `json:"window_b,omitempty"`
}

// TableStat is what PostgreSQL's statistics say of one table.
type TableStat struct {
	Table           string     `json:"table"`
	LiveRows        int64      `json:"live_rows"`
	DeadRows        int64      `json:"dead_rows"`
	RelTuples       float64    `json:"reltuples"`
	Analyzed        int64      `json:"analyze_count"`
	Vacuumed        int64      `json:"vacuum_count"`
	LastAutoAnalyze *time.Time `json:"last_autoanalyze,omitempty"`
	LastAutoVacuum  *time.Time `json:"last_autovacuum,omitempty"`
}

// Phase is one measured window of coldstart, with the steady figures.
type Phase struct {
	Window       Window     `json:"window"`
	Rates        Rates      `json:"rates"`
	FireLagMs    Latency    `json:"fire_lag_ms"`
	StartLagMs   Latency    `json:"start_lag_ms"`
	EndToEndMs   Latency    `json:"end_to_end_ms"`
	FireSpreadMs *Spread    `json:"fire_spread_ms,omitempty"`
	Correctness  *Correct   `json:"correctness"`
	Processes    []ProcStat `json:"processes"`
	HostCPU      *HostCPU   `json:"host_cpu"`
	CPUPerRun    *CPUPerRun `json:"cpu_per_run,omitempty"`
	PerRun       *PerRun    `json:"per_run,omitempty"`
}

// Restart is coldstart's restart of every process and the recovery after
// it.
type Restart struct {
	StoppedAt                 time.Time   `json:"stopped_at"`
	DownAt                    time.Time   `json:"down_at"`
	ReadyAt                   time.Time   `json:"ready_at"`
	StopSeconds               float64     `json:"stop_s"`
	StartSeconds              float64     `json:"start_s"`
	PostgresRestarted         bool        `json:"postgres_restarted"`
	RecoveryLagMs             float64     `json:"recovery_lag_ms"`
	RecoveredAt               *time.Time  `json:"recovered_at,omitempty"`
	RecoverySeconds           float64     `json:"recovery_s"`
	RecoveryAfterReadySeconds float64     `json:"recovery_after_ready_s"`
	Seconds                   []LagSecond `json:"seconds,omitempty"`
}

// LagSecond is one fire time (whole second) around coldstart's restart.
type LagSecond struct {
	At         time.Time `json:"at"`
	Fires      int64     `json:"fires"`
	Runs       int64     `json:"runs"`
	Started    int64     `json:"started"`
	Shed       int64     `json:"shed"`
	StartP99Ms float64   `json:"start_p99_ms"`
}
