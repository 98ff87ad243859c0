package apiv1

import "time"

// The documents below are read by the web console (package console), which
// renders every page from the API, and are as useful to any other client.
//
//	GET /api/v1/schedule/preview?type=&expr=&timezone=&n=10 → SchedulePreview (400 naming the bad part)
//	GET /api/v1/dashboard?group=                          → Dashboard (filtered to the caller's groups)
//	GET /api/v1/cluster                                   → Cluster

// SchedulePreview answers GET /schedule/preview: the next fires of a
// schedule that is being written, before any job exists (the job form's
// live preview). Times are instants; Timezone is the zone they are
// evaluated in (UTC when none was given).
type SchedulePreview struct {
	Type     string      `json:"type"`
	Expr     string      `json:"expr"`
	Timezone string      `json:"timezone"`
	Times    []time.Time `json:"times"`
	// Excluded are the fires among them that the calendars asked for
	// (exclude=, include=) exclude, as a job naming them would record
	// them SKIPPED: not in Times.
	Excluded []ExcludedFire `json:"excluded,omitempty"`
}

// Dashboard answers GET /dashboard: what the console's first page shows.
// Every figure covers only the groups the caller may read (or ?group=).
type Dashboard struct {
	// GeneratedAt is the server's clock when the figures were read.
	GeneratedAt time.Time `json:"generated_at"`
	// Windows are today (UTC), the last 7 and the last 30 days (today
	// included): runs by status, from the daily rollups plus today's live
	// counts (the same sources as GET /stats).
	Windows []StatusWindow `json:"windows"`
	// Days are the last 30 UTC days, oldest first: runs by status per day
	// (the dashboard's chart).
	Days []DayCounts `json:"days"`
	// FireLag is how late runs of the last hour were triggered (triggered_at
	// − scheduled_at); StartLag how late they started (started_at −
	// scheduled_at), the benchmark's headline figure.
	FireLag  LagSummary `json:"fire_lag"`
	StartLag LagSummary `json:"start_lag"`
	// Running is the number of runs RUNNING now.
	Running int64 `json:"running"`
	// Lost counts the runs of the last 24 hours that ended LOST;
	// AlarmFailures the alert deliveries of the last 24 hours that failed
	// for good (a job's alarm fields' among them, docs/alerts.md).
	Lost          int64 `json:"lost"`
	AlarmFailures int64 `json:"alarm_failures"`
	// FailingJobs are the jobs with the most failed runs (FAILED, TIMED_OUT,
	// LOST) in the last 24 hours, worst first (at most 10).
	FailingJobs []FailingJob `json:"failing_jobs"`
	// Groups are the readable groups with their live workers and backlog.
	Groups []GroupBacklog `json:"groups"`
}

// StatusWindow is a window's runs by status.
type StatusWindow struct {
	// Name is "today", "7d" or "30d".
	Name     string           `json:"name"`
	From     time.Time        `json:"from"`
	ByStatus map[string]int64 `json:"by_status"`
	Total    int64            `json:"total"`
	// SuccessRate is SUCCEEDED over the runs that ended (terminal), in
	// [0, 1]; nil when none ended.
	SuccessRate *float64 `json:"success_rate,omitempty"`
}

// DayCounts is one UTC day's runs by status.
type DayCounts struct {
	Day      string           `json:"day"` // YYYY-MM-DD
	ByStatus map[string]int64 `json:"by_status"`
}

// LagSummary is a latency over the runs of a window, in milliseconds; the
// percentiles are nil when no run had the figure.
type LagSummary struct {
	Runs  int64    `json:"runs"`
	P50MS *float64 `json:"p50_ms,omitempty"`
	P99MS *float64 `json:"p99_ms,omitempty"`
}

// FailingJob is a job with failed runs in the dashboard's window.
type FailingJob struct {
	JobID   int64     `json:"job_id"`
	Name    string    `json:"name"`
	Group   string    `json:"group"`
	Failed  int64     `json:"failed"`
	Total   int64     `json:"total"`
	LastRun int64     `json:"last_run"`
	LastAt  time.Time `json:"last_at"`
	// LastMessage is the newest failed run's message.
	LastMessage string `json:"last_message,omitempty"`
}

// Cluster answers GET /cluster: the schedulers, who owns which shard, and
// whether this scheduler reaches its dependencies.
type Cluster struct {
	ShardCount int `json:"shard_count"`
	// Schedulers are the live scheduler instances (heartbeat not expired).
	Schedulers []SchedulerInstance `json:"schedulers"`
	// Shards are every shard, by number.
	Shards []ShardState `json:"shards"`
	// Ready is what the answering scheduler's /readyz checks, one entry per
	// dependency (postgresql, nats).
	Ready []Dependency `json:"ready"`
	// AnsweredBy is the id of the scheduler that answered.
	AnsweredBy string `json:"answered_by,omitempty"`
}

// SchedulerInstance is one live scheduler.
type SchedulerInstance struct {
	ID          string    `json:"id"`
	Host        string    `json:"host"`
	StartedAt   time.Time `json:"started_at"`
	HeartbeatAt time.Time `json:"heartbeat_at"`
	ExpiresAt   time.Time `json:"expires_at"`
	// Shards are the shards whose lease it holds now.
	Shards []int `json:"shards"`
}

// ShardState is one shard's lease and how far behind its planning is.
type ShardState struct {
	Shard int `json:"shard"`
	// Owner is the scheduler holding the lease; empty when none holds a
	// live one (the shard is being taken over).
	Owner string `json:"owner,omitempty"`
	Epoch int64  `json:"epoch"`
	// ExpiresAt is the lease's end, absent for a shard never held or
	// released.
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	// Jobs is the number of enabled jobs in the shard.
	Jobs int64 `json:"jobs"`
	// PlanningLagSeconds is how far the shard's oldest due fire that is not
	// yet planned lies in the past (0 when planning is up to date): a stuck
	// or orphaned shard shows here first.
	PlanningLagSeconds float64 `json:"planning_lag_seconds"`
}

// Dependency is one readiness check.
type Dependency struct {
	Name  string `json:"name"`
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
}
