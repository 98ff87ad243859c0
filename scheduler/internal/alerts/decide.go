package alerts

import (
	"slices"
	"time"

	"github.com/jetjob/jetjob/scheduler/internal/alarm"
)

// This file is the rules' logic, without I/O: which events a run's end is,
// and what an event does to a rule's alert on its job. The engine loads
// rules and live alerts, calls Decide for each end in order, and writes
// back what it returns; the tests drive it with injected events and a
// fake clock.

// End is a run's end as the outbox records it.
type End struct {
	// ID is the outbox row's: it names the event in deliveries.
	ID int64
	// RuleID is the one rule an SLA event is for (0: every rule).
	RuleID  int64
	RunID   int64
	JobID   int64
	JobName string
	// Owner is the job's owner (alarm.OwnerRecipient).
	Owner   string
	Group   string
	Status  string
	Attempt int
	// Final: no retry follows this end.
	Final   bool
	Message string
	At      time.Time
}

// Problems are the problem events an end is: FAILED, TIMED_OUT, LOST are
// failed, timed_out, lost, and also retries_exhausted when no retry
// follows; EXPIRED and SKIPPED (a fire its misfire policy shed, at the
// worker or before publishing) are missed; WORKFLOW_FAILED (a workflow
// job's run that ended FAILED with its workflow run) is workflow_failed.
func (e End) Problems() []alarm.Event {
	var evs []alarm.Event
	switch e.Status {
	case "FAILED":
		evs = append(evs, alarm.EventFailed)
	case "TIMED_OUT":
		evs = append(evs, alarm.EventTimedOut)
	case "LOST":
		evs = append(evs, alarm.EventLost)
	case "EXPIRED", "SKIPPED":
		return []alarm.Event{alarm.EventMissed}
	case StatusWorkflowFailed:
		return []alarm.Event{alarm.EventWorkflowFailed}
	case StatusLateStart:
		return []alarm.Event{alarm.EventLateStart}
	case StatusRunningLong:
		return []alarm.Event{alarm.EventRunningLong}
	default:
		return nil
	}
	if e.Final {
		evs = append(evs, alarm.EventRetriesExhausted)
	}
	return evs
}

// StatusWorkflowFailed is the outbox status of a workflow job's run that
// ended FAILED (package alertoutbox writes it).
const StatusWorkflowFailed = "WORKFLOW_FAILED"

// Succeeded says the end is a success: what closes a job's alerts.
func (e End) Succeeded() bool { return e.Status == "SUCCEEDED" }

// Rule is what Decide needs of a rule.
type Rule struct {
	ID   int64
	Name string
	// JobID and Group scope the rule: a job, a group's jobs (JobID 0), or
	// every job (both zero).
	JobID  int64
	Group  string
	Events []alarm.Event
	// Threshold events within Window open the alert (Window 0: the
	// events since the alert began, however far apart).
	Threshold int
	Window    time.Duration
	// Renotify is how often an open alert that keeps receiving events is
	// told again (0: never; it is told once, and its recovery).
	Renotify time.Duration
	// PauseAfter disables the job when its alert reaches this many
	// events, that is this many problem events without a success between
	// (0: never).
	PauseAfter int
	// SLA is how late a start (late_start) or how long a run
	// (running_long) the rule tolerates.
	SLA        time.Duration
	MutedUntil time.Time
	Channels   []int64
}

// Covers says whether the rule applies to a job.
func (r *Rule) Covers(jobID int64, group string) bool {
	switch {
	case r.JobID != 0:
		return r.JobID == jobID
	case r.Group != "":
		return r.Group == group
	}
	return true
}

// Wants says whether the rule subscribes to one of evs.
func (r *Rule) Wants(evs ...alarm.Event) (alarm.Event, bool) {
	for _, e := range evs {
		if slices.Contains(r.Events, e) {
			return e, true
		}
	}
	return "", false
}

