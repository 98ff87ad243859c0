package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/flowkv"
	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/store"
	"github.com/jetjob/jetjob/shared/wire"
)

// A group's cap and rate limit (docs/flow-control.md): set with PATCH
// /groups/{name}, read with the group, and the queue view of what holds
// and waits for them.

// setGroupLimits changes the fields the body gives of the path's group's
// limits.
func (s *Server) setGroupLimits(w http.ResponseWriter, r *http.Request) error {
	var req apiv1.GroupLimitsRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	if req.MaxRunning == nil && req.RateLimit == nil {
		return invalidf("nothing to change: give max_running, rate_limit or both")
	}
	var c store.GroupLimitsChange
	if req.MaxRunning != nil {
		if err := checkMaxRunning(*req.MaxRunning); err != nil {
			return err
		}
		c.MaxRunning = req.MaxRunning
	}
	if req.RateLimit != nil {
		rate, err := parseGroupRate(*req.RateLimit)
		if err != nil {
			return err
		}
		c.Rate = &rate
	}
	g, err := s.store.SetGroupLimits(r.Context(), actor(r), r.PathValue("name"), c)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, groupDoc(g))
	return nil
}

// groupLimits checks a new group's limits.
func groupLimits(maxRunning int, rateLimit string) (store.GroupLimits, error) {
	if err := checkMaxRunning(maxRunning); err != nil {
		return store.GroupLimits{}, err
	}
	rate, err := parseGroupRate(rateLimit)
	return store.GroupLimits{MaxRunning: maxRunning, Rate: rate}, err
}

func checkMaxRunning(n int) error {
	if n < 0 || n > wire.MaxConcurrencyLimit {
		return invalidf("max_running %d is out of range: 0 (no cap) to %d", n, wire.MaxConcurrencyLimit)
	}
	return nil
}

// parseGroupRate reads a group's rate_limit ("" is none).
func parseGroupRate(s string) (wire.Rate, error) {
	rate, err := wire.ParseRate(s)
	if err != nil {
		return wire.Rate{}, invalidf("rate_limit: %v", err)
	}
	if rate.Count > 0 {
		rate.Scope = wire.RateGroup
	}
	return rate, nil
}

// groupQueue answers the path's group's queue view: the holders and
// waiters of its cap (JETJOB_LOCKS) and the state of its rate limit
// (JETJOB_RATES), read with package flowkv as the workers write them,
// the runs named there enriched from job_runs (one query), and the
// group's runs in flight.
func (s *Server) groupQueue(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	g, err := s.store.GetGroup(ctx, r.PathValue("name"))
	if err != nil {
		return err
	}
	now := s.now().UTC()
	q := apiv1.GroupQueue{Group: g.Name, At: now, MaxRunning: g.Limits.MaxRunning, RateLimit: g.Limits.Rate.String(),
		Running: []apiv1.QueuedRun{}, Waiting: []apiv1.QueuedRun{}}
	slots, rate, lerr := s.readGroupLocks(r, g.Name)
	if lerr != nil {
		q.LocksError = lerr.Error()
		s.log.Warn("group queue: JETJOB_LOCKS unreadable", zap.String("group", g.Name), zap.Error(lerr))
	}
	slices.SortFunc(slots.Queue, flowkv.ByTurn)
	ids := make([]int64, 0, len(slots.Slots)+len(slots.Queue))
	for _, h := range slots.Slots {
		ids = append(ids, h.Run)
	}
	for _, wt := range slots.Queue {
		ids = append(ids, wt.Run)
	}
	known, err := s.store.GroupRuns(ctx, g.Name, ids)
	if err != nil {
		return err
	}
	for _, h := range slots.Slots {
		q.Running = append(q.Running, queuedRun(known, h.Run, h.Worker))
	}
	for _, wt := range slots.Queue {
		qr := queuedRun(known, wt.Run, wt.Worker)
		qr.Priority = wt.P
		at := time.UnixMilli(wt.At).UTC()
		qr.FireAt = &at
		q.Waiting = append(q.Waiting, qr)
	}
	if g.Limits.Rate.Count > 0 && lerr == nil {
		use := flowkv.UseAt(g.Limits.Rate, rate, now)
		q.Rate = &apiv1.GroupRate{Available: use.Available, NextFreeAt: use.NextFreeAt}
		if rate.TAT > now.UnixMilli() {
			t := time.UnixMilli(rate.TAT).UTC()
			q.Rate.TAT = &t
		}
	}
	inFlight, more, err := s.store.GroupInFlight(ctx, g.Name)
	if err != nil {
		return err
	}
	q.InFlight, q.InFlightMore = make([]apiv1.QueuedRun, 0, len(inFlight)), more
	for _, f := range inFlight {
		q.InFlight = append(q.InFlight, runOfQueue(f, ""))
	}
	writeJSON(w, http.StatusOK, q)
	return nil
}

// readGroupLocks reads the group's slots and rate keys; a missing key is
// empty (nobody holds, waits or started lately).
func (s *Server) readGroupLocks(r *http.Request, group string) (flowkv.Slots, flowkv.RateState, error) {
	var slots flowkv.Slots
	var rate flowkv.RateState
	if s.cfg.Locks == nil {
		return slots, rate, nil
	}
	for _, k := range []struct {
		key string
		v   any
	}{{flowkv.GroupSlotsKey(group), &slots}, {flowkv.RateKey(wire.RateGroup, 0, group, ""), &rate}} {
		val, err := s.cfg.Locks(r.Context(), k.key)
		if err != nil {
			return flowkv.Slots{}, flowkv.RateState{}, fmt.Errorf("read %s: %w", k.key, err)
		}
		if val == nil {
			continue
		}
		if err := json.Unmarshal(val, k.v); err != nil {
			return flowkv.Slots{}, flowkv.RateState{}, fmt.Errorf("read %s: not the shape the workers write: %w", k.key, err)
		}
	}
	return slots, rate, nil
}

// queuedRun is run as a lock names it, on worker, with what job_runs knows
// of it.
func queuedRun(known map[int64]store.QueuedRun, run int64, worker string) apiv1.QueuedRun {
	if k, ok := known[run]; ok {
		return runOfQueue(k, worker)
	}
	return apiv1.QueuedRun{RunID: run, WorkerID: worker}
}

func runOfQueue(r store.QueuedRun, worker string) apiv1.QueuedRun {
	if worker == "" {
		worker = r.WorkerID
	}
	at := r.ScheduledAt.UTC()
	return apiv1.QueuedRun{RunID: r.ID, JobID: r.JobID, JobName: r.JobName, Status: r.Status, WorkerID: worker, FireAt: &at}
}
