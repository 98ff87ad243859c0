package secrets

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/logging"
	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/scheduler/internal/reqreply"
	"github.com/jetjob/jetjob/shared/wire"
)

// Resolver gives a worker of group the secrets of run id (scheduled at
// at) that it runs as worker (store.RunSecrets), or an error saying why
// not. It authorizes the request: the run must be group's and not ended;
// what it answers is what the run's job references.
type Resolver func(ctx context.Context, group string, id int64, at time.Time, worker string) (env, values map[string]string, err error)

// ErrRefused marks a Resolver's error that the worker may be told as it
// is (the run is not one it may ask about): anything else is answered as
// "look-up failed" and logged here.
var ErrRefused = errors.New("refused")

// answerTimeout bounds one answer; the worker waits a little longer.
const answerTimeout = 5 * time.Second

// Serve answers the workers' requests for secrets (wire.SecretsRequest on
// stream.SecretsSubject(group), for every group, in the schedulers' queue
// group: one scheduler answers each) until ctx ends. The group is taken
// from the subject, which NATS permissions bind to the worker's
// credential, never from the request. Without a keyring every request is
// answered with ErrNoKey's words, so a run fails saying what to configure.
func Serve(ctx context.Context, nc *nats.Conn, resolve Resolver, log *zap.Logger) error {
	log = log.Named("secrets")
	return reqreply.Serve(ctx, nc, stream.Secrets+".*", func(ctx context.Context, m *nats.Msg) {
		reqreply.Respond(m, answer(ctx, m, resolve, log), log)
	})
}

func answer(ctx context.Context, m *nats.Msg, resolve Resolver, log *zap.Logger) *wire.SecretsReply {
	var req wire.SecretsRequest
	if err := wire.DecodeControl(m.Data, &req); err != nil {
		return &wire.SecretsReply{Error: err.Error()}
	}
	group, ok := stream.ParseSecrets(m.Subject)
	if !ok || !wire.ValidName(group) {
		return &wire.SecretsReply{Error: "not a secrets subject of a group"}
	}
	ctx, cancel := context.WithTimeout(ctx, answerTimeout)
	defer cancel()
	env, values, err := resolve(ctx, group, req.RunID, req.ScheduledAt, req.WorkerID)
	switch {
	case errors.Is(err, ErrNoKey):
		return &wire.SecretsReply{Error: ErrNoKey.Error()}
	case errors.Is(err, ErrRefused):
		log.Warn("secrets refused", logging.Run(req.RunID), zap.String("group", group), zap.String("worker", req.WorkerID), zap.Error(err))
		return &wire.SecretsReply{Error: err.Error()}
	case err != nil:
		log.Warn("secrets look-up failed", logging.Run(req.RunID), zap.String("group", group), zap.Error(err))
		return &wire.SecretsReply{Error: "the scheduler could not read the run's secrets (see its log)"}
	}
	return &wire.SecretsReply{Env: env, Values: values}
}
