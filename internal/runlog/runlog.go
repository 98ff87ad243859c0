// Package runlog reads the log lines of runs from JETJOB_LOGS, where
// workers publish them as their handlers log (see worker.Job.Logger), and
// purges a deleted run's (Purge).
//
// Lines are addressed by their JetStream stream sequence (Cursor): a run
// redelivered to another worker logs again from its own line 1, but the
// stream sequence orders every line of every execution, so "from cursor N"
// means the same thing while the run lasts and after it ends. Lines are kept
// for the log stream's max age (stream.Config.LogMaxAge, 30 days by default).
//
// A run's lines are read from its own group's subject only
// (stream.Log(group, runID)): a group's worker credential may publish on
// jetjob.log.<its group>.* with any run id, so a line on another group's
// subject naming this run was written by a worker that never ran it, and
// must not show in its log.
package runlog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/shared/wire"
)

// Line is one log line with its cursor.
type Line struct {
	wire.LogLine
	// Cursor is the line's stream sequence; pass Cursor+1 as "from" to
	// read what follows.
	Cursor uint64 `json:"cursor"`
}

// Reader reads run logs.
type Reader struct {
	js jetstream.JetStream
	// Idle is how long Follow waits for more lines after the run ended
	// before it returns (default 2 s: the worker flushes before reporting).
	Idle time.Duration
}

// New returns a reader.
func New(js jetstream.JetStream) *Reader { return &Reader{js: js, Idle: 2 * time.Second} }

func (r *Reader) consumer(ctx context.Context, group string, runID int64, from uint64) (jetstream.Consumer, error) {
	if !wire.ValidName(group) {
		return nil, fmt.Errorf("read logs of run %d: group %q is not a valid name", runID, group)
	}
	cfg := jetstream.OrderedConsumerConfig{
		FilterSubjects:    []string{stream.Log(group, runID)},
		DeliverPolicy:     jetstream.DeliverAllPolicy,
		InactiveThreshold: time.Minute,
	}
	if from > 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, from
	}
	c, err := r.js.OrderedConsumer(ctx, stream.Logs, cfg)
	if err != nil {
		return nil, fmt.Errorf("read logs of run %d: %w", runID, err)
	}
	return c, nil
}

// Read returns up to limit lines of run runID of group from cursor from (0:
// the first). next is the cursor to read on from (see nextCursor).
func (r *Reader) Read(ctx context.Context, group string, runID int64, from uint64, limit int) (lines []Line, next uint64, err error) {
	c, err := r.consumer(ctx, group, runID, from)
	if err != nil {
		return nil, 0, err
	}
	info, err := c.Info(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("read logs of run %d: %w", runID, err)
	}
	pending := int(info.NumPending)
	if pending == 0 {
		return nil, from, nil
	}
	batch, err := c.Fetch(min(limit, pending), jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		return nil, 0, fmt.Errorf("read logs of run %d: %w", runID, err)
	}
	var last uint64 // the last message read, a line or not
	for m := range batch.Messages() {
		md, err := m.Metadata()
		if err != nil {
			continue
		}
		last = max(last, md.Sequence.Stream)
		if l, ok := line(m.Data(), md.Sequence.Stream); ok {
			lines = append(lines, l)
		}
	}
	next = nextCursor(last, from)
	if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
		return lines, next, fmt.Errorf("read logs of run %d: %w", runID, err)
	}
	return lines, next, nil
}

// nextCursor is where a read from cursor from reads on: past the last
// message it read (last, 0 for none), or from again when it read none (a
// reader polling a quiet run does not start over). Past the last message,
// not the last line: a page of messages that are not log lines must not
// be read again and again.
func nextCursor(last, from uint64) uint64 {
	if last == 0 {
		return from
	}
	return max(last+1, from)
}

// Follow emits the lines of run runID of group from cursor from as they
// arrive, until ctx ends, emit fails, or ended reports that the run is over
// and no line came for Idle.
func (r *Reader) Follow(ctx context.Context, group string, runID int64, from uint64, ended func(context.Context) bool, emit func(Line) error) error {
	c, err := r.consumer(ctx, group, runID, from)
	if err != nil {
		return err
	}
	it, err := c.Messages()
	if err != nil {
		return fmt.Errorf("follow logs of run %d: %w", runID, err)
	}
	defer it.Stop()
	for {
		wait, cancel := context.WithTimeout(ctx, r.Idle)
		m, err := it.Next(jetstream.NextContext(wait))
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
			if ended(ctx) {
				return nil
			}
			continue
		case err != nil:
			return fmt.Errorf("follow logs of run %d: %w", runID, err)
		}
		if l, ok := decode(m); ok {
			if err := emit(l); err != nil {
				return err
			}
		}
	}
}

// decode turns a message into a line; a malformed one is skipped (it was
// not written by a jetjob worker, and must not stop the reader).
func decode(m jetstream.Msg) (Line, bool) {
	md, err := m.Metadata()
	if err != nil {
		return Line{}, false
	}
	return line(m.Data(), md.Sequence.Stream)
}

// line is the log line data stored at stream sequence seq; false when data
// is not a log line.
func line(data []byte, seq uint64) (Line, bool) {
	ll, err := wire.DecodeLogLine(data)
	if err != nil {
		return Line{}, false
	}
	return Line{LogLine: *ll, Cursor: seq}, true
}

// Purge deletes every log line of run runID of group (a deleted run's):
// the stream's messages on the run's subject, whichever execution wrote
// them.
func (r *Reader) Purge(ctx context.Context, group string, runID int64) error {
	if !wire.ValidName(group) {
		return fmt.Errorf("purge logs of run %d: group %q is not a valid name", runID, group)
	}
	s, err := r.js.Stream(ctx, stream.Logs)
	if err != nil {
		return fmt.Errorf("purge logs of run %d: %w", runID, err)
	}
	if err := s.Purge(ctx, jetstream.WithPurgeSubject(stream.Log(group, runID))); err != nil {
		return fmt.Errorf("purge logs of run %d: %w", runID, err)
	}
	return nil
}
