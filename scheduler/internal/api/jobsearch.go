package api

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/labels"
	"github.com/jetjob/jetjob/scheduler/internal/store"
	"github.com/jetjob/jetjob/shared/schedule"
	"github.com/jetjob/jetjob/shared/wire"
)

// Job listing and search: GET /api/v1/jobs.
const (
	defaultJobsLimit = 100
	maxJobsLimit     = 1000
)

// listJobs lists the jobs matching the filters in the asked order, a page
// at a time. Paging is keyset: the cursor is the last job's place in the
// order, so a page never skips or repeats a job however jobs change
// meanwhile. The id order also keeps the older "after" (last id seen) and
// "next" for its clients.
func (s *Server) listJobs(w http.ResponseWriter, r *http.Request) error {
	if err := onlyParams(r, "group", "q", "handler", "enabled", "schedule_type", "labels", "sort", "order", "limit", "cursor", "after", "before", "total"); err != nil {
		return err
	}
	f, err := jobFilter(r)
	if err != nil {
		return err
	}
	total := false
	switch v := r.URL.Query().Get("total"); v {
	case "", "false":
	case "true":
		total = true
	default:
		return invalidf("total=%q: want true or false", v)
	}
	f.Groups = readable(r)
	js, more, err := s.store.SearchJobs(r.Context(), f)
	if err != nil {
		return err
	}
	var out apiv1.JobList
	if len(js) > 0 {
		// Forward, "more" says jobs follow; backward (before), that jobs
		// precede, and the page's own key says some follow.
		first, last := js[0], js[len(js)-1]
		if f.Before == nil && more || f.Before != nil {
			out.Cursor = encodeJobCursor(f.Sort, f.Desc, store.KeyOf(last))
			if f.Sort == store.SortByID && !f.Desc {
				out.Next = last.ID
			}
		}
		if f.Before != nil && more || f.After != nil {
			out.Prev = encodeJobCursor(f.Sort, f.Desc, store.KeyOf(first))
		}
	}
	if total {
		var at *store.JobKey
		if len(js) > 0 {
			k := store.KeyOf(js[0])
			at = &k
		}
		n, before, err := s.store.CountJobs(r.Context(), f, at)
		if err != nil {
			return err
		}
		out.Total, out.Offset = &n, before
	}
	if err := s.store.FiredBy(r.Context(), js, s.now()); err != nil {
		return err
	}
	out.Jobs = docs(js, jobDoc)
	writeJSON(w, http.StatusOK, out)
	return nil
}

// firedJobDoc is the document of j with its last fire as of now
// (store.FiredBy): a fire planned ahead is not shown as fired. Should
// that read fail, the document leaves the last fire out and says so in
// the log rather than fail the write it answers.
func (s *Server) firedJobDoc(ctx context.Context, j store.Job) apiv1.Job {
	js := []store.Job{j}
	if err := s.store.FiredBy(ctx, js, s.now()); err != nil {
		s.log.Warn("job document without its last fire", zap.Int64("job", j.ID), zap.Error(err))
	}
	return jobDoc(js[0])
}

// jobFilter reads and checks every parameter, reporting all problems at once.
func jobFilter(r *http.Request) (store.JobFilter, error) {
	q := r.URL.Query()
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	f := store.JobFilter{Group: q.Get("group"), Query: q.Get("q"), Handler: q.Get("handler"), Limit: defaultJobsLimit,
		Sort: store.JobSort(q.Get("sort"))}
	if f.Group != "" && !wire.ValidName(f.Group) {
		add("group=%q is not a valid group name", f.Group)
	}
	if n := utf8.RuneCountInString(f.Query); n > maxNameLen || !utf8.ValidString(f.Query) || strings.ContainsRune(f.Query, 0) {
		add("q: want text of at most %d characters", maxNameLen)
	}
	if len(f.Handler) > maxHandlerLen || strings.ContainsRune(f.Handler, 0) || !utf8.ValidString(f.Handler) {
		add("handler: want a handler name of at most %d characters", maxHandlerLen)
	}
	if v := q.Get("enabled"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil || (v != "true" && v != "false") {
			add("enabled=%q: want true or false", v)
		}
		f.Enabled = &b
	}
	if v := q.Get("schedule_type"); v != "" {
		if _, err := schedule.ParseType(v); err != nil {
			add("schedule_type=%q: %v", v, err)
		}
		f.ScheduleType = v
	}
	if sel, err := labelsParam(r); err != nil {
		add("%s", strings.TrimPrefix(err.Error(), errInvalid.Error()+": "))
	} else {
		f.Labels = sel
	}
	if f.Sort == "" {
		f.Sort = store.SortByID
	} else if !slices.Contains(store.JobSorts, f.Sort) {
		add("sort=%q: want one of id, name, next_fire, updated", f.Sort)
	}
	switch v := q.Get("order"); v {
	case "", "asc":
	case "desc":
		f.Desc = true
	default:
		add("order=%q: want asc or desc", v)
	}
	if v := q.Get("limit"); v != "" {
		n, ok := decimal(v)
		if !ok || n < 1 || n > maxJobsLimit {
			add("limit=%q: want an integer from 1 to %d", v, maxJobsLimit)
		} else {
			f.Limit = int(n)
		}
	}
	cursor, after, before := q.Get("cursor"), q.Get("after"), q.Get("before")
	switch {
	case cursor != "" && after != "":
		add("cursor and after: pass one (after is the id order's older form of the cursor)")
	case before != "" && (cursor != "" || after != ""):
		add("before and cursor or after: pass one (before pages back, cursor forward)")
	case before != "":
		k, err := decodeJobCursor(before, f.Sort, f.Desc)
		if err != nil {
			add("before=%q: %v", before, err)
		} else {
			f.Before = &k
		}
	case cursor != "":
		k, err := decodeJobCursor(cursor, f.Sort, f.Desc)
		if err != nil {
			add("cursor=%q: %v", cursor, err)
		} else {
			f.After = &k
		}
	case after != "":
		id, ok := decimal(after)
		switch {
		case !ok:
			add("after=%q: want the last job id seen", after)
		case f.Sort != store.SortByID || f.Desc:
			add("after: only pages the id order (ascending); use cursor")
		default:
			f.After = &store.JobKey{ID: id}
		}
	}
	if len(problems) > 0 {
		return f, invalidf("%s", strings.Join(problems, "; "))
	}
	return f, nil
}

