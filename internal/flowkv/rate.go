package flowkv

import (
	"time"

	"github.com/jetjob/jetjob/shared/wire"
)

// Rate limits: at most Count starts in any window of Period, a burst of
// Count allowed when the limit has been idle. The state of one limit is
// one key (RateKey) of JETJOB_RATES:
//
//	{"tat": 1764000002000, "n": 3}
//
// The arithmetic (Turn) is the generic cell rate algorithm's, with a
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

// RateState is a rate key's value.
type RateState struct {
	// TAT: the theoretical arrival time of the next block, Unix ms.
	TAT int64 `json:"tat"`
	// N: the turns the current block has given.
	N int `json:"n,omitempty"`
}

// Turn is the turn, Unix ms, of a run asking at now under limit r whose
// state is s, and the state that gives it (see above).
func Turn(s RateState, now int64, r wire.Rate) (turn int64, next RateState) {
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

// Use is what a rate limit's state means at a moment: how many runs could
// start at once, and when the next could after those.
type Use struct {
	// Available is how many starts may go now without waiting, 0 to the
	// limit's count.
	Available int
	// NextFreeAt is the turn the next run asking now would get: now when
	// Available > 0.
	NextFreeAt time.Time
}

// UseAt reads limit r's state s at now, by asking Turn as runs would: the
// queue view's figures are the workers' own arithmetic.
func UseAt(r wire.Rate, s RateState, now time.Time) Use {
	nowMS := now.UnixMilli()
	if r.Count < 1 || r.PeriodMS < 1 {
		return Use{NextFreeAt: now}
	}
	turn, next := Turn(s, nowMS, r)
	u := Use{NextFreeAt: time.UnixMilli(turn).UTC()}
	for turn <= nowMS && u.Available < r.Count {
		u.Available++
		turn, next = Turn(next, nowMS, r)
	}
	if u.Available > 0 {
		u.NextFreeAt = now
	}
	return u
}
