// Package runtrace is how a run's trace crosses jetjob's processes: the
// W3C trace context in NATS message headers, the trace id a run's trace
// has, and the switch that keeps tracing off the hot path when nobody
// exports spans.
//
// It imports only the OpenTelemetry API (otel, trace, propagation), never
// the SDK: the worker SDK uses it, and a service embedding a worker should
// not inherit an exporter's dependency tree. The SDK and exporter set-up
// of jetjob's own binaries is internal/tracing.
//
// # Headers
//
// A trigger message (jetjob.trigger.…) may carry `traceparent` (and
// `tracestate`): the context of the scheduler's publish span. An events
// message (jetjob.event.<group>) may carry one `traceparent` value per run
// whose events it holds (NATS headers are multi-valued; a message with the
// events of one run carries exactly one value, the standard shape): the
// context of that run's span on the worker. Receivers match a value to
// its run by trace id (RunTraceID), so the order of the values does not
// matter and a run without a value is simply not linked. Both headers are
// optional: a process with tracing off neither writes nor reads them.
//
// # Trace ids
//
// A run's trace has a trace id derived from the run id (RunTraceID), so an
// operator who has a run id finds its trace without any lookup table, and
// every process that touches the run agrees on it without being told.
//
// A workflow run is one trace: its id is the workflow run's (which is its
// own run's id), its root the workflow run's span, whose span id is
// derived from the run id too (WorkflowSpanID). Each node run's trace is
// that trace, and its publish span a child of the workflow run's span
// (WorkflowParent), so whichever scheduler publishes a node run, at
// whatever time, names the parent without asking anyone; the span itself
// is recorded when the workflow run ends (it spans the whole run).
package runtrace

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"strconv"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/logging"
)

// Header names of the W3C trace context, as they appear in NATS headers
// (NATS header keys are case-sensitive: always these, lower case).
const (
	HeaderTraceparent = "traceparent"
	HeaderTracestate  = "tracestate"
)

// InstrumentationName names jetjob's tracers.
const InstrumentationName = "github.com/jetjob/jetjob"

// initial is the global provider as it was when this package was
// initialised: OpenTelemetry's placeholder, which drops every span until
// a program installs a real provider. Comparing against it is how Enabled
// tells "nobody configured tracing" apart without starting a span.
var initial = otel.GetTracerProvider()

// Enabled reports whether tp records spans at all: false for nil, for
// OpenTelemetry's global placeholder (no provider was installed) and for
// the noop provider. Components call it once, when they are built, and
// keep a nil tracer when it is false, so that with tracing off the hot
// path neither allocates nor writes a header.
func Enabled(tp trace.TracerProvider) bool {
	if tp == nil || tp == initial {
		return false
	}
	switch tp.(type) {
	case noop.TracerProvider, *noop.TracerProvider:
		return false
	}
	return true
}

// Provider returns tp, or the global provider when tp is nil.
func Provider(tp trace.TracerProvider) trace.TracerProvider {
	if tp == nil {
		return otel.GetTracerProvider()
	}
	return tp
}

// RunTraceID is the trace id of run id's trace: the run id big-endian in
// the first 8 bytes (so the hex id begins with the run id in hex: run 1234
// is 00000000000004d2…), and 8 bytes of SHA-256 of "jetjob-run-<id>" in
// the last 8, which look random, as trace-id ratio samplers expect (they
// read those bytes). A run's trace is therefore sampled or not in every
// process alike. Two clusters exporting to one back end share run ids,
// and so trace ids: tell them apart by service.namespace or a resource
// attribute, and search by the span attribute jetjob.run_id.
func RunTraceID(runID int64) trace.TraceID {
	var id trace.TraceID
	binary.BigEndian.PutUint64(id[:8], uint64(runID))
	sum := sha256.Sum256([]byte("jetjob-run-" + strconv.FormatInt(runID, 10)))
	copy(id[8:], sum[:8])
	return id
}

// WorkflowSpanID is the span id of workflow run id's span: 8 bytes of
// SHA-256 of "jetjob-workflow-<id>" (never zero for a positive id; a
// zero result would be invalid, so it is then 1).
func WorkflowSpanID(runID int64) trace.SpanID {
	var sid trace.SpanID
	sum := sha256.Sum256([]byte("jetjob-workflow-" + strconv.FormatInt(runID, 10)))
	copy(sid[:], sum[:8])
	if !sid.IsValid() {
		sid[7] = 1
	}
	return sid
}

// WorkflowParent is the span context of workflow run id's span, as a
// remote parent: the parent of its node runs' publish spans. It is marked
// sampled: a node run's spans are recorded whenever tracing is on (under
// a ratio sampler the workflow run's own span follows the ratio of its
// trace id, RunTraceID, like any run's).
func WorkflowParent(runID int64) trace.SpanContext {
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: RunTraceID(runID), SpanID: WorkflowSpanID(runID),
		TraceFlags: trace.FlagsSampled, Remote: true})
}

type runKey struct{}

type workflowKey struct{}

