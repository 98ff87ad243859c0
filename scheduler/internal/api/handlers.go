package api

import (
	"cmp"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"time"
	"unicode/utf8"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/backlog"
	"github.com/jetjob/jetjob/scheduler/internal/planner"
	"github.com/jetjob/jetjob/scheduler/internal/runs"
	"github.com/jetjob/jetjob/scheduler/internal/store"
	"github.com/jetjob/jetjob/shared/wire"
)

func (s *Server) listGroups(w http.ResponseWriter, r *http.Request) error {
	gs, err := s.store.ListGroups(r.Context(), readable(r))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apiv1.GroupList{Groups: docs(gs, groupDoc)})
	return nil
}

func groupDoc(g store.Group) apiv1.Group {
	state := string(g.Flow.State)
	if state == "" {
		state = string(store.FlowActive)
	}
	if g.Flow.Drained() {
		state = "drained"
	}
	return apiv1.Group{Name: g.Name, Title: g.Title, CommandHandlers: g.CommandHandlers, CreatedAt: g.CreatedAt,
		MaxRunning: g.Limits.MaxRunning, RateLimit: g.Limits.Rate.String(),
		Flow: &apiv1.GroupFlow{State: state, Note: g.Flow.Note, By: g.Flow.By, At: g.Flow.At, Running: g.Flow.InFlight}}
}

// setGroupFlow pauses, drains or resumes the path's group with the
// optional body's note (docs/flow-control.md).
func (s *Server) setGroupFlow(state store.FlowState) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		var req apiv1.GroupFlowRequest
		if err := decodeOptional(w, r, &req); err != nil {
			return err
		}
		if n := utf8.RuneCountInString(req.Note); n > maxPauseNoteLen {
			return invalidf("note is %d characters, more than %d", n, maxPauseNoteLen)
		}
		if p := nameProblem(req.Note); p != "" {
			return invalidf("note %s", p)
		}
		g, err := s.store.SetGroupFlow(r.Context(), actor(r), r.PathValue("name"), state, req.Note)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, groupDoc(g))
		return nil
	}
}

func (s *Server) createGroup(w http.ResponseWriter, r *http.Request) error {
	var g apiv1.Group
	if err := decode(w, r, &g); err != nil {
		return err
	}
	if err := wire.CheckName("group name", g.Name); err != nil {
		return invalidf("%v", err)
	}
	if len(g.Title) > maxNameLen {
		return invalidf("title is longer than %d characters", maxNameLen)
	}
	if p := nameProblem(g.Title); p != "" {
		return invalidf("title %s", p)
	}
	for _, h := range g.CommandHandlers {
		if err := wire.CheckHandler(h); err != nil {
			return invalidf("command_handlers: %v", err)
		}
	}
	limits, err := groupLimits(g.MaxRunning, g.RateLimit)
	if err != nil {
		return err
	}
	out, err := s.store.CreateGroup(r.Context(), actor(r), store.Group{Name: g.Name, Title: g.Title, CommandHandlers: g.CommandHandlers,
		Limits: limits})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, groupDoc(out))
	return nil
}

// triggerJob writes a manual run and hands it to the firing path, which
// publishes it at once (retrying if NATS is away) or at the time asked.
// It answers 202 with the run as written (200 with the earlier run for an
// idempotent repeat): follow it with GET /runs/{id}.
func (s *Server) triggerJob(w http.ResponseWriter, r *http.Request) error {
	id, t, err := triggerRequest(w, r)
	if err != nil {
		return err
	}
	return s.fireManual(w, r, id, t)
}

// triggerRequest reads a trigger of the path's job row (a job, a
// workflow): its id and the optional body, params within their limit,
// with its time and idempotency key checked.
func triggerRequest(w http.ResponseWriter, r *http.Request) (int64, store.Trigger, error) {
	var req apiv1.TriggerRequest
	id, err := pathID(r)
	if err != nil {
		return 0, store.Trigger{}, err
	}
	if err := decodeOptional(w, r, &req); err != nil {
		return 0, store.Trigger{}, err
	}
	t, err := triggerOf(req, r.Header.Get("Idempotency-Key"), time.Now())
	return id, t, err
}

// maxTriggerAhead is how far ahead a trigger may ask its run to be: a
// later one-off run is a job with a one-shot schedule.
const maxTriggerAhead = 366 * 24 * time.Hour

