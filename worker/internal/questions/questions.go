// Package questions asks the schedulers what a worker cannot know by
// itself, from PostgreSQL: whether a redelivered run had started somewhere
// (jetjob.sched.started, the start check) and whether a late fire_once
// trigger is superseded by a newer fire (jetjob.sched.supersede). Both are
// request/reply to the schedulers' queue group, batched (package
// groupcommit): the redeliveries after a worker's death, or a replayed
// backlog of late triggers, are asked about in a few requests, not one per
// trigger. What the answers mean for a run is the worker's to decide
// (worker/started.go, worker/misfire.go).
package questions

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/shared/wire"
	"github.com/jetjob/jetjob/worker/internal/groupcommit"
)

const (
	// startTimeout bounds one start-check request.
	startTimeout = 5 * time.Second
	// supersedeTimeout bounds one supersede request. Without an answer (no
	// scheduler up, PostgreSQL down) the trigger runs: fire_once errs
	// towards running a fire, never towards losing the newest.
	supersedeTimeout = 2 * time.Second
	// maxAsks bounds the requests of each kind on their way at once.
	maxAsks = 4
)

// ErrStopped is the answer to a question asked after the Asker stopped.
var ErrStopped = errors.New("questions to the schedulers stopped")

// Asker asks the schedulers for one worker.
type Asker struct {
	nc        *nats.Conn
	log       *zap.Logger
	starts    *groupcommit.Batcher[*startAsk]
	supersede *groupcommit.Batcher[*supersedeAsk]
	done      chan struct{}
	// SupersedeTimeout bounds one supersede request (default 2 s); set it
	// before Run. Tests that hold a question open lengthen it.
	SupersedeTimeout time.Duration
}

type startAsk struct {
	q   wire.StartQuery
	res chan startAnswer
}

type startAnswer struct {
	run wire.RunStart
	err error
}

// supersedeAsk is one query waiting for its answer: the newer run, 0 for
// none, -1 for no answer.
type supersedeAsk struct {
	q   wire.SupersedeQuery
	res chan int64
}

// New returns an Asker on nc; its Run must be started, and outlive every
// run.
func New(nc *nats.Conn, log *zap.Logger) *Asker {
	a := &Asker{nc: nc, log: log, done: make(chan struct{}), SupersedeTimeout: supersedeTimeout}
	a.starts = groupcommit.New(wire.MaxStartQueries, maxAsks, a.sendStarts,
		func(s *startAsk) { s.res <- startAnswer{err: ErrStopped} })
	a.supersede = groupcommit.New(wire.MaxSupersedeQueries, maxAsks, a.sendSupersede,
		func(s *supersedeAsk) { s.res <- -1 })
	return a
}

// Run asks until ctx ends, which also bounds every request; questions
// queued then get no answer. It returns once every request under way has
// returned.
func (a *Asker) Run(ctx context.Context) {
	defer close(a.done)
	go a.starts.Run(ctx)
	a.supersede.Run(ctx)
	<-a.starts.Done()
}

// Done is closed once Run has returned.
func (a *Asker) Done() <-chan struct{} { return a.done }

// Started asks whether run q had started (the start check); an error means
// no certain answer, to be asked again later.
func (a *Asker) Started(q wire.StartQuery) (wire.RunStart, error) {
	s := &startAsk{q: q, res: make(chan startAnswer, 1)}
	ans, ok := groupcommit.Await(a.starts, s, s.res)
	if !ok {
		return wire.RunStart{}, ErrStopped
	}
	return ans.run, ans.err
}

func (a *Asker) sendStarts(ctx context.Context, batch []*startAsk) {
	req := wire.StartRequest{Queries: make([]wire.StartQuery, len(batch))}
	for i, s := range batch {
		req.Queries[i] = s.q
	}
	var reply wire.StartReply
	err := a.ask(ctx, stream.StartCheck, &req, &reply, startTimeout)
	if err == nil && len(reply.Runs) != len(batch) {
		err = fmt.Errorf("start check: %d answers for %d queries", len(reply.Runs), len(batch))
	}
	for i, s := range batch {
		if err != nil {
			s.res <- startAnswer{err: err}
		} else {
			s.res <- startAnswer{run: reply.Runs[i]}
		}
	}
}

