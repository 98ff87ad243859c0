package api

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/linediff"
	"github.com/jetjob/jetjob/scheduler/internal/store"
	"github.com/jetjob/jetjob/shared/wire"
)

// scriptDoc is a stored version as the API answers it.
func scriptDoc(v store.ScriptVersion, current int) apiv1.Script {
	return apiv1.Script{JobID: v.JobID, Version: v.Version, Language: v.Language, Source: v.Source, Remark: v.Remark,
		CreatedAt: v.CreatedAt, CreatedBy: v.CreatedBy, Current: v.Version == current}
}

// scriptJob reads the path's job and refuses one that is not a script
// job.
func (s *Server) scriptJob(r *http.Request) (store.Job, error) {
	id, err := pathID(r)
	if err != nil {
		return store.Job{}, err
	}
	j, err := s.store.GetJob(r.Context(), id)
	if err != nil {
		return j, err
	}
	if j.Script == nil {
		return j, invalidf("job %d has handler %s, not script: it has no stored script", id, j.Handler)
	}
	return j, nil
}

// answerScript answers version v of job id's script.
func (s *Server) answerScript(w http.ResponseWriter, r *http.Request, j store.Job, v int) error {
	sv, err := s.store.GetScriptVersion(r.Context(), j.ID, v)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, scriptDoc(sv, j.Script.Version))
	return nil
}

func (s *Server) getScript(w http.ResponseWriter, r *http.Request) error {
	j, err := s.scriptJob(r)
	if err != nil {
		return err
	}
	return s.answerScript(w, r, j, j.Script.Version)
}

func (s *Server) getScriptVersion(w http.ResponseWriter, r *http.Request) error {
	j, err := s.scriptJob(r)
	if err != nil {
		return err
	}
	v, err := versionNumber("version", r.PathValue("v"))
	if err != nil {
		return err
	}
	return s.answerScript(w, r, j, v)
}

func (s *Server) putScript(w http.ResponseWriter, r *http.Request) error {
	j, err := s.scriptJob(r)
	if err != nil {
		return err
	}
	var req apiv1.ScriptSave
	if err := decode(w, r, &req); err != nil {
		return err
	}
	if err := store.CheckScript(req.Source, req.Remark); err != nil {
		return invalidf("%v", err)
	}
	if req.Language != "" && !slices.Contains(wire.ScriptLanguages, req.Language) {
		return invalidf("language %q: want one of %v", req.Language, wire.ScriptLanguages)
	}
	out, err := s.store.SaveScript(r.Context(), actor(r), j.ID, req.Language, req.Source, req.Remark)
	if err != nil {
		return err
	}
	return s.answerScript(w, r, out, out.Script.Version)
}

func (s *Server) rollbackScript(w http.ResponseWriter, r *http.Request) error {
	j, err := s.scriptJob(r)
	if err != nil {
		return err
	}
	var req apiv1.ScriptRollback
	if err := decode(w, r, &req); err != nil {
		return err
	}
	if req.Version <= 0 {
		return invalidf("version %d: want a version of the script (see .../script/versions)", req.Version)
	}
	out, err := s.store.RollbackScript(r.Context(), actor(r), j.ID, req.Version)
	if err != nil {
		return err
	}
	return s.answerScript(w, r, out, out.Script.Version)
}

func (s *Server) listScriptVersions(w http.ResponseWriter, r *http.Request) error {
	j, err := s.scriptJob(r)
	if err != nil {
		return err
	}
	vs, err := s.store.ScriptVersions(r.Context(), j.ID)
	if err != nil {
		return err
	}
	out := apiv1.ScriptVersionList{Current: j.Script.Version, Versions: make([]apiv1.Script, 0, len(vs))}
	for _, v := range vs {
		out.Versions = append(out.Versions, scriptDoc(v, j.Script.Version))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) diffScript(w http.ResponseWriter, r *http.Request) error {
	j, err := s.scriptJob(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	from, err := versionNumber("from", q.Get("from"))
	if err != nil {
		return err
	}
	to := j.Script.Version
	if q.Get("to") != "" {
		if to, err = versionNumber("to", q.Get("to")); err != nil {
			return err
		}
	}
	a, err := s.store.GetScriptVersion(r.Context(), j.ID, from)
	if err != nil {
		return err
	}
	b, err := s.store.GetScriptVersion(r.Context(), j.ID, to)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apiv1.ScriptDiff{From: from, To: to,
		Diff: linediff.Unified(fmt.Sprintf("v%d", from), fmt.Sprintf("v%d", to), a.Source, b.Source, 3)})
	return nil
}

// versionNumber parses a script version given as name.
func versionNumber(name, s string) (int, error) {
	v, err := strconv.Atoi(s)
	if err != nil || v <= 0 || len(s) > 9 {
		return 0, invalidf("%s %q: want a version number (1, 2, …)", name, s)
	}
	return v, nil
}

// importScript writes an importer's older versions below a script job's
// current one (admin: it records what happened elsewhere).
func (s *Server) importScript(w http.ResponseWriter, r *http.Request) error {
	j, err := s.scriptJob(r)
	if err != nil {
		return err
	}
	var req apiv1.ScriptImport
	if err := decode(w, r, &req); err != nil {
		return err
	}
	if len(req.Versions) > 1000 {
		return invalidf("versions: %d, at most 1000", len(req.Versions))
	}
	old := make([]store.ScriptVersion, 0, len(req.Versions))
	for i, v := range req.Versions {
		if !slices.Contains(wire.ScriptLanguages, v.Language) {
			return invalidf("versions[%d].language %q: want one of %v", i, v.Language, wire.ScriptLanguages)
		}
		if err := store.CheckScript(v.Source, v.Remark); err != nil {
			return invalidf("versions[%d]: %v", i, err)
		}
		old = append(old, store.ScriptVersion{Language: v.Language, Source: v.Source, Remark: v.Remark, CreatedAt: v.CreatedAt})
	}
	var at time.Time
	if req.CurrentAt != nil {
		at = *req.CurrentAt
	}
	if _, err := s.store.ImportScriptVersions(r.Context(), actor(r), j.ID, old, at); err != nil {
		return err
	}
	return s.listScriptVersions(w, r)
}
