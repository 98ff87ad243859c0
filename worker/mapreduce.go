package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/jetjob/jetjob/shared/wire"
)

// Map/reduce (docs/worker.md, "Map/reduce"): a run's handler maps a list
// of items (Job.Map); once it returns nil, the scheduler runs one part
// per item, each a run of the same handler on the group's shared queue,
// retried alone (Job.IsMapPart, Job.Item, ShardIndex of ShardTotal). A
// handler registered WithReduce then gets every part's output in index
// order, once every part has succeeded; the job's children fire after the
// reduce (or after the last part, without one).

// MaxMapItems bounds the items of one Map (the parts of one fire).
const MaxMapItems = wire.MaxMapItems

// MaxMapBytes bounds the items of one Map as JSON (256 KiB): they travel
// in the run's result.
const MaxMapBytes = wire.MaxMapBytes

// ReduceFunc reduces a map/reduce fire: outputs are its parts' outputs
// (Job.SetOutput), in part index order, JSON null for a part that set
// none. job is the reduce run's own; its output (SetOutput) is the
// fire's result.
type ReduceFunc func(ctx context.Context, job *Job, outputs []json.RawMessage) error

// WithReduce registers fn as the reduce of a handler that maps: it runs
// once per map/reduce fire, as a run of its own (retried like any run),
// after every part has succeeded.
func WithReduce(fn ReduceFunc) HandleOption {
	return func(h *handler) { h.reduce = fn }
}

// ErrNotMapPart is Item's error in a run that is no part of a map/reduce
// fire.
var ErrNotMapPart = errors.New("this run is not a part of a map/reduce fire")

// Map asks for one part per element of items, a slice or array that
// encodes to a JSON array of 1 to MaxMapItems elements, at most
// MaxMapBytes: each part is a run of this handler with its element
// (Item). The parts are written when this run succeeds: a run that
// returns an error maps nothing (its retry may map again). A later call
// replaces an earlier one. Refused in a part, in a reduce run and in a
// sharded run (a workflow node run that maps succeeds without parts, its
// message says so).
func (j *Job) Map(items any) error {
	if j.mapped == nil {
		return errors.New("map: this Job was not given by a worker")
	}
	if j.mapFire != 0 || j.ShardTotal > 1 {
		return errors.New("map: only a run that is not a part of a fire, not a reduce run and not sharded may map")
	}
	b, err := json.Marshal(items)
	if err != nil {
		return fmt.Errorf("map: %w", err)
	}
	if _, err := wire.MapItems(b); err != nil {
		return err
	}
	j.mapped.set(b)
	return nil
}

// IsMapPart reports whether this run is a part of a map/reduce fire: its
// item is Item's, its place ShardIndex of ShardTotal.
func (j *Job) IsMapPart() bool { return j.item != nil }

// Item decodes this part's item (an element of the list its root run
// mapped) into v, as json.Unmarshal does.
func (j *Job) Item(v any) error {
	if j.item == nil {
		return ErrNotMapPart
	}
	if err := json.Unmarshal(j.item, v); err != nil {
		return fmt.Errorf("map item: %w", err)
	}
	return nil
}

// MapFire is the run that mapped (the root of the fire) for a part or a
// reduce run, 0 for any other run.
func (j *Job) MapFire() int64 { return j.mapFire }

// isReduce reports whether r is a map/reduce fire's reduce run.
func (r *run) isReduce() bool { return r.trig.Map != nil && r.trig.Map.Reduce }

// handlerFunc is what r runs of h: its reduce, with the outputs fetched,
// for a reduce run, else its handler.
func (r *run) handlerFunc(h *handler) HandlerFunc {
	if !r.isReduce() {
		return h.fn
	}
	outputs := r.outputs
	return func(ctx context.Context, j *Job) error { return h.reduce(ctx, j, outputs) }
}

// fetchOutputs asks the schedulers for the outputs of the parts a reduce
// run reduces, page after page; nil when the run may go on, else how it
// ends.
func (r *run) fetchOutputs(ctx context.Context, h *handler) *outcome {
	if !r.isReduce() {
		return nil
	}
	if h.reduce == nil {
		return &outcome{status: wire.StatusFailed, message: fmt.Sprintf(
			"a reduce run, but handler %q has no reduce registered (WithReduce) on worker %s", h.name, r.w.cfg.ID)}
	}
	var outputs []json.RawMessage
	for {
		reply, err := r.w.ask.MapOutputs(ctx, r.trig.Group, wire.MapOutputsRequest{
			RunID: r.trig.RunID, ScheduledAt: r.trig.ScheduledAt, WorkerID: r.w.cfg.ID, From: len(outputs)})
		if err == nil && len(reply.Outputs) == 0 {
			err = fmt.Errorf("no outputs from part %d of %d", len(outputs), reply.Total)
		}
		if err != nil {
			r.log.Warn("parts' outputs not given: failing the reduce run", zap.Error(err))
			return &outcome{status: wire.StatusFailed, message: "its parts' outputs could not be had, so it did not run: " + err.Error()}
		}
		outputs = append(outputs, reply.Outputs...)
		if len(outputs) >= reply.Total {
			break
		}
	}
	r.outputs = outputs
	return nil
}

// mappedEvent sets the map of a SUCCEEDED run's finished event: its items
// with its secrets masked, and whether a reduce follows. A map that
// masking would make invalid JSON fails the run (never sent unmasked).
func (r *run) mappedEvent(ev *wire.Event) {
	items := r.mapped.get()
	if items == nil || ev.Status != wire.StatusSucceeded {
		return
	}
	if r.secrets != nil {
		masked := json.RawMessage(r.secrets.mask.Replace(string(items)))
		if _, err := wire.MapItems(masked); err != nil {
			ev.Status, ev.Message = wire.StatusFailed, "its map's items are not JSON once its secrets are masked"
			return
		}
		items = masked
	}
	ev.Map, ev.Reduce = items, r.reduces
}
