package joblock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/shared/wire"
)

// Rate limits: at most Count starts in any window of Period, a burst of
// Count allowed when the limit has been idle, over the runs of a job, of a
// group, or of a job with one concurrency key. The state of one limit is
// one key of JETJOB_RATES (rate.job.<jobID>, rate.group.<group>,
// rate.key.<jobID>.<h>; a bucket of its own because the state must
// outlive its period, up to wire.MaxRatePeriod, and JETJOB_LOCKS forgets a
// key after stream.LockTTL):
//
//	{"tat": 1764000002000, "n": 3}
//
// A run reserves its turn with one compare-and-set of that value (again
// if another run wrote it meanwhile), then waits until its turn. The
// arithmetic (rateTurn) is the generic cell rate algorithm's, with a
// theoretical arrival time tat, made exact for windows: the starts are
// taken in blocks of at most Count, and a block begins no earlier than a
// period after the last turn of the block before, so that no window of a
// period holds starts of two blocks. tat is when the next block may begin
// (the last turn given + Period), n how many turns the current block has
// given. A run asking at now:
//
//   - now ≥ tat (idle: no turn in the last period): its turn is now and
//     it begins a block (n = 1);
//   - n < Count: it joins the block, its turn the block's last turn or
//     now, whichever is later;
//   - n = Count: its turn is tat, where it begins the next block.
//
// and tat becomes its turn + Period. A plain GCRA with a burst of Count
// (tolerance Period − Period/Count) lets up to 2·Count − 1 runs start in
// one period (a burst, then one every Period/Count), which the contract
// forbids. The price of blocks: runs arriving just under the rate, spread
// over the period, may wait up to a period when a block fills (their
// throughput drops towards half the rate in the worst case); bursts and
// steady overload get the full rate. A state past its tat is the same as
// none, so the key may expire (stream.RateTTL, longer than any period).
//
// Bounded exceptions: the windows hold for turns; a run starts at its
// turn or a moment later (its worker's clock and load), and a run with
// several limits starts at the latest of its turns, later than the others.
// A run killed while it waits leaves its turn unused.

// ratePrefix starts the keys of rate limits (bucketOf).
const ratePrefix = "rate."

// rateState is a rate key's value.
type rateState struct {
	// TAT: the theoretical arrival time of the next block, Unix ms.
	TAT int64 `json:"tat"`
	// N: the turns the current block has given.
	N int `json:"n,omitempty"`
}

// rateTurn is the turn, Unix ms, of a run asking at now under limit r
// whose state is s, and the state that gives it (see above).
func rateTurn(s rateState, now int64, r wire.Rate) (turn int64, next rateState) {
	switch {
	case now >= s.TAT:
		turn, s.N = now, 1
	case s.N < r.Count:
		turn = max(now, s.TAT-r.PeriodMS)
		s.N++
	default:
		turn, s.N = s.TAT, 1
	}
	s.TAT = turn + r.PeriodMS
	return turn, s
}

// RateKey is the key of a rate limit of scope for a run of job (group,
// concurrency key as its run's flow names them).
func RateKey(scope wire.RateScope, job int64, group, key string) string {
	switch scope {
	case wire.RateGroup:
		return ratePrefix + "group." + group
	case wire.RateKey:
		return ratePrefix + "key." + strconv.FormatInt(job, 10) + "." + KeyHash(key)
	}
	return ratePrefix + "job." + strconv.FormatInt(job, 10)
}

// SkippedError is Acquire's answer for a run whose turn under a rate limit
// lies past its misfire threshold, and whose misfire policy ends such a
// run (Request.Late): it takes no turn and ends SKIPPED.
type SkippedError struct {
	Rate  wire.Rate
	Late  string // Request.Late's message
	Scope wire.RateScope
}

func (e *SkippedError) Error() string {
	return fmt.Sprintf("rate limit %s %s: %s", e.Scope, e.Rate, e.Late)
}

// rateOrder is the order a run's limits are reserved in: its job's, its
// key's, its group's (narrow to wide, as the slots).
var rateOrder = []wire.RateScope{wire.RateJob, wire.RateKey, wire.RateGroup}

// takeTurn reserves the run's turn under each of its rate limits, each
// from the turn the one before gave, then waits until the last: until the
// run may start. Interrupt and ctx end the wait.
func (ls *Locks) takeTurn(ctx context.Context, req *Request) error {
	rates := slices.Clone(req.Flow.Rates)
	slices.SortStableFunc(rates, func(a, b wire.Rate) int {
		return slices.Index(rateOrder, a.Scope) - slices.Index(rateOrder, b.Scope)
	})
	turn := time.Now().UnixMilli()
	var key string
	for _, r := range rates {
		if r.Scope == wire.RateKey && !req.Flow.HasKey || r.Scope == wire.RateGroup && req.Group == "" {
			continue
		}
		key = RateKey(r.Scope, req.Job, req.Group, req.Flow.Key)
		t, err := ls.reserve(ctx, req, key, r, turn)
		if err != nil {
			return err
		}
		turn = t
	}
	at := time.UnixMilli(turn)
	if time.Until(at) <= 0 {
		return nil
	}
	req.flowWaited(WaitRate, key)
	req.Log.Debug("run waits for its turn under a rate limit", zap.Time("turn", at))
	for {
		if err := req.interrupted(ctx, key); err != nil {
			return err
		}
		d := time.Until(at)
		if d <= 0 {
			return nil
		}
		t := time.NewTimer(min(d, ls.poll))
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
}

// reserve takes the run's turn under limit r (key) for a start no earlier
// than from (Unix ms): one compare-and-set, again if it lost a race. A turn
// past the run's misfire threshold whose policy ends it is not taken: a
// *SkippedError.
func (ls *Locks) reserve(ctx context.Context, req *Request, key string, r wire.Rate, from int64) (int64, error) {
	for {
		if err := ctx.Err(); err != nil {
			return 0, fmt.Errorf("rate limit %s: %w", key, err)
		}
		val, rev, err := ls.read(ctx, key)
		var s rateState
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
			// rev: 0, or the delete marker's: idle.
		case err != nil:
			return 0, err
		default:
			if err := json.Unmarshal(val, &s); err != nil {
				// Not ours to judge: start over from idle, as an
				// expired state would.
				req.Log.Warn("rate limit state holds garbage; overwriting it", zap.String("lock", key), zap.Error(err))
				s = rateState{}
			}
		}
		now := max(time.Now().UnixMilli(), from)
		turn, next := rateTurn(s, now, r)
		if req.Late != nil {
			if why := req.Late(time.UnixMilli(turn)); why != "" {
				return 0, &SkippedError{Rate: r, Scope: r.Scope, Late: why}
			}
		}
		body, _ := json.Marshal(next)
		if _, err := ls.write(ctx, key, body, rev); err == nil {
			ls.cfg.TestSignals.Turn.Signal(Turn{Run: req.Run, Key: key, At: turn})
			return turn, nil
		} else if !errors.Is(err, errChanged) {
			return 0, err
		}
	}
}
