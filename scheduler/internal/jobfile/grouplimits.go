package jobfile

import (
	"strconv"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/shared/wire"
)

// A group's cap and rate limit (max_running, rate_limit) are declared
// configuration, like a job's max_concurrency: a group the file declares
// under groups: has the limits the file gives it (left out: none), and
// apply sets them on an existing group (PATCH /groups/{name}, an
// operator's right). Its title, handlers and pause are not changed:
// the pause is an operation with a note (docs/flow-control.md).

// GroupChange is the plan for one existing group whose limits differ.
type GroupChange struct {
	Name  string      `json:"group"`
	Diffs []FieldDiff `json:"diffs"`
	// Limits are the file's, to send.
	Limits apiv1.GroupLimitsRequest `json:"-"`
}

// groupLimitsDiff compares a declared group's limits with the cluster's
// group cur; a rate the file writes unreadably is a problem at line.
func groupLimitsDiff(probs *problems, line int, path string, cur, file apiv1.Group) *GroupChange {
	if file.MaxRunning < 0 || file.MaxRunning > wire.MaxConcurrencyLimit {
		probs.add(line, path+".max_running", "max_running %d is out of range: 0 (no cap) to %d", file.MaxRunning, wire.MaxConcurrencyLimit)
		return nil
	}
	want, err := wire.ParseRate(file.RateLimit)
	if err != nil {
		probs.add(line, path+".rate_limit", "%v", err)
		return nil
	}
	have, err := wire.ParseRate(cur.RateLimit)
	if err != nil { // the server writes what it reads: not expected
		have = wire.Rate{}
	}
	c := &GroupChange{Name: file.Name}
	if cur.MaxRunning != file.MaxRunning {
		n := file.MaxRunning
		c.Limits.MaxRunning = &n
		c.Diffs = append(c.Diffs, FieldDiff{Field: "max_running", Old: strconv.Itoa(cur.MaxRunning), New: strconv.Itoa(n)})
	}
	if have.Count != want.Count || have.PeriodMS != want.PeriodMS {
		r := want.String()
		c.Limits.RateLimit = &r
		c.Diffs = append(c.Diffs, FieldDiff{Field: "rate_limit", Old: strconv.Quote(have.String()), New: strconv.Quote(r)})
	}
	if len(c.Diffs) == 0 {
		return nil
	}
	return c
}
