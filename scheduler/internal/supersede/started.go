package supersede

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/logging"
	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/scheduler/internal/foreign"
	"github.com/jetjob/jetjob/scheduler/internal/reqreply"
	"github.com/jetjob/jetjob/shared/wire"
)

// A worker that starts a run publishes its started event, and waits for
// JetStream to store it, before the handler is called. So the started
// event is the run's start claim: if a handler of the run ever started,
// that event is in JETJOB_EVENTS or already applied to job_runs. A
// redelivered trigger reaches another worker only after it was delivered
// before, so any started event of its run was stored before the question
// is asked.
//
// The answer therefore looks in both places, in this order: first the
// events JETJOB_EVENTS still holds up to its last sequence now (not yet
// applied: the work-queue stream removes a message once the results
// applier has committed and acknowledged it), then job_runs. A message
// removed between the two was committed before the second look, so
// nothing falls between them. Waiting for the stream to drain instead
// would wait out the ack wait of any events message a stopping scheduler
// had taken: half a minute, in a rolling restart, for every redelivered
// trigger. Without an answer (PostgreSQL or the stream unreachable, or a
// backlog of events too large to read) it answers with an error and the
// worker asks again: it never guesses.

// Only the events of the run's own group count. A worker credential of
// group a may publish any run id on jetjob.event.a (NATS permissions bind
// subjects, not run ids), so an event there naming group b's run is forged
// or broken: counted as the run's, it could make b's worker acknowledge
// the run's trigger without running it ("terminal") or end it LOST
// ("started on a worker that is gone"). The results applier refuses such
// an event (foreign.Events); the start check must not read it either
// (foreign.StartCheck). So events are read with the group of their
// subject, and job_runs says which group each asked run is of.

// startedSQL reads what job_runs knows of each run's start, and its group.
const startedSQL = `SELECT COALESCE(r.status, ''), COALESCE(r.worker_id, ''), r.started_at, COALESCE(r.group_name, '')
	FROM unnest($1::bigint[], $2::timestamptz[]) WITH ORDINALITY AS q(id, scheduled_at, i)
	LEFT JOIN job_runs r ON r.id = q.id AND r.scheduled_at = q.scheduled_at
	ORDER BY q.i`

// maxUnapplied bounds the events messages one answer reads from the stream;
// a larger backlog (PostgreSQL down for a while) is waited out.
const maxUnapplied = 5000

// startedTimeout bounds one answer: the worker asks again after it.
const startedTimeout = 3 * time.Second

// errBacklog says the events waiting to be applied are too many to read.
var errBacklog = errors.New("too many run events waiting to be applied")

// ServeStarted answers start checks (wire.StartRequest on
// stream.StartCheck) until ctx ends.
func ServeStarted(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, pool *pgxpool.Pool, log *zap.Logger) error {
	log = log.Named("started")
	return reqreply.Serve(ctx, nc, stream.StartCheck, func(ctx context.Context, m *nats.Msg) {
		var reply wire.StartReply
		var req wire.StartRequest
		if err := wire.DecodeControl(m.Data, &req); err != nil {
			reply.Error = err.Error()
		} else if runs, err := started(ctx, js, pool, req.Queries, log); err != nil {
			log.Warn("start check not answered; the worker asks again", zap.Int("queries", len(req.Queries)), zap.Error(err))
			reply.Error = err.Error()
		} else {
			reply.Runs = runs
		}
		reqreply.Respond(m, &reply, log)
	})
}

