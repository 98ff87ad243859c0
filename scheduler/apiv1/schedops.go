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

// Calendar is a named set of days jobs exclude from their fires
// (JobSpec.ExcludeCalendars) or include back (IncludeCalendars):
// PUT/GET/DELETE /api/v1/calendars/{name}. Group "" is global: admins
// change it and every job may name it; a group's calendar is its
// operators' and only its jobs name it.
type Calendar struct {
	Name        string          `json:"name"`
	Group       string          `json:"group,omitempty"`
	Description string          `json:"description,omitempty"`
	Dates       []string        `json:"dates,omitempty"`
	Ranges      []CalendarRange `json:"ranges,omitempty"`
	// Weekdays are SUN, MON, TUE, WED, THU, FRI, SAT.
	Weekdays []string `json:"weekdays,omitempty"`
	// ICS, on a PUT only, is an iCalendar file whose events' days
	// (DTSTART to DTEND, DTEND excluded) are added to Ranges.
	ICS       string    `json:"ics,omitempty"`
	Version   int64     `json:"version,omitempty"`
	CreatedBy string    `json:"created_by,omitempty"`
	CreatedAt time.Time `json:"created_at,omitzero"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}

// CalendarRange is the days From to To (2026-10-01), both included.
type CalendarRange struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// CalendarList answers GET /api/v1/calendars.
type CalendarList struct {
	Calendars []Calendar `json:"calendars"`
}
