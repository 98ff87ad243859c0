package console

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/shared/wire"
)

// The runs search page: GET /runs, a GET form over GET /api/v1/runs. The
// page passes the filters through to the API, which validates them (its
// 400 is shown above the form, the form kept as typed) and pages with its
// keyset cursor: the page never counts the table, it only asks for the
// next page after the last run shown.

// runSearchParams are the query parameters the runs page passes to the API.
// Everything else in the page's URL (the notice) stays with the page.
var runSearchParams = []string{"status", "job", "group", "worker", "trigger_type", "from", "to", "limit", "cursor"}

// runsPage is the runs page's data.
type runsPage struct {
	// Form is the filter form's state: the page's own query.
	Form url.Values
	// Statuses and TriggerTypes are the form's choices.
	Statuses     []wire.Status
	TriggerTypes []wire.TriggerType
	// Groups are the groups the user reads, offered for the group filter.
	Groups []string
	Runs   []apiv1.Run
	// JobNames are the names of the page's jobs, by id (see jobNames).
	JobNames map[int64]string
	// Older is the link to the next (older) page, empty on the last;
	// Newest the first page of the same search, set when paging.
	Older, Newest string
}

// Checked reports whether value is among the form's values of name (a
// status or trigger type checkbox).
func (p *runsPage) Checked(name, value string) bool {
	// The API also takes comma-separated lists (status=FAILED,LOST): a
	// shared link of that form shows its boxes ticked too.
	return slices.ContainsFunc(p.Form[name], func(v string) bool {
		return slices.ContainsFunc(strings.Split(v, ","), func(s string) bool { return strings.EqualFold(strings.TrimSpace(s), value) })
	})
}

// FormTime is the from or to filter as its datetime-local input shows it:
// an RFC 3339 time (a link made by hand or by a script) in UTC; anything
// else as typed.
func (p *runsPage) FormTime(name string) string { return inputTime(p.Form.Get(name)) }

// inputTime is a time filter's value as its datetime-local input shows it:
// an RFC 3339 time in UTC; anything else as typed.
func inputTime(v string) string {
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t.UTC().Format("2006-01-02T15:04:05")
	}
	return v
}

// Filtered reports whether any filter is set, for the empty state's words.
func (p *runsPage) Filtered() bool {
	for _, k := range runSearchParams {
		if k != "cursor" && k != "limit" && strings.Join(p.Form[k], "") != "" {
			return true
		}
	}
	return false
}

