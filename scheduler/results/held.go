package results

import (
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetjob/jetjob/shared/wire"
)

const startedKind = wire.EventStarted

// carrier is an events message on its way through the applier: it is
// acknowledged once every event it carried has been applied, which for a
// message with a held started event (Config.HoldStarted) is a later batch
// than its own.
type carrier struct {
	msg   jetstream.Msg
	left  int  // events not applied yet
	acked bool // acknowledged (or, for held ones at the stop, handed back)
	// fromHeld: some of its events were held back, so it is acknowledged
	// by whichever batch applies the last of them.
	fromHeld bool
}

// heldStart is a started event kept back until its run's end arrives or
// until is passed.
type heldStart struct {
	ev    sourcedEvent
	until time.Time
}

// held are the started events kept back, by run. Only Run's goroutine
// uses it.
type held struct {
	byRun map[runKey][]heldStart
}

// sort decides which of a batch's events are applied now, returns them,
// and keeps the rest back: a started event whose run has no other event in
// the batch is held (for up to hold), and held events go out with the
// first batch that carries another event of their run, or once their time
// is up.
func (h *held) sort(events []sourcedEvent, now time.Time, hold time.Duration) []sourcedEvent {
	if hold <= 0 && len(h.byRun) == 0 {
		return events
	}
	if h.byRun == nil {
		h.byRun = map[runKey][]heldStart{}
	}
	// What else the batch says of each run.
	ends := make(map[runKey]bool, len(events))
	for i := range events {
		if e := &events[i]; e.Kind != startedKind {
			ends[runKey{e.RunID, e.from.group}] = true
		}
	}
	out := events[:0:0]
	for _, e := range events {
		k := runKey{e.RunID, e.from.group}
		if hold > 0 && e.Kind == startedKind && !ends[k] && e.carrier != nil {
			e.carrier.fromHeld = true
			h.byRun[k] = append(h.byRun[k], heldStart{ev: e, until: now.Add(hold)})
			continue
		}
		out = append(out, e)
	}
	for k, hs := range h.byRun {
		if !ends[k] && now.Before(hs[0].until) {
			continue
		}
		for _, x := range hs {
			out = append(out, x.ev)
		}
		delete(h.byRun, k)
	}
	return out
}

// next is how long until the first held event's time is up (an hour when
// none is held).
func (h *held) next(now time.Time) time.Duration {
	d := time.Hour
	for _, hs := range h.byRun {
		d = min(d, hs[0].until.Sub(now))
	}
	return max(d, 0)
}

// msgs returns the messages of held events not yet acknowledged, once
// each, and forgets the events: at the stop they are handed back whole.
func (h *held) msgs() []jetstream.Msg {
	var out []jetstream.Msg
	for k, hs := range h.byRun {
		for _, x := range hs {
			if c := x.ev.carrier; !c.acked {
				c.acked = true
				out = append(out, c.msg)
			}
		}
		delete(h.byRun, k)
	}
	return out
}
