package api

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/store"
)

func auditList(es []store.AuditEntry, more bool) apiv1.AuditList {
	out := apiv1.AuditList{Entries: docs(es, func(e store.AuditEntry) apiv1.AuditEntry {
		return apiv1.AuditEntry{ID: e.ID, At: e.At, Actor: e.Actor, Auth: e.Auth,
			Action: e.Action, Target: e.Target, Group: e.Group, Before: e.Before, After: e.After, Client: e.Client}
	})}
	if more {
		out.Next = es[len(es)-1].ID
	}
	return out
}

// listAudit answers the page of the audit log that f selects, its limit
// and before read from the query.
func (s *Server) listAudit(w http.ResponseWriter, r *http.Request, f store.AuditFilter) error {
	limit, err := queryInt(r, "limit", 100, 1, 1000)
	if err != nil {
		return err
	}
	before, err := queryInt(r, "before", 0, 0, 1<<62)
	if err != nil {
		return err
	}
	f.Limit, f.Before = int(limit), before
	es, more, err := s.store.ListAudit(r.Context(), f)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, auditList(es, more))
	return nil
}

// audit lists the audit log, newest first, keyset-paged by id.
func (s *Server) audit(w http.ResponseWriter, r *http.Request) error {
	if err := onlyParams(r, "actor", "target", "action", "group", "from", "to", "limit", "before"); err != nil {
		return err
	}
	q := r.URL.Query()
	f := store.AuditFilter{Actor: q.Get("actor"), Target: q.Get("target"), Group: q.Get("group")}
	if a := q.Get("action"); a != "" {
		f.Actions = []string{a}
	}
	var bad []string
	queryTimes(q, &f.From, &f.To, func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) })
	if len(bad) > 0 {
		return invalidf("%s", strings.Join(bad, "; "))
	}
	return s.listAudit(w, r, f)
}

// jobHistory lists a job's revisions (create, update, enable, disable,
// delete), newest first, each with the job before and after.
func (s *Server) jobHistory(w http.ResponseWriter, r *http.Request) error {
	if err := onlyParams(r, "limit", "before"); err != nil {
		return err
	}
	id, err := pathID(r)
	if err != nil {
		return err
	}
	return s.listAudit(w, r, store.AuditFilter{Target: store.JobTarget(id), Actions: store.JobRevisionActions})
}