func (c *Console) runs(w http.ResponseWriter, r *http.Request) error {
	u, err := c.me(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	data := &runsPage{Form: q, Statuses: wire.Statuses,
		TriggerTypes: []wire.TriggerType{wire.TriggerSchedule, wire.TriggerMisfire, wire.TriggerManual, wire.TriggerRetry, wire.TriggerParent,
			wire.TriggerBackfill, wire.TriggerWorkflow, wire.TriggerMap, wire.TriggerReduce, wire.TriggerImport}}
	if data.Groups, err = c.groupNames(r); err != nil {
		return err
	}
	apiQuery, err := c.runSearchAPIQuery(r, q)
	var ae *APIError
	if errors.As(err, &ae) {
		return c.render(w, r, ae.Status, "runs", page{Title: c.lang(r, u).T("Runs"), User: u, Data: data, Error: ae.Error()})
	}
	if err != nil {
		return err
	}
	var list apiv1.RunList
	_, err = c.call(r, http.MethodGet, "/api/v1/runs", apiQuery, nil, &list)
	if errors.As(err, &ae) && (ae.Status == http.StatusBadRequest || ae.Status == http.StatusForbidden) {
		// A filter the API refuses (a bad value, a group the user may not
		// read): say why above the form, kept as typed.
		return c.render(w, r, ae.Status, "runs", page{Title: c.lang(r, u).T("Runs"), User: u, Data: data, Error: ae.Error()})
	}
	if err != nil {
		return err
	}
	data.Runs = list.Runs
	if data.JobNames, err = c.jobNames(r, jobIDs(list.Runs)); err != nil {
		return err
	}
	if list.Cursor != "" {
		data.Older = runsLink(q, list.Cursor)
	}
	if q.Get("cursor") != "" {
		data.Newest = runsLink(q, "")
	}
	return c.render(w, r, http.StatusOK, "runs", page{Title: c.lang(r, u).T("Runs"), User: u, Data: data})
}

// jobIDNamed reads the job filter: a job id as typed, or a job's name
// (in group, when given), looked up through GET /api/v1/jobs. A name no
// readable job has, or that jobs of several groups have, is a 400 that
// says so.
func (c *Console) jobIDNamed(r *http.Request, job, group string) (string, error) {
	if _, err := strconv.ParseInt(job, 10, 64); err == nil {
		return job, nil
	}
	q := url.Values{"q": {job}, "limit": {"100"}}
	if group != "" {
		q.Set("group", group)
	}
	var jl apiv1.JobList
	if _, err := c.call(r, http.MethodGet, "/api/v1/jobs", q, nil, &jl); err != nil {
		return "", err
	}
	var ids, groups []string
	for _, j := range jl.Jobs {
		if j.Name == job {
			ids, groups = append(ids, strconv.FormatInt(j.ID, 10)), append(groups, j.Group)
		}
	}
	switch len(ids) {
	case 1:
		return ids[0], nil
	case 0:
		return "", &APIError{Status: http.StatusBadRequest, Doc: apiv1.Error{Error: fmt.Sprintf("job %q: no job of that name you may read", job)}}
	}
	return "", &APIError{Status: http.StatusBadRequest, Doc: apiv1.Error{Error: fmt.Sprintf(
		"job %q: jobs of groups %s have that name; choose the group, or give the job's id", job, strings.Join(groups, ", "))}}
}

// maxJobNames bounds the job look-ups of one runs page: a page of runs of
// many different jobs shows the rest by id rather than make a call each.
const maxJobNames = 50

// jobNames looks up the names of jobs by id, one GET /api/v1/jobs/{id}
// per distinct job (at most maxJobNames): the run search and the backfill
// list return job ids only. A deleted job has no name; the page shows its
// id.
func (c *Console) jobNames(r *http.Request, ids []int64) (map[int64]string, error) {
	names := map[int64]string{}
	tried := map[int64]bool{}
	for _, id := range ids {
		if tried[id] || len(tried) >= maxJobNames {
			continue
		}
		tried[id] = true
		j, err := c.jobOfRun(r, id)
		if err != nil {
			return nil, err
		}
		if j != nil {
			names[j.ID] = j.Name
		}
	}
	return names, nil
}

// jobIDs are the runs' job ids.
func jobIDs(runs []apiv1.Run) []int64 {
	ids := make([]int64, len(runs))
	for i, run := range runs {
		ids[i] = run.JobID
	}
	return ids
}

// jobOfRun reads a run's job; nil, not an error, when it was deleted
// (runs outlive their job).
func (c *Console) jobOfRun(r *http.Request, id int64) (*apiv1.Job, error) {
	var j apiv1.Job
	_, err := c.call(r, http.MethodGet, "/api/v1/jobs/"+strconv.FormatInt(id, 10), nil, nil, &j)
	var ae *APIError
	if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &j, nil
}

// runSearchQuery turns the page's query into the API's: only the search's
// parameters, empty ones dropped (an empty form field means "any"), and the
// form's datetime-local times (no zone; the form says UTC) written as RFC
// 3339. Anything else is passed on as typed, for the API to judge.
func runSearchQuery(q url.Values) url.Values {
	out := url.Values{}
	for _, k := range runSearchParams {
		for _, v := range q[k] {
			if v = strings.TrimSpace(v); v == "" {
				continue
			}
			if k == "from" || k == "to" {
				v = formTime(v)
			}
			out.Add(k, v)
		}
	}
	return out
}

// runSearchAPIQuery is runSearchQuery with a job given by name looked up
// (jobIDNamed): the API's run search takes ids. An unknown or ambiguous
// name is an *APIError saying so.
func (c *Console) runSearchAPIQuery(r *http.Request, q url.Values) (url.Values, error) {
	out := runSearchQuery(q)
	if job := out.Get("job"); job != "" {
		id, err := c.jobIDNamed(r, job, out.Get("group"))
		if err != nil {
			return nil, err
		}
		out.Set("job", id)
	}
	return out, nil
}

// formTime reads an <input type=datetime-local> value as UTC and writes
// it as RFC 3339; any other text is returned unchanged.
func formTime(v string) string {
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02T15:04:05", "2006-01-02T15:04:05.999999999"} {
		if t, err := time.ParseInLocation(layout, v, time.UTC); err == nil {
			return t.Format(time.RFC3339Nano)
		}
	}
	return v
}

// runsLink is the runs page with the same filters at cursor (the first
// page when cursor is empty); the notice is not carried along.
func runsLink(q url.Values, cursor string) string {
	l := url.Values{}
	for _, k := range runSearchParams {
		if k == "cursor" {
			continue
		}
		for _, v := range q[k] {
			if strings.TrimSpace(v) != "" {
				l.Add(k, v)
			}
		}
	}
	if cursor != "" {
		l.Set("cursor", cursor)
	}
	if len(l) == 0 {
		return "/runs"
	}
	return "/runs?" + l.Encode()
}

// runID reads the {id} of a run route: a positive integer, or a 400
// naming what was given.
func runID(r *http.Request) (int64, error) {
	return pathID(r, http.StatusBadRequest, "run id %q: want a positive integer")
}

// active reports whether a run can still change: its log may grow and it
// may be killed.
func active(status string) bool { return !wire.Status(status).Terminal() }

// BulkHidden are the page's filter fields for its bulk form (bulk.go).
func (p *runsPage) BulkHidden() [][2]string { return bulkHidden(p.Form) }
