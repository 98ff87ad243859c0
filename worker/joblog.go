package worker

import (
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/shared/wire"
)

// Job log lines.
//
// job.Logger writes to the worker's own logger and, through a tee, to the
// run's subject on JETJOB_LOGS, where the API, CLI and console tail it.
// Publishing is asynchronous (PublishAsync): a handler never waits for
// JetStream, at most logStallWait when too many lines are already in flight,
// after which the line is dropped and counted rather than slowing the run.
// Every line of an execution gets the next Seq, also the dropped ones, so a
// reader sees a gap where a line is missing. Every level is published,
// whatever the worker's own log level: the run log is the handler's output.

const (
	// logStallWait bounds how long a log call may wait for room among the
	// in-flight async publishes.
	logStallWait = 50 * time.Millisecond
	// logFlushWait bounds how long a finished run waits for its lines to be
	// stored before reporting its result, so that the log is complete when
	// the result is visible.
	logFlushWait = 2 * time.Second
	// maxLogLineBytes cuts very long lines; one line must fit a NATS message.
	maxLogLineBytes = 16 << 10
)

// runLog publishes the log lines of one execution of a run.
type runLog struct {
	w       *Worker
	subject string
	runID   int64
	jobID   int64

	mu      sync.Mutex
	seq     int64
	pending []jetstream.PubAckFuture // not yet known to be stored, oldest first
	dropped int64
	// mask replaces the run's secrets (secrets.go); nil without any.
	mask *strings.Replacer
}

// setMask makes every line published from now on masked with m.
func (l *runLog) setMask(m *strings.Replacer) {
	l.mu.Lock()
	l.mask = m
	l.mu.Unlock()
}

func newRunLog(w *Worker, runID, jobID int64) *runLog {
	return &runLog{w: w, subject: stream.Log(w.cfg.Group, runID), runID: runID, jobID: jobID}
}

// publish sends one line without waiting for JetStream. The lock keeps Seq
// order and send order the same.
func (l *runLog) publish(at time.Time, level zapcore.Level, msg string) {
	if len(msg) > maxLogLineBytes {
		msg = msg[:maxLogLineBytes] + " …[truncated]"
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mask != nil {
		msg = l.mask.Replace(msg)
	}
	l.seq++
	line := wire.LogLine{RunID: l.runID, JobID: l.jobID, Seq: l.seq, At: at, Level: level.String(), Msg: msg}
	data, err := wire.EncodeLogLine(&line)
	if err == nil {
		l.prune()
		var f jetstream.PubAckFuture
		f, err = l.w.js.PublishAsync(l.subject, data, jetstream.WithStallWait(logStallWait))
		if err == nil {
			l.pending = append(l.pending, f)
			return
		}
	}
	l.dropped++
	l.w.counts.logDropped.Add(1)
}

// prune forgets the futures at the front that have completed, so that a
// long run does not keep one per line.
func (l *runLog) prune() {
	i := 0
	for ; i < len(l.pending); i++ {
		if !futureDone(l.pending[i]) {
			break
		}
	}
	l.pending = l.pending[i:]
}

func futureDone(f jetstream.PubAckFuture) bool {
	select {
	case <-f.Ok():
		return true
	case <-f.Err():
		return true // counted by the worker's async error handler
	default:
		return false
	}
}

// flush waits, at most logFlushWait, until the lines sent so far are stored
// or have failed, and returns how many lines were dropped on this side.
func (l *runLog) flush() int64 {
	l.mu.Lock()
	pending := l.pending
	l.pending = nil
	dropped := l.dropped
	l.mu.Unlock()
	t := time.NewTimer(logFlushWait)
	defer t.Stop()
	for _, f := range pending {
		select {
		case <-f.Ok():
		case <-f.Err():
		case <-t.C:
			return dropped
		}
	}
	return dropped
}

// logger returns base with a tee that also publishes to the run log. base
// already carries the run's fields; the run log does not repeat them, as
// every wire.LogLine names its run.
func (l *runLog) logger(base *zap.Logger) *zap.Logger {
	pub := &logCore{LevelEnabler: zapcore.DebugLevel, out: l}
	l.mu.Lock()
	mask := l.mask
	l.mu.Unlock()
	return base.WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core {
		if mask != nil {
			c = &maskCore{Core: c, mask: mask}
		}
		return zapcore.NewTee(c, pub)
	}))
}

// newLogEncoder renders a line's fields. No time, level or message keys:
// the encoder renders the fields only; the rest are wire.LogLine fields.
func newLogEncoder() zapcore.Encoder {
	return zapcore.NewJSONEncoder(zapcore.EncoderConfig{
		EncodeTime:     zapcore.ISO8601TimeEncoder,
		EncodeDuration: zapcore.StringDurationEncoder,
	})
}

// logCore is the zapcore.Core that turns entries into run log lines:
// "message {"field":"value",...}".
type logCore struct {
	zapcore.LevelEnabler
	// enc holds the fields added by With; nil until the first: every run
	// gets a logger and most never log, so the encoder is made when needed.
	enc zapcore.Encoder
	out *runLog
}

func (c *logCore) With(fields []zapcore.Field) zapcore.Core {
	var enc zapcore.Encoder
	if c.enc != nil {
		enc = c.enc.Clone()
	} else {
		enc = newLogEncoder()
	}
	for _, f := range fields {
		f.AddTo(enc)
	}
	return &logCore{LevelEnabler: c.LevelEnabler, enc: enc, out: c.out}
}

func (c *logCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

// Write never returns an error: zap would print it on stderr for every line
// while NATS is unreachable. Drops are counted instead.
func (c *logCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	msg := e.Message
	enc := c.enc
	if enc == nil {
		enc = newLogEncoder()
	}
	if buf, err := enc.EncodeEntry(zapcore.Entry{}, fields); err == nil {
		if f := strings.TrimSpace(buf.String()); f != "{}" && f != "" {
			msg += " " + f
		}
		buf.Free()
	}
	if e.Stack != "" {
		msg += "\n" + e.Stack
	}
	c.out.publish(e.Time, e.Level, msg)
	return nil
}

func (c *logCore) Sync() error { return nil }
