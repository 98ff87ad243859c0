package wire

import "fmt"

// Status is the state of one run. The transitions are the contract in
// docs/architecture.md ("Run states"):
//
//	SCHEDULED → TRIGGERED → RUNNING → SUCCEEDED | FAILED | TIMED_OUT | CANCELLED
//	SCHEDULED → SKIPPED; TRIGGERED → DISCARDED | EXPIRED | LOST
//
// Transitions are monotonic: a run only moves to a status of higher Rank, so a
// late or repeated event never moves it backwards or out of a terminal state.
type Status string

const (
	StatusScheduled Status = "SCHEDULED"
	StatusTriggered Status = "TRIGGERED"
	StatusRunning   Status = "RUNNING"
	StatusSucceeded Status = "SUCCEEDED"
	StatusFailed    Status = "FAILED"
	StatusTimedOut  Status = "TIMED_OUT"
	StatusCancelled Status = "CANCELLED"
	StatusSkipped   Status = "SKIPPED"
	StatusDiscarded Status = "DISCARDED"
	StatusExpired   Status = "EXPIRED"
	StatusLost      Status = "LOST"
)

// Statuses lists every status, in rank order.
var Statuses = []Status{
	StatusScheduled, StatusTriggered, StatusRunning,
	StatusSucceeded, StatusFailed, StatusTimedOut, StatusCancelled,
	StatusSkipped, StatusDiscarded, StatusExpired, StatusLost,
}

// FailedStatuses are the statuses of a run that failed: the ones that
// retry and alarm, that the dashboard counts as failures and links to.
var FailedStatuses = []Status{StatusFailed, StatusTimedOut, StatusLost}

// Rank orders statuses for monotonic transitions: 0 planned, 1 published,
// 2 running, 3 terminal. Unknown statuses rank -1 and never apply.
func (s Status) Rank() int {
	switch s {
	case StatusScheduled:
		return 0
	case StatusTriggered:
		return 1
	case StatusRunning:
		return 2
	case StatusSucceeded, StatusFailed, StatusTimedOut, StatusCancelled,
		StatusSkipped, StatusDiscarded, StatusExpired, StatusLost:
		return 3
	}
	return -1
}

// Terminal reports whether no further transition can happen.
func (s Status) Terminal() bool { return s.Rank() == 3 }

// Valid reports whether s is a known status.
func (s Status) Valid() bool { return s.Rank() >= 0 }

// ParseStatus validates a status name from outside (API, CLI, messages).
func ParseStatus(v string) (Status, error) {
	s := Status(v)
	if !s.Valid() {
		return "", fmt.Errorf("unknown run status %q (want one of %v)", v, Statuses)
	}
	return s, nil
}
