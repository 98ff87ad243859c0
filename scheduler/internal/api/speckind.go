package api

import (
	"context"
	"net/http"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/store"
)

// specKind is a kind of record written whole from a spec and stored as a
// job row, with its version, audit and history: jobs and workflows. Their
// endpoints answer alike (a POST 201, a PUT that keeps "enabled" when the
// body leaves it out, a GET, a DELETE 204), so the handlers are written
// once, here, over what differs.
type specKind[S, T, D any] struct {
	// build checks a spec whole and returns the record to store.
	build func(context.Context, S) (T, error)
	// head is what a PUT reads of a spec before build: where "enabled" is
	// (nil: keep the record's) and the version it replaces.
	head func(*S) (enabled **bool, version int64)
	// row is the job row the record is stored as.
	row    func(*T) *store.Job
	get    func(context.Context, int64) (T, error)
	create func(context.Context, store.Actor, T) (T, error)
	update func(context.Context, store.Actor, T) (T, error)
	remove func(context.Context, store.Actor, int64) error
	doc    func(context.Context, T) D
}

func (s *Server) jobKind() specKind[apiv1.JobSpec, store.Job, apiv1.Job] {
	return specKind[apiv1.JobSpec, store.Job, apiv1.Job]{
		build: func(ctx context.Context, spec apiv1.JobSpec) (store.Job, error) {
			return s.jobFromSpec(ctx, spec, s.now())
		},
		head:   func(spec *apiv1.JobSpec) (**bool, int64) { return &spec.Enabled, spec.Version },
		row:    func(j *store.Job) *store.Job { return j },
		get:    s.store.GetJob,
		create: s.store.CreateJob,
		update: s.store.UpdateJob,
		remove: s.store.DeleteJob,
		doc:    s.firedJobDoc,
	}
}

func (s *Server) workflowKind() specKind[apiv1.WorkflowSpec, store.Workflow, apiv1.Workflow] {
	return specKind[apiv1.WorkflowSpec, store.Workflow, apiv1.Workflow]{
		build:  s.workflowFromSpec,
		head:   func(spec *apiv1.WorkflowSpec) (**bool, int64) { return &spec.Enabled, spec.Version },
		row:    func(wf *store.Workflow) *store.Job { return &wf.Job },
		get:    s.store.GetWorkflow,
		create: s.store.CreateWorkflow,
		update: s.store.UpdateWorkflow,
		remove: s.store.DeleteWorkflow,
		doc:    s.workflowDoc,
	}
}

// post creates a record from the body's spec and answers 201 with it.
func (k specKind[S, T, D]) post(w http.ResponseWriter, r *http.Request) error {
	var spec S
	if err := decode(w, r, &spec); err != nil {
		return err
	}
	return k.save(w, r, spec, func(*T) {}, k.create, http.StatusCreated)
}

// put replaces the path's record by the body's spec, if it is still at
// the version the body or If-Match names, and answers 200 with it.
func (k specKind[S, T, D]) put(w http.ResponseWriter, r *http.Request) error {
	id, spec, err := pathIDBody[S](w, r)
	if err != nil {
		return err
	}
	enabled, bodyVersion := k.head(&spec)
	version, err := jobVersion(r, bodyVersion)
	if err != nil {
		return err
	}
	if *enabled == nil {
		// PUT without "enabled" keeps the record's current state.
		cur, err := k.get(r.Context(), id)
		if err != nil {
			return err
		}
		*enabled = &k.row(&cur).Enabled
	}
	replace := func(v *T) {
		row := k.row(v)
		row.ID, row.Version = id, version
	}
	return k.save(w, r, spec, replace, k.update, http.StatusOK)
}

// save builds the record from spec, lets finish complete it, writes it
// with write and answers code with the record as written.
func (k specKind[S, T, D]) save(w http.ResponseWriter, r *http.Request, spec S, finish func(*T),
	write func(context.Context, store.Actor, T) (T, error), code int) error {
	v, err := k.build(r.Context(), spec)
	if err != nil {
		return err
	}
	finish(&v)
	out, err := write(r.Context(), actor(r), v)
	if err != nil {
		return err
	}
	writeJSON(w, code, k.doc(r.Context(), out))
	return nil
}

// one answers a GET of the path's record.
func (k specKind[S, T, D]) one(w http.ResponseWriter, r *http.Request) error {
	return byIDWith(k.get, k.doc)(w, r)
}

// delete removes the path's record and answers 204.
func (k specKind[S, T, D]) delete(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	if err := k.remove(r.Context(), actor(r), id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