// A job cursor is opaque to clients: "j1.<sort>.<asc|desc>.<id>.<key>" in
// unpadded base64url, the key being the sort's value (a name, or a time in
// µs, "-" for no next fire). It names its order, so that a cursor is not
// silently misread under another sort.
func encodeJobCursor(sort store.JobSort, desc bool, k store.JobKey) string {
	dir := "asc"
	if desc {
		dir = "desc"
	}
	var key string
	switch sort {
	case store.SortByName:
		key = k.Name
	case store.SortByNextFire:
		key = "-"
		if k.NextFire != nil {
			key = strconv.FormatInt(k.NextFire.UnixMicro(), 10)
		}
	case store.SortByUpdated:
		key = strconv.FormatInt(k.Updated.UnixMicro(), 10)
	}
	return base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "j1.%s.%s.%d.%s", sort, dir, k.ID, key))
}

func decodeJobCursor(v string, sort store.JobSort, desc bool) (store.JobKey, error) {
	errBad := fmt.Errorf("not a cursor returned by this API (pass the previous page's cursor unchanged)")
	b, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil {
		return store.JobKey{}, errBad
	}
	parts := strings.SplitN(string(b), ".", 5)
	if len(parts) != 5 || parts[0] != "j1" {
		return store.JobKey{}, errBad
	}
	dir := "asc"
	if desc {
		dir = "desc"
	}
	if parts[1] != string(sort) || parts[2] != dir {
		return store.JobKey{}, fmt.Errorf("made for sort=%s&order=%s, not sort=%s&order=%s: keep the sort of the page it came from",
			parts[1], parts[2], sort, dir)
	}
	k := store.JobKey{}
	if k.ID, err = strconv.ParseInt(parts[3], 10, 64); err != nil || k.ID <= 0 {
		return k, errBad
	}
	key := parts[4]
	micros := func() (time.Time, error) {
		us, err := strconv.ParseInt(key, 10, 64)
		// A real cursor holds a stored time; one outside years 1-9999 was
		// forged, and PostgreSQL would refuse it with an error.
		if t := time.UnixMicro(us).UTC(); err == nil && t.Year() >= 1 && t.Year() <= 9999 {
			return t, nil
		}
		return time.Time{}, errBad
	}
	switch sort {
	case store.SortByName:
		if !utf8.ValidString(key) || strings.ContainsRune(key, 0) {
			return k, errBad
		}
		k.Name = key
	case store.SortByNextFire:
		if key != "-" {
			t, err := micros()
			if err != nil {
				return k, err
			}
			k.NextFire = &t
		}
	case store.SortByUpdated:
		if k.Updated, err = micros(); err != nil {
			return k, err
		}
	}
	return k, nil
}

// labelsParam is the request's label selector (?labels=env=prod,team=b),
// nil when it gives none: the one reading of it, for jobs and workflows.
func labelsParam(r *http.Request) (map[string]string, error) {
	v := r.URL.Query().Get("labels")
	if v == "" {
		return nil, nil
	}
	sel, err := labels.ParseSelector(v)
	if err != nil {
		return nil, invalidf("labels=%q: %v", v, err)
	}
	return sel, nil
}
