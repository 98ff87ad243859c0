// Package flowkv is what the workers write, and the schedulers read, in
// the key-value buckets behind the flow controls (docs/flow-control.md,
// "Keys in JETJOB_LOCKS and JETJOB_RATES"): the keys' names, the JSON
// shapes of a slots key's holders and waiters, the order waiters get a
// slot in, and a rate limit's state with its arithmetic. The workers'
// locks (worker/internal/joblock) take and give back slots and turns with
// it; the scheduler's queue view (GET /api/v1/groups/{name}/queue) reads
// them with it, so both sides agree by construction. No I/O here.
package flowkv

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"strconv"

	"github.com/jetjob/jetjob/shared/wire"
)

// SlotsSuffix ends the key of a slots lock: a capped concurrent job's
// (job.<jobID>_slots), a group's cap, a concurrency key's.
const SlotsSuffix = "_slots"

// RatePrefix starts the keys of rate limits, which live in their own
// bucket (stream.BucketOf).
const RatePrefix = "rate."

// GroupSlotsKey is the key of a group's cap, group.<group>_slots. A group
// name is one key token ([A-Za-z0-9_-], wire.CheckName).
func GroupSlotsKey(group string) string { return "group." + group + SlotsSuffix }

// KeySlotsKey is the key of the slots of one concurrency key of a job,
// key.<jobID>.<h>_slots, h the key's hash (KeyHash).
func KeySlotsKey(job int64, key string) string {
	return "key." + strconv.FormatInt(job, 10) + "." + KeyHash(key) + SlotsSuffix
}

// KeyHash is a concurrency key as the keys of the buckets name it: the
// first 16 hex digits of its SHA-256, so that any value (up to
// wire.MaxKeyBytes of anything) makes one valid key token.
func KeyHash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:8])
}

// RateKey is the key of a rate limit of scope for a run of job (group,
// concurrency key as its run's flow names them): rate.job.<jobID>,
// rate.group.<group>, rate.key.<jobID>.<h>.
func RateKey(scope wire.RateScope, job int64, group, key string) string {
	switch scope {
	case wire.RateGroup:
		return RatePrefix + "group." + group
	case wire.RateKey:
		return RatePrefix + "key." + strconv.FormatInt(job, 10) + "." + KeyHash(key)
	}
	return RatePrefix + "job." + strconv.FormatInt(job, 10)
}

// Waiter is a run waiting for a lock or a slot, as the lock's value lists
// it in "queue":
//
//	{"run": 19, "at": 1764300000000, "p": 5, "worker": "w2", "beat": 1}
type Waiter struct {
	Run int64 `json:"run"`
	At  int64 `json:"at"` // fire time, Unix ms
	// P is the run's priority (wire.Flow.Priority): in a slots queue,
	// higher goes first (ByTurn). Job locks' queues keep fire order.
	P      int    `json:"p,omitempty"`
	Worker string `json:"worker,omitempty"`
	// Beat counts the waiter's refreshes of its place (every TTL/3), so
	// that the place of a waiter whose worker died is given up, and a key
	// some run waits for never expires.
	Beat int64 `json:"beat,omitempty"`
}

// Holder is a run holding one slot, as the value lists it in "slots":
//
//	{"run": 17, "worker": "w1", "beat": 3}
type Holder struct {
	Run    int64  `json:"run"`
	Worker string `json:"worker"`
	Beat   int64  `json:"beat,omitempty"`
}

// Slots is the value of a slots key ({"slots": [...], "queue": [...]}); a
// reader's view of it (joblock's own value type has the single-holder
// fields too, which a slots key never uses).
type Slots struct {
	Slots []Holder `json:"slots,omitempty"`
	Queue []Waiter `json:"queue,omitempty"`
}

// ByFire orders waiters by fire time, then run id: a job's own lock.
func ByFire(a, b Waiter) int {
	return cmp.Or(cmp.Compare(a.At, b.At), cmp.Compare(a.Run, b.Run))
}

// ByTurn orders the waiters for slots: priority (higher first), then fire
// time, then run id. All the waiters of a job's max_concurrency slots
// usually share the job's priority, so they keep fire order; a group's
// cap or a concurrency key's serves several jobs, or manual triggers that
// carry another priority, and lets the higher priority through first.
func ByTurn(a, b Waiter) int {
	return cmp.Or(cmp.Compare(b.P, a.P), ByFire(a, b))
}
