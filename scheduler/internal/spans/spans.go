// Package spans records the scheduler's part of each run's trace:
//
//   - jetjob.plan: one span per planning batch (one transaction of one
//     shard that planned runs), in a trace of its own: planning is done
//     for thousands of runs at once, so a span per run would cost more
//     than it tells. The publish span of each run it planned links to it.
//   - jetjob.publish: the root of the run's trace (trace id
//     runtrace.RunTraceID), from the publish of its trigger to
//     JetStream's acknowledgement; its context travels to the worker in
//     the trigger's traceparent header. A node run's publish span is
//     instead a child of its workflow run's span, in the workflow run's
//     trace (runtrace.WorkflowParent).
//   - jetjob.workflow: a workflow run, from its start to its end, the
//     root of its trace (trace id and span id derived from the workflow
//     run's id), recorded by whichever scheduler ends the run, after the
//     commit that ended it.
//   - jetjob.apply: one per status change the results applier commits,
//     from the start of the batch's write to its commit, a child of the
//     worker's span named by the events message's traceparent.
//
// A nil *Tracer is tracing off: every method returns at once, allocates
// nothing and writes no header. New returns nil unless a real tracer
// provider is installed, so components call the methods unconditionally.
package spans

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/jetjob/jetjob/internal/runtrace"
	"github.com/jetjob/jetjob/scheduler/internal/runs"
	"github.com/jetjob/jetjob/shared/wire"
)

// Span names.
const (
	NamePlan     = "jetjob.plan"
	NamePublish  = "jetjob.publish"
	NameApply    = "jetjob.apply"
	NameWorkflow = "jetjob.workflow"
	// NameWorkflowReopened is a workflow run's end after a re-opening.
	NameWorkflowReopened = "jetjob.workflow.reopened"
)

// Tracer makes the scheduler's spans; nil is off.
type Tracer struct {
	tr    trace.Tracer
	plans planLinks
}

// New returns a tracer on tp (nil: the global provider), or nil when tp
// records nothing (runtrace.Enabled).
func New(tp trace.TracerProvider) *Tracer {
	tp = runtrace.Provider(tp)
	if !runtrace.Enabled(tp) {
		return nil
	}
	return &Tracer{tr: tp.Tracer(runtrace.InstrumentationName)}
}

// Planned records a planning batch of shard that started at start and
// committed its runs now, and remembers its span for the runs' publish spans.
func (t *Tracer) Planned(ctx context.Context, shard int, start time.Time, batch []runs.Planned) {
	if t == nil || len(batch) == 0 {
		return
	}
	_, span := t.tr.Start(ctx, NamePlan, trace.WithTimestamp(start), trace.WithNewRoot(),
		trace.WithAttributes(runtrace.AttrShard.Int(shard), runtrace.AttrRuns.Int(len(batch))))
	span.End()
	if sc := span.SpanContext(); sc.IsValid() {
		t.plans.add(batch, sc, time.Now())
	}
}

// Publish starts run r's publish span, a new root in the run's trace,
// and writes its context into the trigger's header h. End it with
// Published.
func (t *Tracer) Publish(r *runs.Planned, subject string, h runtrace.Header) trace.Span {
	if t == nil {
		return nil
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(
			runtrace.AttrRunID.Int64(r.RunID), runtrace.AttrJobID.Int64(r.JobID),
			runtrace.AttrGroup.String(r.Group), runtrace.AttrHandler.String(r.Handler),
			runtrace.AttrTrigger.String(string(r.TriggerType)), runtrace.AttrAttempt.Int(r.Attempt),
			runtrace.AttrShard.Int(r.Shard), attribute.String("jetjob.scheduled_at", r.ScheduledAt.UTC().Format(time.RFC3339Nano)),
			runtrace.AttrSystem.String("nats"), runtrace.AttrSubject.String(subject),
		)}
	if sc, ok := t.plans.take(r.RunID); ok {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
	}
	parent := runtrace.WithRun(context.Background(), r.RunID)
	if r.WorkflowRun != 0 {
		parent = trace.ContextWithRemoteSpanContext(parent, runtrace.WorkflowParent(r.WorkflowRun))
		opts = append(opts, trace.WithAttributes(runtrace.AttrWfRun.Int64(r.WorkflowRun)))
	} else {
		opts = append(opts, trace.WithNewRoot())
	}
	ctx, span := t.tr.Start(parent, NamePublish, opts...)
	runtrace.Inject(ctx, h)
	return span
}

// Published ends a publish span: acknowledged as stream sequence seq, or
// failed with err.
func (t *Tracer) Published(span trace.Span, seq uint64, err error) {
	if span == nil {
		return
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	} else {
		span.SetAttributes(runtrace.AttrSeq.Int64(int64(seq)))
	}
	span.End()
}

// CopyHeader copies the trace context of from into to: a re-publish of a
// trigger carries the context of its first publish.
func CopyHeader(to, from runtrace.Header) {
	for _, k := range [...]string{runtrace.HeaderTraceparent, runtrace.HeaderTracestate} {
		if v, ok := from[k]; ok {
			to[k] = v
		}
	}
}

// Batch collects the trace contexts of one batch of events messages;
// nil when tracing is off.
func (t *Tracer) Batch() *Batch {
	if t == nil {
		return nil
	}
	return &Batch{t: t, start: time.Now()}
}

