// Package policy holds the per-job strategy enums shared by scheduler and
// worker: what to do with a missed fire, how to pick a worker, and what to do
// when a trigger arrives while the job is still running.
package policy

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Misfire says what happens to a fire found later than the misfire threshold.
type Misfire string

const (
	// MisfireSkip records missed fires as SKIPPED (xxl-job DO_NOTHING).
	MisfireSkip Misfire = "skip"
	// MisfireFireOnce runs one catch-up trigger now (xxl-job FIRE_ONCE_NOW).
	MisfireFireOnce Misfire = "fire_once"
	// MisfireFireAll runs every missed fire, capped by max_catchup.
	MisfireFireAll Misfire = "fire_all"
)

// DefaultMisfire is used when a job names none.
const DefaultMisfire = MisfireFireOnce

// ParseMisfire validates a misfire policy; "" means the default.
func ParseMisfire(s string) (Misfire, error) {
	return parseEnum("misfire_policy", s, DefaultMisfire, MisfireSkip, MisfireFireOnce, MisfireFireAll)
}

// Route picks the worker(s) a trigger goes to.
type Route string

const (
	RouteAny               Route = "any" // shared queue consumer, load-balanced by NATS
	RouteFirst             Route = "first"
	RouteLast              Route = "last"
	RouteRound             Route = "round"
	RouteRandom            Route = "random"
	RouteConsistentHash    Route = "consistent_hash"
	RouteLFU               Route = "lfu"
	RouteLRU               Route = "lru"
	RouteFailover          Route = "failover"
	RouteBusyover          Route = "busyover"
	RouteShardingBroadcast Route = "sharding_broadcast"
)

// MaxShards is the largest fixed shard count of a job (sharding.total):
// a fire runs as that many parts, whatever the route strategy picks.
const MaxShards = 1000

// Shards validates a fixed shard count and returns it as stored: 0 and 1
// (one run per fire) become 0, 2..MaxShards stay. A count is refused
// with route sharding_broadcast, whose part count is its live workers'.
func Shards(total int, route Route) (int, error) {
	switch {
	case total < 0 || total > MaxShards:
		return 0, fmt.Errorf("sharding.total %d: want 2 to %d (0 or 1: not sharded)", total, MaxShards)
	case total <= 1:
		return 0, nil
	case route == RouteShardingBroadcast:
		return 0, fmt.Errorf("sharding.total %d is refused with route_strategy sharding_broadcast: a broadcast runs one part per live worker; use route any with a fixed count, or the broadcast without one", total)
	}
	return total, nil
}

// DefaultRoute is used when a job names none.
const DefaultRoute = RouteAny

// ParseRoute validates a route strategy; "" means the default.
func ParseRoute(s string) (Route, error) {
	return parseEnum("route_strategy", s, DefaultRoute, RouteAny, RouteFirst, RouteLast, RouteRound, RouteRandom,
		RouteConsistentHash, RouteLFU, RouteLRU, RouteFailover, RouteBusyover, RouteShardingBroadcast)
}

// Block says what happens when a trigger arrives while a run of the same job
// is active anywhere in the group. It applies between fires: the parts of
// one sharding-broadcast fire never block each other (a part is judged
// against the same part index of earlier fires, see worker/internal/joblock).
type Block string

const (
	BlockSerial       Block = "serial"        // wait, in order
	BlockDiscardLater Block = "discard_later" // the new trigger ends DISCARDED
	BlockCoverEarly   Block = "cover_early"   // the active run is cancelled
	// BlockBufferOne (Temporal's BufferOne) lets one trigger wait behind
	// the active run, as serial does; a trigger arriving while one waits
	// already ends DISCARDED. A job that runs long is then caught up once,
	// not once per fire it overran.
	BlockBufferOne Block = "buffer_one"
	// BlockConcurrent lets runs overlap (Temporal's AllowAll, Kubernetes'
	// Allow); with a job's max_concurrency N at most N run at once and the
	// others wait, in fire order, as with serial.
	BlockConcurrent Block = "concurrent"
)

// DefaultBlock is used when a job names none.
const DefaultBlock = BlockSerial

// ParseBlock validates a block strategy; "" means the default.
func ParseBlock(s string) (Block, error) {
	return parseEnum("block_strategy", s, DefaultBlock, BlockSerial, BlockDiscardLater, BlockCoverEarly, BlockBufferOne, BlockConcurrent)
}

// parseEnum validates a value of one of a job's strategies: "" is def, a
// value in valid is itself, anything else an error naming the field and
// every valid value, which come from the one list so they cannot drift
// from what is accepted.
func parseEnum[T ~string](field, s string, def T, valid ...T) (T, error) {
	if s == "" {
		return def, nil
	}
	if slices.Contains(valid, T(s)) {
		return T(s), nil
	}
	want := make([]string, len(valid))
	for i, v := range valid {
		want[i] = string(v)
	}
	last := len(want) - 1
	return "", fmt.Errorf("unknown %s %q (want %s or %s)", field, s, strings.Join(want[:last], ", "), want[last])
}

// Retry defaults: a job that names no backoff retries with exponential
// delays from DefaultRetryInitial, capped at DefaultRetryMax (or at its
// initial delay when that is longer).
const (
	DefaultRetryBackoff = "exponential"
	DefaultRetryInitial = time.Second
	DefaultRetryMax     = 5 * time.Minute
)