// triggerOf checks a trigger's body (header: its Idempotency-Key header)
// and returns it as the store writes it.
func triggerOf(req apiv1.TriggerRequest, header string, now time.Time) (store.Trigger, error) {
	t := store.Trigger{Params: req.Params, Force: req.Force, Priority: req.Priority}
	if req.Params != nil && len(*req.Params) > wire.MaxParamsBytes {
		return t, invalidf("params are %d bytes, more than the limit of %d (64 KiB)", len(*req.Params), wire.MaxParamsBytes)
	}
	if p := req.Priority; p != nil && (*p < wire.PriorityMin || *p > wire.PriorityMax) {
		return t, invalidf("priority %d: want %d to %d", *p, wire.PriorityMin, wire.PriorityMax)
	}
	switch {
	case req.At != nil && req.Delay != "":
		return t, invalidf("at and delay: give one of them, not both")
	case req.Delay != "":
		d, err := time.ParseDuration(req.Delay)
		if err != nil || d <= 0 || d > maxTriggerAhead {
			return t, invalidf("delay %q: want a positive Go duration up to a year, such as 90s or 2h30m", req.Delay)
		}
		t.After = d
	case req.At != nil:
		if req.At.After(now.Add(maxTriggerAhead)) {
			return t, invalidf("at %s is more than a year ahead: use a job with a one-shot schedule", req.At.Format(time.RFC3339))
		}
		if req.At.After(now) {
			t.At = *req.At
		}
	}
	key := cmp.Or(req.IdempotencyKey, header)
	switch {
	case req.IdempotencyKey != "" && header != "" && req.IdempotencyKey != header:
		return t, invalidf("idempotency key: the body's %q and the Idempotency-Key header's %q differ", req.IdempotencyKey, header)
	case len(key) > 255:
		return t, invalidf("idempotency key: %d bytes, more than 255", len(key))
	case nameProblem(key) != "":
		return t, invalidf("idempotency key %s", nameProblem(key))
	}
	if key != "" {
		// What the trigger asks, as the key's digest: a repeat must ask
		// the same (its key alone is not enough to say it is a repeat).
		asked, _ := json.Marshal(apiv1.TriggerRequest{Params: req.Params, At: req.At, Delay: req.Delay, Priority: req.Priority})
		sum := sha256.Sum256(asked)
		t.Key, t.Request = key, sum[:]
	}
	return t, nil
}

// fireManual writes the run of a manual trigger t of job row id, hands it
// to the firing path and answers 202 with the run as written; an
// idempotent repeat answers 200 with the run of the trigger it repeats.
func (s *Server) fireManual(w http.ResponseWriter, r *http.Request, id int64, t store.Trigger) error {
	p, replayed, err := s.store.TriggerRun(r.Context(), actor(r), id, t)
	if err != nil {
		return err
	}
	if replayed {
		run, err := s.store.GetRun(r.Context(), p.RunID)
		if err != nil {
			return err
		}
		w.Header().Set("Idempotent-Replayed", "true")
		writeJSON(w, http.StatusOK, runDoc(run))
		return nil
	}
	return s.fired(w, r, p)
}

// fired hands a run just written to the firing path and answers 202 with
// the run as written: the end of every request that starts a run (a
// manual trigger, a workflow run's re-run). A run for later than the
// shard owners' sweeps look ahead (planner.SweepInterval) is theirs to
// plant in a wheel when its time comes near, not this process's to hold.
func (s *Server) fired(w http.ResponseWriter, r *http.Request, p runs.Planned) error {
	if time.Until(p.ScheduledAt) <= planner.SweepInterval {
		s.cfg.Fire(p)
	}
	run, err := s.store.GetRun(r.Context(), p.RunID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, runDoc(run))
	return nil
}

