package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Map/reduce (docs/flow-control.md, "Map/reduce"): a run's handler maps a
// list of items (worker Job.Map); its finished event carries them
// (Event.Map), and the scheduler, in the transaction recording the run's
// success, writes one part per item. A part's trigger carries its item
// (Trigger.Map); the reduce run's trigger says it reduces a fire, and its
// worker fetches the parts' outputs from the schedulers in pages
// (MapOutputsRequest on stream.MapOutputsSubject(group)): up to
// MaxMapItems outputs of up to MaxOutputBytes each cannot ride in one
// message.

// MaxMapItems bounds the items of one map: the parts of one fire.
const MaxMapItems = 10_000

// MaxMapBytes bounds the encoded items of one map (a JSON array): they
// ride in the mapping run's finished event, whose batch of events the
// worker keeps under 512 KiB, well under NATS's default 1 MiB payload.
const MaxMapBytes = 256 << 10

// MaxMapOutputsPage bounds the outputs of one MapOutputsReply, in bytes
// of JSON: a reply always holds at least one output (at most
// MaxOutputBytes), and stops before passing this.
const MaxMapOutputsPage = 512 << 10

// MapRun is a run's place in a map/reduce fire, in its trigger: a part
// (Item set) or the fire's reduce run (Reduce). Fire is the id of the run
// that mapped (the root): a part is part ShardIndex of ShardTotal of it.
type MapRun struct {
	Fire   int64           `json:"fire"`
	Item   json.RawMessage `json:"item,omitempty"`
	Reduce bool            `json:"reduce,omitempty"`
}

// validate appends what is wrong with m to errs; shardTotal is the
// trigger's.
func (m *MapRun) validate(errs []string, shardTotal int) []string {
	switch {
	case m.Fire <= 0:
		errs = append(errs, "map fire must be positive")
	case m.Reduce && len(m.Item) > 0:
		errs = append(errs, "map: a reduce run has no item")
	case m.Reduce && shardTotal != 0:
		errs = append(errs, "map: a reduce run is no part")
	case !m.Reduce && len(m.Item) == 0:
		errs = append(errs, "map: a part needs its item")
	case !m.Reduce && shardTotal == 0:
		errs = append(errs, "map: a part needs shard_total")
	case len(m.Item) > MaxMapBytes:
		errs = append(errs, fmt.Sprintf("map item is %d bytes, more than %d", len(m.Item), MaxMapBytes))
	case len(m.Item) > 0 && !json.Valid(m.Item):
		errs = append(errs, "map item is not JSON")
	}
	return errs
}

// MapItems splits the items of a map (a JSON array) and checks its
// bounds: 1 to MaxMapItems items, at most MaxMapBytes in all.
func MapItems(list json.RawMessage) ([]json.RawMessage, error) {
	if len(list) > MaxMapBytes {
		return nil, fmt.Errorf("map: %d bytes of items, at most %d", len(list), MaxMapBytes)
	}
	if t := bytes.TrimLeft(list, " \t\r\n"); len(t) == 0 || t[0] != '[' {
		return nil, errors.New("map: items are not a JSON array")
	}
	var items []json.RawMessage
	if err := json.Unmarshal(list, &items); err != nil {
		return nil, fmt.Errorf("map: items are not a JSON array: %w", err)
	}
	if len(items) == 0 || len(items) > MaxMapItems {
		return nil, fmt.Errorf("map: %d items, want 1 to %d", len(items), MaxMapItems)
	}
	return items, nil
}

// validateMap appends what is wrong with an event's map to errs.
func (e *Event) validateMap(errs []string) []string {
	if len(e.Map) == 0 {
		if e.Reduce {
			errs = append(errs, "reduce without map")
		}
		return errs
	}
	if e.Kind != EventFinished || e.Status != StatusSucceeded {
		return append(errs, "map on an event other than a finished SUCCEEDED one")
	}
	if _, err := MapItems(e.Map); err != nil {
		errs = append(errs, err.Error())
	}
	return errs
}

// MapOutputsRequest asks for a page of the outputs of the parts of the
// fire a reduce run reduces: the outputs of parts From, From+1, ... A
// worker asks it once its reduce run's started event is stored, on
// stream.MapOutputsSubject(group) (the group is the subject's, which NATS
// permissions bind to the worker's credential).
type MapOutputsRequest struct {
	V           int       `json:"v"`
	RunID       int64     `json:"run_id"`
	ScheduledAt time.Time `json:"scheduled_at"`
	WorkerID    string    `json:"worker_id"`
	From        int       `json:"from"`
}

// Validate checks a map outputs request.
func (m *MapOutputsRequest) Validate() error {
	if m.V != Version {
		return fmt.Errorf("map outputs request: %w %d (this build speaks %d)", ErrVersion, m.V, Version)
	}
	switch {
	case m.RunID <= 0:
		return fmt.Errorf("map outputs request: run_id must be positive, got %d", m.RunID)
	case m.ScheduledAt.IsZero():
		return errors.New("map outputs request: scheduled_at is required")
	case m.From < 0 || m.From >= MaxMapItems:
		return fmt.Errorf("map outputs request: from %d is out of range (0-%d)", m.From, MaxMapItems-1)
	}
	return CheckName("worker id", m.WorkerID)
}

// MapOutputsReply answers a MapOutputsRequest: Total is the fire's part
// count, Outputs the outputs of parts From, From+1, ... in index order
// (JSON null for a part that set none), at least one while From < Total,
// at most MaxMapOutputsPage bytes. Error, when set, says why none are
// given; the reduce run then fails with it.
type MapOutputsReply struct {
	V       int               `json:"v"`
	Total   int               `json:"total,omitempty"`
	Outputs []json.RawMessage `json:"outputs,omitempty"`
	Error   string            `json:"error,omitempty"`
}

// Validate checks a map outputs reply's shape.
func (m *MapOutputsReply) Validate() error {
	if m.V != Version {
		return fmt.Errorf("map outputs reply: %w %d", ErrVersion, m.V)
	}
	if m.Total < 0 || m.Total > MaxMapItems || len(m.Outputs) > m.Total {
		return fmt.Errorf("map outputs reply: %d outputs of %d parts", len(m.Outputs), m.Total)
	}
	for i, o := range m.Outputs {
		if len(o) > MaxOutputBytes || !json.Valid(o) {
			return fmt.Errorf("map outputs reply: output %d is not JSON of at most %d bytes", i, MaxOutputBytes)
		}
	}
	return nil
}