// WithWorkflow marks ctx as the context of workflow run id's span: a span
// started from it as a new root gets RunTraceID(id) and WorkflowSpanID(id)
// when the provider is internal/tracing's.
func WithWorkflow(ctx context.Context, runID int64) context.Context {
	return context.WithValue(ctx, workflowKey{}, runID)
}

// WorkflowFromContext returns the workflow run WithWorkflow stored in ctx.
func WorkflowFromContext(ctx context.Context) (int64, bool) {
	id, ok := ctx.Value(workflowKey{}).(int64)
	return id, ok
}

// WithRun marks ctx as belonging to run id: a span started from it as a
// new root gets RunTraceID(id) as its trace id when the provider is
// internal/tracing's (its id generator reads RunFromContext).
func WithRun(ctx context.Context, runID int64) context.Context {
	return context.WithValue(ctx, runKey{}, runID)
}

// RunFromContext returns the run WithRun stored in ctx.
func RunFromContext(ctx context.Context) (int64, bool) {
	id, ok := ctx.Value(runKey{}).(int64)
	return id, ok
}

// propagator is the W3C trace context, used explicitly rather than the
// global propagator: the headers are part of jetjob's protocol, whatever
// a host service configures for its own requests.
var propagator = propagation.TraceContext{}

// Header is the part of a NATS header tracing reads and writes (nats.Header
// and what jetstream.Msg.Headers returns are this type).
type Header = map[string][]string

// carrier adapts a NATS header to the propagator. NATS keys are
// case-sensitive, so the propagator's lower-case keys are used as they are.
type carrier Header

func (c carrier) Get(key string) string {
	if v := c[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

func (c carrier) Set(key, value string) { c[key] = []string{value} }

func (c carrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// Inject writes ctx's span context into h (traceparent, and tracestate
// when there is one). Nothing is written for a context without a valid
// span context.
func Inject(ctx context.Context, h Header) {
	propagator.Inject(ctx, carrier(h))
}

// Extract returns ctx with the remote span context h carries, if any.
func Extract(ctx context.Context, h Header) context.Context {
	if len(h[HeaderTraceparent]) == 0 {
		return ctx
	}
	return propagator.Extract(ctx, carrier(h))
}

// Traceparent is the traceparent value of sc, "" when sc is invalid.
func Traceparent(sc trace.SpanContext) string {
	if !sc.IsValid() {
		return ""
	}
	c := carrier{}
	propagator.Inject(trace.ContextWithSpanContext(context.Background(), sc), c)
	return c.Get(HeaderTraceparent)
}

// Parents returns the span contexts of every traceparent value in h, by
// trace id: an events message carries one per run (see the package doc).
// Of values sharing a trace id (node runs of one workflow run) the last
// is kept; ParentList has them all.
func Parents(h Header) map[trace.TraceID]trace.SpanContext {
	list := ParentList(h)
	if len(list) == 0 {
		return nil
	}
	out := make(map[trace.TraceID]trace.SpanContext, len(list))
	for _, sc := range list {
		out[sc.TraceID()] = sc
	}
	return out
}

// ParentList returns the valid span contexts of the traceparent values in
// h, in order.
func ParentList(h Header) []trace.SpanContext {
	values := h[HeaderTraceparent]
	if len(values) == 0 {
		return nil
	}
	out := make([]trace.SpanContext, 0, len(values))
	for _, v := range values {
		sc := trace.SpanContextFromContext(propagator.Extract(context.Background(), carrier{HeaderTraceparent: {v}}))
		if sc.IsValid() {
			out = append(out, sc)
		}
	}
	return out
}

// Span attribute keys jetjob sets on its spans.
const (
	AttrRunID    = attribute.Key("jetjob.run_id")
	AttrJobID    = attribute.Key("jetjob.job_id")
	AttrGroup    = attribute.Key("jetjob.group")
	AttrHandler  = attribute.Key("jetjob.handler")
	AttrAttempt  = attribute.Key("jetjob.attempt")
	AttrDelivery = attribute.Key("jetjob.delivery")
	AttrWorker   = attribute.Key("jetjob.worker_id")
	AttrStatus   = attribute.Key("jetjob.status")
	AttrShard    = attribute.Key("jetjob.shard")
	AttrStrategy = attribute.Key("jetjob.block_strategy")
	AttrTrigger  = attribute.Key("jetjob.trigger_type")
	AttrRuns     = attribute.Key("jetjob.runs")
	AttrWorkflow = attribute.Key("jetjob.workflow_id")
	AttrWfRun    = attribute.Key("jetjob.workflow_run")
	AttrNode     = attribute.Key("jetjob.node")
	AttrSeq      = attribute.Key("messaging.message.id")
	AttrSubject  = attribute.Key("messaging.destination.name")
	AttrSystem   = attribute.Key("messaging.system")
)

// LogField is the trace_id log field of span while it records, and a
// field zap skips otherwise (no cost when tracing is off).
func LogField(span trace.Span) zap.Field {
	if span == nil || !span.IsRecording() {
		return zap.Skip()
	}
	return logging.Trace(span.SpanContext().TraceID().String())
}