// listRuns is the per-job listing, kept for its clients: the job's case of
// the search, paged by the last run id seen ("before") as it always was.
func (s *Server) listRuns(w http.ResponseWriter, r *http.Request) error {
	if err := onlyParams(r, "limit", "before"); err != nil {
		return err
	}
	id, limit, err := jobPage(r)
	if err != nil {
		return err
	}
	before, err := queryInt(r, "before", 0, 0, 1<<62)
	if err != nil {
		return err
	}
	var after *store.RunKey
	if before > 0 {
		k, err := s.store.RunKeyOf(r.Context(), before)
		if errors.Is(err, store.ErrNotFound) {
			return invalidf("before=%d: no such run (pass the next value of the previous page)", before)
		}
		if err != nil {
			return err
		}
		after = &k
	}
	// Runs outlive their job: a deleted job's history is still listed.
	rs, more, err := s.store.ListRuns(r.Context(), id, readable(r), after, limit)
	if err != nil {
		return err
	}
	out := runList(rs, more)
	if more {
		out.Next = rs[len(rs)-1].ID
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// jobPage reads what a job's listings (its runs, its backfills) take: the
// job id from the path and the page size, ?limit=, 20 unless given, at most
// 500.
func jobPage(r *http.Request) (id int64, limit int, err error) {
	if id, err = pathID(r); err != nil {
		return 0, 0, err
	}
	n, err := queryInt(r, "limit", 20, 1, 500)
	if err != nil {
		return 0, 0, err
	}
	return id, int(n), nil
}

func runList(rs []store.Run, more bool) apiv1.RunList {
	out := apiv1.RunList{Runs: docs(rs, runDoc)}
	if more {
		last := rs[len(rs)-1]
		out.Cursor = encodeCursor(store.RunKey{ScheduledAt: last.ScheduledAt, ID: last.ID})
	}
	return out
}

func (s *Server) listWorkers(w http.ResponseWriter, r *http.Request) error {
	if err := onlyParams(r, "group"); err != nil {
		return err
	}
	group := r.URL.Query().Get("group")
	if group != "" && !wire.ValidName(group) {
		return invalidf("group %q is not a valid group name", group)
	}
	live, groups := s.liveGroups(r, group)
	writeJSON(w, http.StatusOK, apiv1.WorkerList{Workers: docs(live, workerDoc), Groups: groups})
	return nil
}

// workerDoc is a worker's document; its lists are empty, never null, when
// the heartbeat had none (as the OpenAPI document says).
func workerDoc(wi wire.WorkerInfo) apiv1.Worker {
	return apiv1.Worker{ID: wi.ID, Group: wi.Group, Host: wi.Host, PID: wi.PID, Version: wi.Version,
		Handlers: nonNil(wi.Handlers), Capacity: wi.Capacity, Running: nonNil(wi.Running), StartedAt: wi.StartedAt, BeatAt: wi.BeatAt}
}

// nonNil is xs, or an empty slice for nil: answered as [] rather than null.
func nonNil[T any](xs []T) []T {
	if xs == nil {
		return []T{}
	}
	return xs
}

// liveGroups are the live workers the caller may see (of group, or all
// when ""), and their groups' capacity and backlog.
func (s *Server) liveGroups(r *http.Request, group string) ([]wire.WorkerInfo, []apiv1.GroupBacklog) {
	live := readableWorkers(r, s.cfg.Workers(group))
	var snap backlog.Snapshot
	if s.cfg.Backlog != nil {
		snap = s.cfg.Backlog()
	}
	return live, groupBacklogs(group, live, readableBacklog(r, snap))
}

// groupBacklogs puts each group's live capacity beside its sampled
// backlog: every group with a live worker or seen by the sample, or only
// group when one is asked for.
func groupBacklogs(group string, live []wire.WorkerInfo, snap backlog.Snapshot) []apiv1.GroupBacklog {
	byName := map[string]*apiv1.GroupBacklog{}
	get := func(name string) *apiv1.GroupBacklog {
		g := byName[name]
		if g == nil {
			g = &apiv1.GroupBacklog{Group: name}
			if !snap.At.IsZero() {
				at := snap.At.UTC()
				g.SampledAt = &at
			}
			byName[name] = g
		}
		return g
	}
	if group != "" {
		get(group)
	}
	for _, wi := range live {
		g := get(wi.Group)
		g.LiveWorkers++
		g.Slots += wi.Capacity
		g.Running += len(wi.Running)
	}
	for _, b := range snap.Groups {
		if group != "" && b.Group != group {
			continue
		}
		g := get(b.Group)
		g.Pending, g.InFlight, g.Redelivered = b.Pending, b.InFlight, b.Redelivered
		g.OldestPendingSeconds = b.OldestPending.Seconds()
		if !b.OldestPendingAt.IsZero() {
			at := b.OldestPendingAt.UTC()
			g.OldestPendingAt = &at
		}
	}
	out := make([]apiv1.GroupBacklog, 0, len(byName))
	for _, g := range byName {
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Group < out[j].Group })
	return out
}

// killRun stops a run wherever it is: one not yet published ends CANCELLED
// at once; for the others a kill request goes to every worker (the one
// running it cancels it, one about to start it does not), and the run ends
// CANCELLED when its worker reports. Answers 202 with the run.
func (s *Server) killRun(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	// The reason is the run's message: it says who killed it.
	who := actor(r)
	reason := "killed by " + who.Name
	run, err := s.store.CancelRun(r.Context(), who, id, reason)
	if err != nil {
		return err
	}
	// Even a run just CANCELLED here may already sit in a wheel or in
	// flight: the request makes sure no worker starts it.
	if err := s.cfg.Kill(r.Context(), id, reason); err != nil {
		return fmt.Errorf("send kill request for run %d: %w", id, err)
	}
	writeJSON(w, http.StatusAccepted, runDoc(run))
	return nil
}
