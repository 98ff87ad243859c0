// Package flowqueue reads what JETJOB_LOCKS holds for a group's cap and
// rate limit (docs/flow-control.md, "Keys in JETJOB_LOCKS"): the shapes of
// the values, the order of the waiters and what a rate's theoretical
// arrival time means now. The workers write these keys
// (worker/internal/joblock: slots.go and kv.go hold the slots shape, the
// rate limits' code the rate cell); the scheduler only reads them, for the
// group's queue view (GET /api/v1/groups/{name}/queue). No I/O here.
package flowqueue

import (
	"cmp"
	"slices"
	"time"

	"github.com/jetjob/jetjob/shared/wire"
)

// GroupSlotsKey is the key of a group's cap: its slots and its waiters.
func GroupSlotsKey(group string) string { return "group." + group + "_slots" }

// GroupRateKey is the key of a group's rate limit.
func GroupRateKey(group string) string { return "rate.group." + group }

// Slots is the value of a slots key, as joblock writes it (its value type
// with Slots and Queue; the single-holder fields never appear in a slots
// key):
//
//	{"slots": [{"run": 17, "worker": "w1", "beat": 3}], "queue": [{"run": 19, "at": 1764300000000, "worker": "w2", "beat": 1, "p": 5}]}
type Slots struct {
	Slots []Holder `json:"slots,omitempty"`
	Queue []Waiter `json:"queue,omitempty"`
}

// Holder is a run holding one slot (joblock's slotHolder).
type Holder struct {
	Run    int64  `json:"run"`
	Worker string `json:"worker"`
	// Beat counts the holder's refreshes.
	Beat int64 `json:"beat,omitempty"`
}

// Waiter is a run waiting for a slot (joblock's waiter, with the priority
// a group's or a key's waiters carry).
type Waiter struct {
	Run int64 `json:"run"`
	// At is the run's fire time, Unix ms.
	At     int64  `json:"at"`
	Worker string `json:"worker,omitempty"`
	Beat   int64  `json:"beat,omitempty"`
	// P is the run's priority (wire.Flow.Priority): higher goes first.
	P int `json:"p,omitempty"`
}

// RateCell is the value of a rate key: the generic cell rate algorithm's
// theoretical arrival time.
//
//	{"tat": 1764300000000}
type RateCell struct {
	// TAT is Unix ms.
	TAT int64 `json:"tat"`
}

// Order sorts waiters in the order they get a slot: priority (higher
// first), then fire time, then run id, as the workers take them.
func Order(ws []Waiter) {
	slices.SortStableFunc(ws, func(a, b Waiter) int {
		return cmp.Or(cmp.Compare(b.P, a.P), cmp.Compare(a.At, b.At), cmp.Compare(a.Run, b.Run))
	})
}

// Rate is what a rate limit's theoretical arrival time means at now.
type Rate struct {
	// Available is how many starts may go at now without waiting, 0 to
	// the limit's count.
	Available int
	// NextFreeAt is when the next start may go: now when Available > 0.
	NextFreeAt time.Time
}

// RateAt reads a rate limit r's theoretical arrival time tat (Unix ms; 0
// for none) at now. Each start moves tat on by one emission interval
// (period/count) from max(tat, now); a start may go at t when it leaves
// tat at most one period after t, so count starts may go at once after a
// quiet period, then one per interval.
func RateAt(r wire.Rate, tat int64, now time.Time) Rate {
	if r.Count < 1 || r.PeriodMS < 1 {
		return Rate{NextFreeAt: now}
	}
	nowMS := now.UnixMilli()
	from := max(tat, nowMS)
	// The k-th start now leaves tat at from + k*interval, allowed while
	// that is at most now + period: k <= (now + period - from) / interval,
	// in whole ms multiplied out to keep the interval exact.
	n := int((nowMS + r.PeriodMS - from) * int64(r.Count) / r.PeriodMS)
	n = min(max(n, 0), r.Count)
	if n > 0 {
		return Rate{Available: n, NextFreeAt: now}
	}
	// The next start goes when from + interval <= t + period.
	next := from + ceilDiv(r.PeriodMS, int64(r.Count)) - r.PeriodMS
	return Rate{NextFreeAt: time.UnixMilli(max(next, nowMS)).UTC()}
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }
