package apiv1

import "time"

// MaxImportedRuns bounds the runs of one POST /api/v1/runs/import.
const MaxImportedRuns = 1000

// ImportedRun is a finished run of another scheduler (xxl-job's
// xxl_job_log), written as a run of its jetjob job with trigger type
// import: POST /api/v1/runs/import, admin only.
type ImportedRun struct {
	JobID       int64     `json:"job_id"`
	ScheduledAt time.Time `json:"scheduled_at"`
	// StartedAt and FinishedAt are omitted when unknown.
	StartedAt  *time.Time `json:"started_at,omitempty"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	// Status is a terminal status: SUCCEEDED, FAILED, TIMED_OUT, ...
	Status     string `json:"status"`
	ShardIndex int    `json:"shard_index,omitempty"`
	ShardTotal int    `json:"shard_total,omitempty"`
	WorkerID   string `json:"worker_id,omitempty"`
	Params     string `json:"params,omitempty"`
	Message    string `json:"message,omitempty"`
}

// RunImport is the body of POST /api/v1/runs/import.
type RunImport struct {
	Runs []ImportedRun `json:"runs"`
}

// RunImportResult answers POST /api/v1/runs/import.
type RunImportResult struct {
	// Imported runs were written; Existing were there already (same job,
	// scheduled_at and shard part: the import was repeated).
	Imported int `json:"imported"`
	Existing int `json:"existing"`
	// TooOld runs fall on days jetjob already rolled up into its daily
	// statistics and dropped (older than its run retention): not written.
	TooOld int `json:"too_old"`
}

// ImportedDay is another scheduler's count of one day's finished runs,
// without jobs (xxl-job's xxl_job_log_report).
type ImportedDay struct {
	Day       string `json:"day"` // YYYY-MM-DD, UTC
	Succeeded int64  `json:"succeeded"`
	Failed    int64  `json:"failed"`
}

// StatsImport is the body of POST /api/v1/stats/import (admin): days
// written into the daily statistics where jetjob has nothing of its own.
type StatsImport struct {
	Days []ImportedDay `json:"days"`
}

// StatsImportResult answers POST /api/v1/stats/import: the days written,
// and those skipped because jetjob has runs or statistics of that day.
type StatsImportResult struct {
	Written int `json:"written"`
	Skipped int `json:"skipped"`
}
