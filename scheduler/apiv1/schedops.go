package apiv1

import "time"

// Schedule operations: pause and resume, backfills.

// DisableRequest is the optional body of POST /jobs/{id}/disable.
type DisableRequest struct {
	// Note says why (shown in the job as paused_note until it is enabled).
	Note string `json:"note,omitempty"`
}

// EnableRequest is the optional body of POST /jobs/{id}/enable.
type EnableRequest struct {
	// CatchUp is what happens to the fires missed while disabled: policy
	// (the default) replays them through the job's misfire policy; none
	// resumes from now without running or recording them.
	CatchUp string `json:"catch_up,omitempty"`
}

// BackfillRequest is the body of POST /jobs/{id}/backfill: run every fire
// of the job's schedule in [from, to).
type BackfillRequest struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// Max refuses (400) a range holding more fires than this; default and
	// upper bound 10000.
	Max int `json:"max,omitempty"`
}

// Backfill states.
const (
	BackfillRunning   = "running"
	BackfillCompleted = "completed"
	BackfillCancelled = "cancelled"
)

// Backfill is one backfill operation.
type Backfill struct {
	ID    int64     `json:"id"`
	JobID int64     `json:"job_id"`
	Group string    `json:"group"`
	From  time.Time `json:"from"`
	To    time.Time `json:"to"`
	// Planned fires in the range; Triggered runs written so far; Existing
	// fires that already had a run (not run again); Done runs ended.
	Planned   int `json:"planned"`
	Triggered int `json:"triggered"`
	Existing  int `json:"existing"`
	Done      int `json:"done"`
	// State is running, completed or cancelled.
	State      string     `json:"state"`
	CreatedBy  string     `json:"created_by,omitempty"`
	CreatedAt  time.Time  `json:"created_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
}

// BackfillList answers GET /jobs/{id}/backfills and GET /backfills.
type BackfillList struct {
	Backfills []Backfill `json:"backfills"`
}
