package joblock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/flowkv"
	"github.com/jetjob/jetjob/shared/wire"
)

// Rate limits (docs/flow-control.md): at most Count starts in any window
// of Period over the runs of a job, of a group, or of a job with one
// concurrency key. The state of one limit is one key of JETJOB_RATES and
// its arithmetic is flowkv.Turn (the workers' and the queue view's one
// copy). A run reserves its turn with one compare-and-set of the state
// (again if another run wrote it meanwhile), then waits until its turn.
//
// Bounded exceptions: the windows hold for turns; a run starts at its
// turn or a moment later (its worker's clock and load), and a run with
// several limits starts at the latest of its turns, later than the others.
// A run killed while it waits leaves its turn unused.

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
		key = flowkv.RateKey(r.Scope, req.Job, req.Group, req.Flow.Key)
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
		if turn, err := ls.reserveOnce(ctx, req, key, r, from); !errors.Is(err, errChanged) {
			return turn, err
		}
	}
}

// reserveOnce is one read and compare-and-set of reserve, in this
// process's turn on the key (turns.go); errChanged: another worker wrote
// the key meanwhile, look again.
func (ls *Locks) reserveOnce(ctx context.Context, req *Request, key string, r wire.Rate, from int64) (int64, error) {
	defer ls.turns.take(key)()
	val, rev, err := ls.read(ctx, key)
	var s flowkv.RateState
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		// rev: 0, or the delete marker's: idle.
	case err != nil:
		return 0, err
	default:
		if err := json.Unmarshal(val, &s); err != nil {
			// Not ours to judge: start over from idle, as an expired
			// state would.
			req.Log.Warn("rate limit state holds garbage; overwriting it", zap.String("lock", key), zap.Error(err))
			s = flowkv.RateState{}
		}
	}
	now := max(time.Now().UnixMilli(), from)
	turn, next := flowkv.Turn(s, now, r)
	if req.Late != nil {
		if why := req.Late(time.UnixMilli(turn)); why != "" {
			return 0, &SkippedError{Rate: r, Scope: r.Scope, Late: why}
		}
	}
	body, _ := json.Marshal(next)
	if _, err := ls.write(ctx, key, body, rev); err != nil {
		return 0, err
	}
	ls.cfg.TestSignals.Turn.Signal(Turn{Run: req.Run, Key: key, At: turn})
	return turn, nil
}
