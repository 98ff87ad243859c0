package stream

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/jetjob/jetjob/shared/wire"
)

// Ask sends a control request to one worker (on Control(workerID)) and
// returns its answer. No answer in time, a malformed or refused one, or
// one from another worker is an error: callers fall back to their safe
// default.
func Ask(ctx context.Context, nc *nats.Conn, workerID string, req wire.ControlRequest) (wire.ControlReply, error) {
	var reply wire.ControlReply
	data, err := wire.EncodeControl(&req)
	if err != nil {
		return reply, err
	}
	msg, err := nc.RequestWithContext(ctx, Control(workerID), data)
	if err != nil {
		return reply, fmt.Errorf("ask worker %s: %w", workerID, err)
	}
	if err := wire.DecodeControl(msg.Data, &reply); err != nil {
		return reply, fmt.Errorf("ask worker %s: %w", workerID, err)
	}
	switch {
	case reply.Error != "":
		return reply, fmt.Errorf("ask worker %s: refused: %s", workerID, reply.Error)
	case reply.WorkerID != workerID:
		return reply, errors.New("ask worker " + workerID + ": answered by " + reply.WorkerID)
	}
	return reply, nil
}
