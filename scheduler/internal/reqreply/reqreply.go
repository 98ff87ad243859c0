// Package reqreply serves the requests workers send the schedulers over
// NATS request/reply (supersede, start checks, secrets): every scheduler
// subscribes in one queue group, so one of them answers each request, and
// a few answers run at once.
package reqreply

import (
	"context"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/shared/wire"
)

// answerers is how many requests are answered at once: a replayed backlog
// asks about many triggers at once.
const answerers = 4

// Serve hands the requests on subject (in the schedulers' queue group) to
// answer, answerers of them at once, until ctx ends. A message without a
// reply subject is not a request and is dropped.
func Serve(ctx context.Context, nc *nats.Conn, subject string, answer func(context.Context, *nats.Msg)) error {
	reqs := make(chan *nats.Msg, 256)
	sub, err := nc.ChanQueueSubscribe(subject, stream.SupersedeQueue, reqs)
	if err != nil {
		return fmt.Errorf("subscribe %s: %w", subject, err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	var wg sync.WaitGroup
	for range answerers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-ctx.Done():
					return
				case m := <-reqs:
					if m.Reply != "" {
						answer(ctx, m)
					}
				}
			}
		}()
	}
	wg.Wait()
	return nil
}

// Respond sends reply (a control reply of package wire) to m; a reply that
// cannot be sent is logged (the worker's request times out and it decides
// as its protocol says).
func Respond(m *nats.Msg, reply any, log *zap.Logger) {
	data, err := wire.EncodeControl(reply)
	if err == nil {
		err = m.Respond(data)
	}
	if err != nil {
		log.Warn("request not answered", zap.String("subject", m.Subject), zap.Error(err))
	}
}
