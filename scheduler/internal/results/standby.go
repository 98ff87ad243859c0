package results

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"
)

// A standing-by applier looks at the shared consumer every standbyInterval
// and stands in for the active one when it is not keeping up: when events
// waited undelivered at two looks in a row and nobody took any in between
// (the active applier is gone: crashed, paused, cut off from NATS, or no
// scheduler holds shard 0 right now; one look could catch a burst the
// active one is just taking), or when more than standbyBacklog messages
// wait (it is behind). A stand-in consumes for standInFor, then looks again.
// So a crashed active applier's events wait about two looks, until a
// stand-in (and, after the lease's TTL, the next holder of shard 0) takes
// them; what it had taken but not acknowledged comes back after the ack
// wait, as before.
const (
	standbyInterval = time.Second
	standbyBacklog  = 5000
	standInFor      = 10 * time.Second
)

// standby is what a standing-by applier remembers between two looks.
type standby struct {
	cons jetstream.Consumer
	// delivered is the consumer's last delivered stream sequence at the
	// previous look, and waited whether events waited undelivered then.
	delivered uint64
	waited    bool
	// until is when the current stand-in ends.
	until time.Time
}

// needed reports whether this applier is to consume now: during a
// stand-in, or when a look at the consumer starts one. A look that fails
// says no: the next one decides.
func (s *standby) needed(ctx context.Context, log *zap.Logger) bool {
	now := time.Now()
	if now.Before(s.until) {
		return true
	}
	info, err := s.cons.Info(ctx)
	if err != nil {
		if ctx.Err() == nil {
			log.Debug("looking at the events consumer failed", zap.Error(err))
		}
		return false
	}
	waiting := info.NumPending > 0
	stalled := waiting && s.waited && info.Delivered.Stream == s.delivered
	s.delivered, s.waited = info.Delivered.Stream, waiting
	if !stalled && info.NumPending <= standbyBacklog {
		return false
	}
	log.Info("standing in for the active events applier", zap.Uint64("undelivered", info.NumPending),
		zap.Bool("stalled", stalled), zap.Duration("for", standInFor))
	s.until = now.Add(standInFor)
	return true
}