// Alert is a rule's live alert on a job, as Decide reads and writes it.
type Alert struct {
	ID    int64 // 0: not stored yet
	State string
	Count int
	// Recent are the times of the events within the rule's window, while
	// the alert is pending (below its threshold).
	Recent             []time.Time
	FirstAt, LastAt    time.Time
	OpenedAt, ClosedAt time.Time
	NotifiedAt         time.Time
	LastRunID          int64
	LastEvent          alarm.Event
	LastStatus         string
	LastMessage        string
	AckedAt            time.Time
	MutedUntil         time.Time
	// Changed says the engine must write it back.
	Changed bool
	// Pause says the event that was just applied reached the rule's
	// PauseAfter: the engine disables the job.
	Pause bool
}

// Alert states.
const (
	StatePending = "pending"
	StateOpen    = "open"
	StateClosed  = "closed"
)

// Notify is what Decide asks to be sent: one notice per channel of the
// rule.
type Notify struct {
	Event alarm.Event
}

// Decide applies one end to a rule's live alert on the end's job (nil:
// none) at now, and returns the alert as it is after (nil: still none)
// and the notice to send (nil: none).
//
//   - A problem event the rule subscribes to counts: the alert begins
//     pending, and opens when Threshold events fall within Window; opening
//     notifies. Further events only count, unless Renotify has passed
//     since the last notice.
//   - A success closes the alert; an open one that was notified tells
//     its recovery when the rule subscribes to recovered.
//   - A success the rule subscribes to (succeeded) is told on its own.
//   - The event that brings the alert to the rule's PauseAfter sets
//     Pause, silenced or not: the engine disables the job and tells so.
//   - Silence (the rule's or the alert's mute, until a time) and an
//     acknowledgement keep notices back, never the counting: an alert
//     opened in silence is told at its first event after the silence ends.
func Decide(r *Rule, a *Alert, e End, now time.Time) (*Alert, *Notify) {
	if e.Succeeded() {
		return recovery(r, a, e, now)
	}
	ev, ok := r.Wants(e.Problems()...)
	if !ok {
		return a, nil
	}
	if a == nil {
		a = &Alert{State: StatePending, FirstAt: e.At}
	}
	a.Changed = true
	a.Count++
	a.Pause = r.PauseAfter > 0 && a.Count == r.PauseAfter
	a.LastAt, a.LastRunID, a.LastEvent, a.LastStatus, a.LastMessage = e.At, e.RunID, ev, e.Status, e.Message
	silenced := now.Before(r.MutedUntil) || now.Before(a.MutedUntil)
	switch a.State {
	case StatePending:
		a.Recent = append(a.Recent, e.At)
		if r.Window > 0 {
			a.Recent = slices.DeleteFunc(a.Recent, func(t time.Time) bool { return e.At.Sub(t) >= r.Window })
		}
		if len(a.Recent) < max(r.Threshold, 1) {
			return a, nil
		}
		a.State, a.OpenedAt, a.Recent = StateOpen, now, nil
		if silenced {
			return a, nil
		}
		a.NotifiedAt = now
		return a, &Notify{Event: ev}
	case StateOpen:
		if silenced || !a.AckedAt.IsZero() {
			return a, nil
		}
		if a.NotifiedAt.IsZero() || (r.Renotify > 0 && now.Sub(a.NotifiedAt) >= r.Renotify) {
			a.NotifiedAt = now
			return a, &Notify{Event: ev}
		}
	}
	return a, nil
}

func recovery(r *Rule, a *Alert, e End, now time.Time) (*Alert, *Notify) {
	var n *Notify
	if a != nil {
		told := a.State == StateOpen && !a.NotifiedAt.IsZero()
		a.State, a.ClosedAt, a.Changed = StateClosed, now, true
		a.LastAt, a.LastRunID, a.LastStatus, a.LastMessage = e.At, e.RunID, e.Status, e.Message
		a.LastEvent = alarm.EventRecovered
		silenced := now.Before(r.MutedUntil) || now.Before(a.MutedUntil)
		if _, wants := r.Wants(alarm.EventRecovered); told && wants && !silenced {
			n = &Notify{Event: alarm.EventRecovered}
		}
	}
	if n == nil {
		if _, wants := r.Wants(alarm.EventSucceeded); wants && !now.Before(r.MutedUntil) {
			n = &Notify{Event: alarm.EventSucceeded}
		}
	}
	return a, n
}