// started answers qs from the unapplied events, then from job_runs. An
// unapplied event counts only for a run of the group its subject names
// (see startedSQL); one of another group is logged and counted.
func started(ctx context.Context, js jetstream.JetStream, pool *pgxpool.Pool, qs []wire.StartQuery, log *zap.Logger) ([]wire.RunStart, error) {
	ctx, cancel := context.WithTimeout(ctx, startedTimeout)
	defer cancel()
	asked := make(map[int64]bool, len(qs))
	for _, q := range qs {
		asked[q.RunID] = true
	}
	pending, err := unapplied(ctx, js, asked)
	if err != nil {
		return nil, fmt.Errorf("read unapplied events: %w", err)
	}
	ids, scheduled := make([]int64, len(qs)), make([]time.Time, len(qs))
	for i, q := range qs {
		ids[i], scheduled[i] = q.RunID, q.ScheduledAt
	}
	rows, _ := pool.Query(ctx, startedSQL, ids, scheduled)
	groups := make([]string, 0, len(qs))
	runs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (wire.RunStart, error) {
		var r wire.RunStart
		var at *time.Time
		var group string
		err := row.Scan(&r.Status, &r.WorkerID, &at, &group)
		if at != nil {
			r.StartedAt = at.UTC()
		}
		groups = append(groups, group)
		return r, err
	})
	if err != nil {
		return nil, fmt.Errorf("read runs: %w", err)
	}
	own := make(map[pendingKey]bool, len(qs))
	for i, q := range qs {
		k := pendingKey{q.RunID, groups[i]}
		own[k] = true
		if p, ok := pending[k]; ok {
			runs[i] = merge(runs[i], p)
		}
	}
	for k := range pending {
		if !own[k] {
			foreign.Refused(foreign.StartCheck)
			log.Warn("start check: unapplied events for a run that does not exist in their subject's group: ignored",
				logging.Run(k.run), zap.String("subject", stream.Event(k.group)))
		}
	}
	return runs, nil
}

// pendingKey is an asked run as the events of one group's subject name it.
type pendingKey struct {
	run   int64
	group string
}

// merge adds what unapplied events say of a run to what job_runs says.
func merge(r, p wire.RunStart) wire.RunStart {
	if p.Status.Rank() > r.Status.Rank() {
		r.Status = p.Status
	}
	if r.StartedAt.IsZero() && !p.StartedAt.IsZero() {
		r.StartedAt, r.WorkerID = p.StartedAt, p.WorkerID
	}
	return r
}

// unapplied reads the events messages JETJOB_EVENTS holds now and returns
// what they say of the asked runs, per group of their subject: the first
// start (worker, time) and the highest status.
func unapplied(ctx context.Context, js jetstream.JetStream, asked map[int64]bool) (map[pendingKey]wire.RunStart, error) {
	s, err := js.Stream(ctx, stream.Events)
	if err != nil {
		return nil, err
	}
	info, err := s.Info(ctx, jetstream.WithDeletedDetails(true))
	if err != nil {
		return nil, err
	}
	st := info.State
	out := map[pendingKey]wire.RunStart{}
	if st.Msgs == 0 {
		return out, nil
	}
	if st.Msgs > maxUnapplied {
		return nil, fmt.Errorf("%w: %d messages", errBacklog, st.Msgs)
	}
	deleted := make(map[uint64]bool, len(st.Deleted))
	for _, seq := range st.Deleted {
		deleted[seq] = true
	}
	for seq := st.FirstSeq; seq <= st.LastSeq; seq++ {
		if deleted[seq] {
			continue
		}
		m, err := s.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue // applied since the info
		}
		if err != nil {
			return nil, err
		}
		group, ok := stream.ParseEvent(m.Subject)
		if !ok {
			continue // the applier terminates it: it names no group
		}
		evs, err := wire.DecodeEvents(m.Data)
		if err != nil {
			continue // the applier terminates it: it says nothing
		}
		note(out, asked, group, evs)
	}
	return out, nil
}

// note adds to out what evs, which came on group's subject, say of the
// asked runs: the first start (worker, time) and the highest status.
func note(out map[pendingKey]wire.RunStart, asked map[int64]bool, group string, evs []wire.Event) {
	for _, e := range evs {
		if !asked[e.RunID] {
			continue
		}
		k := pendingKey{e.RunID, group}
		p := out[k]
		if e.Kind == wire.EventStarted && (p.StartedAt.IsZero() || e.At.Before(p.StartedAt)) {
			p.StartedAt, p.WorkerID = e.At.UTC(), e.WorkerID
		}
		if e.Status.Rank() > p.Status.Rank() {
			p.Status = e.Status
		}
		out[k] = p
	}
}
