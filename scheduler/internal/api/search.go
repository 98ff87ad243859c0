package api

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jetjob/jetjob/scheduler/internal/store"
	"github.com/jetjob/jetjob/shared/wire"
)

// Run search: GET /api/v1/runs.
const (
	defaultSearchLimit = 50
	maxSearchLimit     = 1000
)

// searchRuns lists runs matching the filters, newest first by scheduled
// time, a page at a time (keyset: the cursor is the last run's place in
// that order, so paging never skips or repeats a run however many are
// added meanwhile).
func (s *Server) searchRuns(w http.ResponseWriter, r *http.Request) error {
	if err := onlyParams(r, "job", "group", "worker", "status", "trigger_type", "from", "to", "limit", "cursor"); err != nil {
		return err
	}
	f, err := searchFilter(r)
	if err != nil {
		return err
	}
	f.Groups = readable(r)
	rs, more, err := s.store.SearchRuns(r.Context(), f)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, runList(rs, more))
	return nil
}

// searchFilter reads and checks every parameter, reporting all problems at
// once.
func searchFilter(r *http.Request) (store.RunFilter, error) {
	q := r.URL.Query()
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	f := store.RunFilter{Limit: defaultSearchLimit, Group: q.Get("group")}
	if v := q.Get("job"); v != "" {
		if id, ok := decimal(v); !ok || id <= 0 {
			add("job=%q: want a positive job id", v)
		} else {
			f.JobID = id
		}
	}
	if f.Group != "" && !wire.ValidName(f.Group) {
		add("group=%q is not a valid group name", f.Group)
	}
	if f.Worker = q.Get("worker"); len(f.Worker) > maxHandlerLen || !utf8.ValidString(f.Worker) || strings.ContainsRune(f.Worker, 0) {
		add("worker: want a worker id of at most %d characters", maxHandlerLen)
	}
	for _, v := range listParam(q["status"]) {
		st, err := wire.ParseStatus(strings.ToUpper(v))
		if err != nil {
			add("status: %v", err)
			continue
		}
		f.Statuses = appendNew(f.Statuses, st)
	}
	for _, v := range listParam(q["trigger_type"]) {
		tt := wire.TriggerType(strings.ToLower(v))
		if !validTriggerType(tt) {
			add("trigger_type %q: want one of schedule, misfire, manual, retry, parent, backfill, workflow, import", v)
			continue
		}
		f.TriggerTypes = appendNew(f.TriggerTypes, tt)
	}
	queryTimes(q, &f.From, &f.To, add)
	if !f.From.IsZero() && !f.To.IsZero() && !f.From.Before(f.To) {
		add("from (%s) must be before to (%s)", q.Get("from"), q.Get("to"))
	}
	if v := q.Get("limit"); v != "" {
		n, ok := decimal(v)
		if !ok || n < 1 || n > maxSearchLimit {
			add("limit=%q: want an integer from 1 to %d", v, maxSearchLimit)
		} else {
			f.Limit = int(n)
		}
	}
	if v := q.Get("cursor"); v != "" {
		k, err := decodeCursor(v)
		if err != nil {
			add("cursor=%q: %v", v, err)
		} else {
			f.After = &k
		}
	}
	if len(problems) > 0 {
		return f, invalidf("%s", strings.Join(problems, "; "))
	}
	return f, nil
}

// listParam splits repeated and comma-separated values, dropping empty ones.
func listParam(vs []string) []string {
	var out []string
	for _, v := range vs {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

func appendNew[T comparable](s []T, v T) []T {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}

// validTriggerType is a trigger type a run can have: those of the wire,
// and import (history brought from another scheduler, never triggered).
func validTriggerType(t wire.TriggerType) bool {
	return t.Valid() || t == wire.TriggerImport
}

// The cursor is opaque to clients: "v1.<scheduled_at in µs>.<id>" in
// unpadded base64url. The version lets the order change without old
// cursors being misread.
func encodeCursor(k store.RunKey) string {
	return base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "v1.%d.%d", k.ScheduledAt.UnixMicro(), k.ID))
}

func decodeCursor(v string) (store.RunKey, error) {
	errBad := fmt.Errorf("not a cursor returned by this API (pass the previous page's cursor unchanged)")
	b, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil {
		return store.RunKey{}, errBad
	}
	parts := strings.Split(string(b), ".")
	if len(parts) != 3 || parts[0] != "v1" {
		return store.RunKey{}, errBad
	}
	us, err1 := strconv.ParseInt(parts[1], 10, 64)
	id, err2 := strconv.ParseInt(parts[2], 10, 64)
	if err1 != nil || err2 != nil || id <= 0 {
		return store.RunKey{}, errBad
	}
	// A real cursor holds a run's scheduled time; one outside years
	// 1-9999 was forged, and PostgreSQL would refuse some of them with an
	// error rather than an empty page.
	at := time.UnixMicro(us).UTC()
	if at.Year() < 1 || at.Year() > 9999 {
		return store.RunKey{}, errBad
	}
	return store.RunKey{ScheduledAt: at, ID: id}, nil
}
