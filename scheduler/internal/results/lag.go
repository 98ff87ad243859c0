package results

import (
	"context"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetjob/jetjob/internal/stream"
)

// Lag measures how far the events applier is behind, for the planner's
// admission (package planner, admit.go): how long the oldest run event
// not yet applied has waited in JETJOB_EVENTS.
//
// JETJOB_EVENTS is a work queue: a message leaves it when an applier acks
// it, after the transaction that applied it committed. So the stream's
// first message is the oldest event not yet applied, and its age — the
// time the server answered minus the time it stored the message, two
// readings of one clock — is the applier's lag, whichever scheduler
// applies. One stream info a look, nothing per event.
//
// A lag is reported only while the applier makes progress: when the
// stream's first message stayed the same for stallAfter (nobody applies:
// no scheduler holds shard 0 and no stand-in has taken over yet, the
// applier is being restarted, or a message waits for its redelivery after
// the process that held it died), Sample says 0. Planning waits for an
// applier that is slow, never for one that is away: that would stop every
// fire for what only delays the recording of results, which wait durably
// in the stream. A look that fails says 0 as well.
type Lag struct {
	js    jetstream.JetStream
	every time.Duration
	now   func() time.Time

	mu     sync.Mutex
	stream jetstream.Stream
	looked time.Time     // when the last look was made
	lag    time.Duration // what it found
	first  uint64        // the stream's first sequence then
	moved  time.Time     // when the first sequence was last seen to change
}

// Lag's timing: a look at most every lagEvery (the planner asks before
// every shard, 64 times a pass by default), and an applier whose oldest
// event has not moved for stallAfter counts as away. One batch applied
// under a loaded PostgreSQL takes up to a few hundred milliseconds.
const (
	lagEvery   = 200 * time.Millisecond
	stallAfter = 5 * time.Second
)

// NewLag returns a Lag reading JETJOB_EVENTS through js.
func NewLag(js jetstream.JetStream) *Lag {
	return &Lag{js: js, every: lagEvery, now: time.Now}
}

// Sample returns the applier's lag, looking at the stream when the last
// look is older than lagEvery.
func (l *Lag) Sample(ctx context.Context) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if !l.looked.IsZero() && now.Sub(l.looked) < l.every {
		return l.lag
	}
	l.looked = now
	info, err := l.info(ctx)
	if err != nil {
		l.lag = 0
		return 0
	}
	l.lag = l.judge(info.State, info.TimeStamp, now)
	return l.lag
}

// Last is what the last look found, without looking (a metric).
func (l *Lag) Last() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lag
}

// judge turns one look at the stream's state into the lag: the age of its
// first message at the server's time at (the local time now when the
// server sent none), or 0 when the stream is empty or its first message
// has not moved for stallAfter.
func (l *Lag) judge(st jetstream.StreamState, at, now time.Time) time.Duration {
	if st.Msgs == 0 || st.FirstTime.IsZero() || st.FirstSeq != l.first || l.moved.IsZero() {
		// Empty (the next message's sequence is the first's: it has
		// not moved, and must not count as stalled), or moved.
		l.first, l.moved = st.FirstSeq, now
	}
	if st.Msgs == 0 || st.FirstTime.IsZero() || now.Sub(l.moved) >= stallAfter {
		return 0
	}
	if at.IsZero() {
		at = now
	}
	return max(0, at.Sub(st.FirstTime))
}

// info reads the stream's state, looking the stream up once.
func (l *Lag) info(ctx context.Context) (*jetstream.StreamInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if l.stream == nil {
		s, err := l.js.Stream(ctx, stream.Events)
		if err != nil {
			return nil, err
		}
		l.stream = s
	}
	return l.stream.Info(ctx)
}
