package main

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/shared/logging"
	"github.com/jetjob/jetjob/shared/stream"
	"github.com/jetjob/jetjob/worker"
	"github.com/jetjob/jetjob/worker/builtin"
)

// provisionAttempt bounds one attempt to reach JetStream at start.
const provisionAttempt = 2 * time.Second

// run connects, waits for JetStream and runs the worker until ctx ends.
func run(ctx context.Context, o *options) error {
	log, err := logging.New(o.logFormat, o.logLevel)
	if err != nil {
		return usageError{err}
	}
	defer log.Sync() //nolint:errcheck

	servers, _ := natsServers(o.natsURL) // validated
	handlers, _ := o.handlerList()       // validated
	log.Info("jetjob-worker starting", logging.Group(o.group), zap.Strings("handlers", handlers),
		zap.String("nats_url", redactedURLs(servers)), zap.String("version", version()))
	nc, err := connect(o, servers, log)
	if err != nil {
		return err
	}
	defer nc.Close()

	streams := stream.Config{Replicas: o.replicas}
	if err := waitForJetStream(ctx, nc, streams, redactedURLs(servers), log); err != nil {
		log.Info("stopped before NATS JetStream was reachable")
		return nil
	}

	w, err := worker.New(worker.Config{
		NATS: nc, Group: o.group, ID: o.id, Concurrency: o.concurrency, AckWait: o.ackWait,
		MaxDeliver: o.maxDeliver, ShutdownGrace: o.shutdownGrace, HeartbeatInterval: o.heartbeat,
		Streams: streams, Logger: log,
	})
	if err != nil {
		return usageError{err}
	}
	for _, h := range handlers {
		switch h {
		case handlerShell:
			w.Handle(h, builtin.Shell(builtin.ShellConfig{Shell: o.shell}))
		case handlerHTTP:
			w.Handle(h, builtin.HTTP(builtin.HTTPConfig{AllowHosts: o.allowHostList()}))
		}
	}
	return w.Run(ctx)
}

// connect returns a connection that reconnects forever: with
// RetryOnFailedConnect an unreachable server at start is not an error.
func connect(o *options, servers []string, log *zap.Logger) (*nats.Conn, error) {
	opts := []nats.Option{
		nats.Name("jetjob-worker " + o.group),
		nats.RetryOnFailedConnect(true),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(time.Second),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("NATS disconnected; reconnecting", zap.Error(err))
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			log.Info("NATS reconnected", zap.String("url", nc.ConnectedUrlRedacted()))
		}),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			log.Warn("NATS error", zap.Error(err))
		}),
	}
	switch {
	case o.natsUser != "":
		opts = append(opts, nats.UserInfo(o.natsUser, o.natsPassword))
	case o.natsToken != "":
		opts = append(opts, nats.Token(o.natsToken))
	case o.natsCreds != "":
		opts = append(opts, nats.UserCredentials(o.natsCreds))
	}
	if o.tlsCA != "" {
		opts = append(opts, nats.RootCAs(o.tlsCA))
	}
	if o.tlsCert != "" {
		opts = append(opts, nats.ClientCert(o.tlsCert, o.tlsKey))
	}
	nc, err := nats.Connect(strings.Join(servers, ","), opts...)
	if err != nil {
		return nil, fmt.Errorf("NATS at %s: %w", redactedURLs(servers), err)
	}
	return nc, nil
}

// waitForJetStream provisions jetjob's streams, retrying until NATS and
// JetStream answer or ctx ends (then it returns ctx's error).
func waitForJetStream(ctx context.Context, nc *nats.Conn, streams stream.Config, urls string, log *zap.Logger) error {
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	wait := 250 * time.Millisecond
	for {
		actx, cancel := context.WithTimeout(ctx, provisionAttempt)
		err := stream.Provision(actx, js, streams)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		log.Warn("waiting for NATS JetStream", zap.String("nats_url", urls), zap.Error(err))
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// version is the module version of this build, "(devel)" from a source tree.
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}
