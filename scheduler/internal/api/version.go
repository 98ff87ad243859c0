package api

import (
	"net/http"
	"slices"
	"strings"

	"github.com/jetjob/jetjob/scheduler/internal/backlog"
	"github.com/jetjob/jetjob/shared/wire"
)

// errVersionRequired answers a PUT that says which version it was based on
// neither in the body nor in If-Match: without it the store cannot tell a
// concurrent edit from none, and one would silently overwrite the other.
var errVersionRequired = &httpError{http.StatusPreconditionRequired,
	"version required: send the version of the job your change is based on (\"version\" in the body, or If-Match), from GET /api/v1/jobs/{id}"}

// jobVersion is the version a PUT is based on: the body's, else If-Match's
// ("3" or the ETag form "\"3\"").
func jobVersion(r *http.Request, body int64) (int64, error) {
	im := strings.Trim(strings.TrimPrefix(strings.TrimSpace(r.Header.Get("If-Match")), "W/"), `"`)
	var header int64
	if im != "" {
		v, ok := decimal(im)
		if !ok || v <= 0 {
			return 0, invalidf("If-Match %q: want the job's version, a positive integer", r.Header.Get("If-Match"))
		}
		header = v
	}
	switch {
	case body < 0:
		return 0, invalidf("version %d: want the job's version, a positive integer", body)
	case body > 0 && header > 0 && body != header:
		return 0, invalidf("version %d in the body and %d in If-Match differ", body, header)
	case body > 0:
		return body, nil
	case header > 0:
		return header, nil
	}
	return 0, errVersionRequired
}

// readableWorkers keeps the workers of the groups the caller may read.
func readableWorkers(r *http.Request, ws []wire.WorkerInfo) []wire.WorkerInfo {
	groups := readable(r)
	if groups == nil {
		return ws
	}
	return slices.DeleteFunc(ws, func(w wire.WorkerInfo) bool { return !slices.Contains(groups, w.Group) })
}

// readableBacklog keeps the backlog of the groups the caller may read.
func readableBacklog(r *http.Request, snap backlog.Snapshot) backlog.Snapshot {
	groups := readable(r)
	if groups == nil {
		return snap
	}
	out := snap
	out.Groups = nil
	for _, g := range snap.Groups {
		if slices.Contains(groups, g.Group) {
			out.Groups = append(out.Groups, g)
		}
	}
	return out
}