// Batch is one batch of the results applier.
type Batch struct {
	t       *Tracer
	start   time.Time
	parents map[trace.TraceID]trace.SpanContext
	// shared are the traces in which the batch's messages named more
	// than one span.
	shared map[trace.TraceID]bool
}

// Message reads the traceparent values of one events message.
func (b *Batch) Message(h runtrace.Header) {
	if b == nil {
		return
	}
	for _, sc := range runtrace.ParentList(h) {
		id := sc.TraceID()
		if b.parents == nil {
			b.parents = make(map[trace.TraceID]trace.SpanContext)
		}
		if prev, seen := b.parents[id]; seen && prev.SpanID() != sc.SpanID() {
			if b.shared == nil {
				b.shared = make(map[trace.TraceID]bool)
			}
			b.shared[id] = true // a workflow run's node runs, or one run's two executions
		}
		b.parents[id] = sc
	}
}

// Writing marks the start of the batch's database write.
func (b *Batch) Writing() {
	if b != nil {
		b.start = time.Now()
	}
}

// Applied records that the batch, now committed, moved run runID (of
// job jobID; of workflow run workflowRun, 0 for none) to status: a span
// in the run's trace, the child of the worker's span when the events
// message named it. A node run's trace is its workflow run's, which the
// spans of the workflow's other node runs share: when the batch's
// messages named more than one span in it, which is this run's is not
// known, and the apply span hangs under the workflow run's span instead.
func (b *Batch) Applied(runID, jobID, workflowRun int64, status wire.Status) {
	if b == nil {
		return
	}
	ctx := runtrace.WithRun(context.Background(), runID)
	opts := []trace.SpanStartOption{trace.WithTimestamp(b.start), trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(runtrace.AttrRunID.Int64(runID), runtrace.AttrJobID.Int64(jobID),
			runtrace.AttrStatus.String(string(status)))}
	traceRun := runID
	if workflowRun != 0 {
		traceRun = workflowRun
	}
	id := runtrace.RunTraceID(traceRun)
	switch sc, ok := b.parents[id]; {
	case ok && (workflowRun == 0 || !b.shared[id]):
		ctx = trace.ContextWithRemoteSpanContext(ctx, sc)
	case workflowRun != 0:
		ctx = trace.ContextWithRemoteSpanContext(ctx, runtrace.WorkflowParent(workflowRun))
	default:
		opts = append(opts, trace.WithNewRoot())
	}
	_, span := b.t.tr.Start(ctx, NameApply, opts...)
	span.End()
}

// WorkflowEnded is a workflow run that ended: run id (its own run's),
// of workflow workflowID in group, that started at started (zero: it
// never started, and has no span) and ended now with status.
type WorkflowEnded struct {
	RunID, WorkflowID int64
	Group, Status     string
	Started           time.Time
	// Reopened is how often the run was re-opened before this end.
	Reopened int
}

// WorkflowsEnded records the span of each workflow run of ended, the
// root of its trace, from its start to now: called after the commit that
// ended them. The node runs' publish spans, recorded earlier, name it as
// their parent by its derived ids (runtrace.WorkflowParent). A run
// re-opened after its end (retry from failed) ends again: that end's span
// (jetjob.workflow.reopened, from the re-opening) is a child of the
// workflow span, which keeps the ids of the first.
func (t *Tracer) WorkflowsEnded(ended []WorkflowEnded) {
	if t == nil {
		return
	}
	now := time.Now()
	for _, e := range ended {
		if e.Started.IsZero() {
			continue
		}
		ctx, name, root := runtrace.WithWorkflow(context.Background(), e.RunID), NameWorkflow, trace.WithNewRoot()
		if e.Reopened > 0 {
			ctx = trace.ContextWithRemoteSpanContext(context.Background(), runtrace.WorkflowParent(e.RunID))
			name, root = NameWorkflowReopened, trace.WithAttributes()
		}
		_, span := t.tr.Start(ctx, name, root, trace.WithTimestamp(e.Started),
			trace.WithAttributes(runtrace.AttrRunID.Int64(e.RunID), runtrace.AttrWfRun.Int64(e.RunID),
				runtrace.AttrWorkflow.Int64(e.WorkflowID), runtrace.AttrGroup.String(e.Group),
				runtrace.AttrStatus.String(e.Status)))
		if e.Status != "SUCCEEDED" {
			span.SetStatus(codes.Error, "workflow run "+e.Status)
		}
		span.End(trace.WithTimestamp(now))
	}
}

// planLinks remembers which planning batch planned a run until the run is
// published, for the publish span's link. Runs this scheduler never
// publishes (its lease moved, the job was edited) are forgotten within two
// rotations.
type planLinks struct {
	mu       sync.Mutex
	cur, old map[int64]trace.SpanContext
	rotated  time.Time
}

// planLinkRotation is how long a run's planning batch is remembered at
// least: longer than the planning window, so every run published on time
// finds it.
const planLinkRotation = time.Minute

func (p *planLinks) add(batch []runs.Planned, sc trace.SpanContext, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cur == nil || now.Sub(p.rotated) > planLinkRotation {
		p.old, p.cur, p.rotated = p.cur, make(map[int64]trace.SpanContext, len(batch)), now
	}
	for i := range batch {
		p.cur[batch[i].RunID] = sc
	}
}

func (p *planLinks) take(runID int64) (trace.SpanContext, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range [...]map[int64]trace.SpanContext{p.cur, p.old} {
		if sc, ok := m[runID]; ok {
			delete(m, runID)
			return sc, true
		}
	}
	return trace.SpanContext{}, false
}
