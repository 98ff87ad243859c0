package worker

import (
	"cmp"
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/jetjob/jetjob/internal/policy"
	"github.com/jetjob/jetjob/internal/runtrace"
	"github.com/jetjob/jetjob/shared/wire"
)

// Tracing: the worker's part of a run's trace, with the OpenTelemetry API
// only (the host service installs the provider; jetjob-worker installs
// internal/tracing's). Each execution of a trigger records:
//
//   - jetjob.wait: the trigger's time in JetStream, from its stored time
//     (the publish, on the NATS server's clock) to its receipt here;
//   - jetjob.run: the pick-up, from receipt to the trigger's ack (or
//     hand-back), with the run's status;
//   - jetjob.lock: the block strategy's wait for the job lock;
//   - jetjob.handler: the handler, whose context carries this span, so
//     spans a handler starts from it join the run's trace.
//
// jetjob.wait and jetjob.run are children of the scheduler's publish span
// (the trigger's traceparent header); the run events carry jetjob.run's
// context back to the scheduler (runtrace's package doc; package runevents
// writes the header). A nil
// *runTracer is tracing off: nothing is allocated, no header written.

// Span names of the worker's spans.
const (
	SpanWait    = "jetjob.wait"
	SpanRun     = "jetjob.run"
	SpanLock    = "jetjob.lock"
	SpanHandler = "jetjob.handler"
)

type runTracer struct{ tr trace.Tracer }

// newRunTracer returns nil unless tp records spans.
func newRunTracer(tp trace.TracerProvider) *runTracer {
	tp = runtrace.Provider(tp)
	if !runtrace.Enabled(tp) {
		return nil
	}
	return &runTracer{tr: tp.Tracer(runtrace.InstrumentationName)}
}

// runSpan is an execution's tracing state; zero with tracing off.
type runSpan struct {
	span        trace.Span // jetjob.run
	traceparent string     // span's context, for the run's events
}

// parent is a context carrying the run's span, to start its children from.
func (s runSpan) parent() context.Context { return trace.ContextWithSpan(context.Background(), s.span) }

// begin starts r's spans on receipt of msg, and puts the trace id in r's
// log lines.
func (t *runTracer) begin(r *run, msg jetstream.Msg) {
	if t == nil {
		return
	}
	now := time.Now()
	parent := runtrace.WithRun(runtrace.Extract(context.Background(), msg.Headers()), r.trig.RunID)
	ctx, span := t.tr.Start(parent, SpanRun, trace.WithTimestamp(now), trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(
			runtrace.AttrRunID.Int64(r.trig.RunID), runtrace.AttrJobID.Int64(r.trig.JobID),
			runtrace.AttrGroup.String(r.trig.Group), runtrace.AttrHandler.String(r.trig.Handler),
			runtrace.AttrAttempt.Int(r.trig.Attempt), runtrace.AttrDelivery.Int64(int64(r.delivery)),
			runtrace.AttrWorker.String(r.w.cfg.ID), runtrace.AttrSystem.String("nats"),
			runtrace.AttrSubject.String(msg.Subject()), runtrace.AttrSeq.Int64(int64(r.origin.seq)),
		))
	// The wait hangs under the publish span beside the run; a trigger
	// that came without a context has only the run to hang it from.
	if !trace.SpanContextFromContext(parent).IsValid() {
		parent = ctx
	}
	start := r.origin.at
	if start.IsZero() || start.After(now) { // no metadata, or the server's clock ahead of ours
		start = now
	}
	_, wait := t.tr.Start(parent, SpanWait, trace.WithTimestamp(start),
		trace.WithAttributes(runtrace.AttrRunID.Int64(r.trig.RunID), runtrace.AttrDelivery.Int64(int64(r.delivery))))
	wait.End(trace.WithTimestamp(now))
	r.trace = runSpan{span: span, traceparent: runtrace.Traceparent(span.SpanContext())}
	r.log = r.log.With(runtrace.LogField(span))
}

// end ends r's run span; reported says its result was published (else
// the trigger was handed back).
func (t *runTracer) end(r *run, reported bool) {
	if t == nil || r.trace.span == nil {
		return
	}
	if !reported {
		r.trace.span.AddEvent("trigger handed back")
	}
	r.trace.span.End()
}

// noSpanEnd is what the span helpers return with tracing off: a shared
// function, so that a deferred call allocates nothing.
func noSpanEnd(*outcome) {}

// traceLock starts the block strategy's span; the returned function ends
// it with the outcome block returned (nil: the lock is held).
func (r *run) traceLock() func(*outcome) {
	if r.trace.span == nil {
		return noSpanEnd
	}
	_, span := r.w.trace.tr.Start(r.trace.parent(), SpanLock,
		trace.WithAttributes(runtrace.AttrStrategy.String(string(cmp.Or(r.trig.BlockStrategy, policy.DefaultBlock)))))
	return func(out *outcome) {
		if out != nil {
			endWith(span, out)
			return
		}
		span.End()
	}
}

// traceHandler starts the handler's span and returns ctx carrying it (the
// handler's context: a user's spans started from it join the run's
// trace) and the function that ends it with the run's outcome.
func (r *run) traceHandler(ctx context.Context) (context.Context, func(*outcome)) {
	if r.trace.span == nil {
		return ctx, noSpanEnd
	}
	_, span := r.w.trace.tr.Start(r.trace.parent(), SpanHandler,
		trace.WithAttributes(runtrace.AttrHandler.String(r.trig.Handler), runtrace.AttrRunID.Int64(r.trig.RunID)))
	return trace.ContextWithSpan(ctx, span), func(out *outcome) { endWith(span, out) }
}

// endWith ends span with an outcome's status: an error for the statuses
// an operator is alarmed about.
func endWith(span trace.Span, out *outcome) {
	switch {
	case out.handBack != "":
		span.AddEvent("trigger handed back: " + out.handBack)
	case out.status != "":
		span.SetAttributes(runtrace.AttrStatus.String(string(out.status)))
		if failed(out.status) {
			span.SetStatus(codes.Error, out.message)
		}
	}
	span.End()
}

func failed(s wire.Status) bool {
	return s == wire.StatusFailed || s == wire.StatusTimedOut || s == wire.StatusLost
}

// publishEvent publishes one of r's events with r's trace context, and
// records a final status on r's run span.
func (r *run) publishEvent(ev wire.Event) error {
	if span := r.trace.span; span != nil && ev.Kind == wire.EventFinished {
		span.SetAttributes(runtrace.AttrStatus.String(string(ev.Status)))
		if failed(ev.Status) {
			span.SetStatus(codes.Error, ev.Message)
		}
	}
	return r.w.publishEvent(ev, r.trace.traceparent)
}
