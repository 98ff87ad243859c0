package wire

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// A trigger batch carries the triggers of several runs in one JetStream
// message (docs/protocol.md, "Trigger batches"): one trigger's JSON per
// line, in the order the scheduler wrote them. JSON never contains a raw
// newline (encoding/json and the fast encoder escape it), so a line is
// exactly one trigger, and a worker that cannot read one line still reads
// the others.
//
// Batches exist because every message costs the broker and both processes
// a store, a delivery, an ack and a removal whatever it carries; several
// runs due at the same instant share them. Which runs share a batch is
// fixed when they are planned (job_runs.batch), so every publish of a
// batch, by any scheduler, carries the same runs under the same Msg-Id
// (BatchMsgID) and the stream's duplicate window drops the copies.

// MaxBatchRuns bounds the triggers of one batch message; a worker rejects
// a larger one as invalid. Schedulers plan far smaller batches (16 by
// default).
const MaxBatchRuns = 256

// ErrBatch marks a batch message that cannot be read at all.
var ErrBatch = errors.New("invalid trigger batch")

// BatchMsgID is the Nats-Msg-Id of the message of batch id (the batch's
// first run id): derived from the batch only, like MsgID from the run.
func BatchMsgID(batch int64) string { return "batch-" + strconv.FormatInt(batch, 10) }

// EncodeTriggerBatch validates and marshals ts as one batch message.
func EncodeTriggerBatch(ts []*Trigger) ([]byte, error) {
	if len(ts) == 0 || len(ts) > MaxBatchRuns {
		return nil, fmt.Errorf("%w: %d triggers (want 1 to %d)", ErrBatch, len(ts), MaxBatchRuns)
	}
	var buf bytes.Buffer
	for i, t := range ts {
		data, err := EncodeTrigger(t)
		if err != nil {
			return nil, fmt.Errorf("trigger %d of batch (run %d): %w", i, t.RunID, err)
		}
		if i > 0 {
			buf.WriteByte('\n')
		}
		buf.Write(data)
	}
	return buf.Bytes(), nil
}

// SplitTriggerBatch returns the lines of a batch message, one trigger's
// bytes each (decode them with DecodeTrigger), sharing data's memory. It
// fails only when the message as a whole is unusable: empty, or more than
// MaxBatchRuns lines.
func SplitTriggerBatch(data []byte) ([][]byte, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("%w: empty message", ErrBatch)
	}
	if n := bytes.Count(data, []byte{'\n'}) + 1; n > MaxBatchRuns {
		return nil, fmt.Errorf("%w: %d lines (at most %d)", ErrBatch, n, MaxBatchRuns)
	}
	lines := make([][]byte, 0, 16)
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		lines = append(lines, line)
	}
	return lines, nil
}