// Superseded asks whether a newer fire of q's job supersedes q's run under
// fire_once, and returns that run (0 for none); answered is false when no
// scheduler answered.
func (a *Asker) Superseded(q wire.SupersedeQuery) (by int64, answered bool) {
	s := &supersedeAsk{q: q, res: make(chan int64, 1)}
	by, ok := groupcommit.Await(a.supersede, s, s.res)
	if !ok || by < 0 {
		return 0, false
	}
	return by, true
}

// sendSupersede sends one request for batch and gives each query its
// answer (-1 where there is none).
func (a *Asker) sendSupersede(ctx context.Context, batch []*supersedeAsk) {
	req := wire.SupersedeRequest{Queries: make([]wire.SupersedeQuery, len(batch))}
	for i, s := range batch {
		req.Queries[i] = s.q
	}
	var reply wire.SupersedeReply
	err := a.ask(ctx, stream.Supersede, &req, &reply, a.SupersedeTimeout)
	if err == nil && len(reply.By) != len(batch) {
		err = fmt.Errorf("%d answers for %d queries", len(reply.By), len(batch))
	}
	if err != nil {
		a.log.Warn("schedulers did not say whether late fire_once triggers are superseded; running them",
			zap.Int("triggers", len(batch)), zap.Error(err))
	}
	for i, s := range batch {
		if err != nil {
			s.res <- -1
		} else {
			s.res <- reply.By[i]
		}
	}
}

// secretsTimeout bounds one request for a run's secrets.
const secretsTimeout = 5 * time.Second

// Secrets asks the schedulers for the secrets of a run of group that this
// worker runs (wire.SecretsRequest, on the group's own subject). Not
// batched: only runs of jobs that reference secrets ask, once each.
func (a *Asker) Secrets(ctx context.Context, group string, req wire.SecretsRequest) (*wire.SecretsReply, error) {
	var reply wire.SecretsReply
	if err := a.ask(ctx, stream.SecretsSubject(group), &req, &reply, secretsTimeout); err != nil {
		return nil, err
	}
	return &reply, nil
}

// mapOutputsTimeout bounds one request for a page of a reduce run's
// parts' outputs.
const mapOutputsTimeout = 10 * time.Second

// MapOutputs asks the schedulers for a page of the parts' outputs a reduce
// run of group reduces (wire.MapOutputsRequest, on the group's own
// subject). Not batched: a reduce run asks a few pages, once.
func (a *Asker) MapOutputs(ctx context.Context, group string, req wire.MapOutputsRequest) (*wire.MapOutputsReply, error) {
	var reply wire.MapOutputsReply
	if err := a.ask(ctx, stream.MapOutputsSubject(group), &req, &reply, mapOutputsTimeout); err != nil {
		return nil, err
	}
	return &reply, nil
}

// ask sends req to the schedulers' queue group on subject and decodes
// their answer into reply; an answer with an error is an error.
func (a *Asker) ask(ctx context.Context, subject string, req, reply any, timeout time.Duration) error {
	data, err := wire.EncodeControl(req)
	if err != nil {
		return fmt.Errorf("encode question on %s: %w", subject, err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	msg, err := a.nc.RequestWithContext(ctx, subject, data)
	if err != nil {
		return fmt.Errorf("ask the schedulers on %s: %w", subject, err)
	}
	if err := wire.DecodeControl(msg.Data, reply); err != nil {
		return fmt.Errorf("answer on %s: %w", subject, err)
	}
	var e string
	switch r := reply.(type) {
	case *wire.StartReply:
		e = r.Error
	case *wire.SupersedeReply:
		e = r.Error
	case *wire.SecretsReply:
		e = r.Error
	case *wire.MapOutputsReply:
		e = r.Error
	}
	if e != "" {
		return fmt.Errorf("schedulers on %s: %s", subject, e)
	}
	return nil
}
