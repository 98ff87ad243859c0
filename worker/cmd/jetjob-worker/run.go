package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/backoff"
	"github.com/jetjob/jetjob/internal/egress"
	"github.com/jetjob/jetjob/internal/gctune"
	"github.com/jetjob/jetjob/internal/logging"
	"github.com/jetjob/jetjob/internal/natsconn"
	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/internal/tracing"
	"github.com/jetjob/jetjob/internal/version"
	"github.com/jetjob/jetjob/worker"
	"github.com/jetjob/jetjob/worker/builtin"
)

// provisionAttempt bounds one attempt to reach JetStream at start.
const provisionAttempt = 2 * time.Second

// run connects, waits for JetStream and runs the worker until ctx ends.
// The metrics and probes server (probes.go) runs from the connection to
// the end of the stop.
func run(ctx context.Context, o *options) (err error) {
	log, err := logging.New(o.logFormat, o.logLevel)
	if err != nil {
		return usageError{Err: err}
	}
	defer log.Sync() //nolint:errcheck
	stopTracing, err := tracing.Start(ctx, "jetjob-worker", log)
	if err != nil {
		return usageError{Err: err}
	}
	defer stopTracing() // after Run: flushes the spans of the stop too
	defer gctune.Start(ctx, log)()

	handlers, _ := o.handlerList() // validated
	urls := natsconn.Redacted(o.nats.URL)
	if o.verifier != nil {
		log.Info("running only triggers signed by the schedulers' keys", zap.Strings("trigger_key_ids", o.verifier.KeyIDs()),
			zap.Bool("accept_unsigned", o.acceptUnsigned))
	} else {
		log.Warn("running unsigned triggers: anyone who may publish on this group's trigger subjects can run its handlers",
			zap.String("setting", o.set.Name("insecure-accept-unsigned-triggers")))
	}
	log.Info("jetjob-worker starting", logging.Group(o.group), zap.Strings("handlers", handlers),
		zap.String("nats_url", urls), zap.String("version", version.Get().String()),
		zap.Strings("settings", o.set.Values()))
	conn := o.nats
	conn.Name = "jetjob-worker " + o.group
	conn.ReconnectWait = time.Second
	// Replies come to the group's own inboxes, which a least-privilege
	// credential of the group may subscribe to (stream.WorkerPermissions).
	conn.InboxPrefix = stream.WorkerInboxPrefix(o.group)
	nc, err := natsconn.Connect(conn, log)
	if err != nil {
		return err
	}
	defer nc.Close()
	var pr *probes
	if o.metricsListen != "" {
		if pr, err = startProbes(o.metricsListen, o.metricsToken, nc, o.group, log); err != nil {
			return err
		}
		defer func() {
			if serr := pr.stop(); serr != nil {
				err = errors.Join(err, serr)
			}
		}()
		// Not ready from the moment the stop begins: the worker takes no
		// trigger from then on.
		stopped := context.AfterFunc(ctx, func() { pr.stopping.Store(true) })
		defer stopped()
	}

	streams := stream.Config{Replicas: o.replicas}
	if err := waitForJetStream(ctx, nc, streams, urls, log); err != nil {
		log.Info("stopped before NATS JetStream was reachable")
		return nil
	}

	cfg := worker.Config{
		NATS: nc, Group: o.group, ID: o.id, Concurrency: o.concurrency, AckWait: o.ackWait,
		MaxDeliver: o.maxDeliver, ShutdownGrace: o.shutdownGrace, HeartbeatInterval: o.heartbeat,
		Streams: worker.Streams{Replicas: streams.Replicas}, Logger: log, TriggerKeys: o.verifier,
		AcceptUnsignedTriggers: o.acceptUnsigned,
	}
	if pr != nil {
		cfg.Metrics = pr.reg
	}
	w, err := worker.New(cfg)
	if err != nil {
		return usageError{Err: err}
	}
	if pr != nil {
		js, err := jetstream.New(nc)
		if err != nil {
			return fmt.Errorf("jetstream: %w", err)
		}
		pr.js.Store(&js)
		pr.worker.Store(w)
	}
	for _, h := range handlers {
		switch h {
		case handlerShell:
			cfg := builtin.ShellConfig{Shell: o.shell, PassEnv: o.passEnvList()}
			var opts []worker.HandleOption
			if o.shellReduce {
				opts = append(opts, worker.WithReduce(builtin.ShellReduce(cfg)))
			}
			w.Handle(h, builtin.Shell(cfg), opts...)
		case handlerScript:
			interpreters, _ := o.interpreterMap() // checked by validate
			cfg := builtin.ScriptConfig{ShellConfig: builtin.ShellConfig{PassEnv: o.passEnvList()}, Interpreters: interpreters}
			var opts []worker.HandleOption
			if o.shellReduce {
				opts = append(opts, worker.WithReduce(builtin.ScriptReduce(cfg)))
			}
			w.Handle(h, builtin.Script(cfg), opts...)
		case handlerHTTP:
			ecfg := builtin.Egress{Allow: egress.ParseList(o.egressAllow)}
			if pr != nil {
				ecfg.Self = append(ecfg.Self, pr.addr) // the worker's own /metrics
			}
			w.Handle(h, builtin.HTTP(builtin.HTTPConfig{AllowHosts: o.allowHostList(), Egress: ecfg}))
		}
	}
	return w.Run(ctx)
}

// waitForJetStream provisions jetjob's streams, retrying until NATS and
// JetStream answer or ctx ends (then it returns ctx's error).
func waitForJetStream(ctx context.Context, nc *nats.Conn, streams stream.Config, urls string, log *zap.Logger) error {
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	return backoff.Retry(ctx, backoff.Policy{
		Backoff: backoff.Backoff{Initial: 250 * time.Millisecond, Max: 5 * time.Second},
		OnRetry: func(_ int, _ time.Duration, err error) {
			log.Warn("waiting for NATS JetStream", zap.String("nats_url", urls), zap.Error(err))
		},
	}, func(ctx context.Context) error {
		actx, cancel := context.WithTimeout(ctx, provisionAttempt)
		defer cancel()
		// Like worker.Run: existing streams are the schedulers' to set up;
		// missing ones are created if this credential may (else the
		// error says it may not, and the worker waits for a scheduler).
		return stream.Provision(actx, js, streams, stream.LeaveExisting(log))
	})
}
