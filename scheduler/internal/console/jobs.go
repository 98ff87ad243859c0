package console

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/i18n"
)

// jobsPageSize is how many jobs one page of the list shows.
const jobsPageSize = 50

// jobFilterParams are the list's filter parameters, named as the API's
// GET /jobs names them, in the order the filter form shows them; sort,
// order and the paging position come on top.
var jobFilterParams = []string{"q", "group", "handler", "enabled", "schedule_type", "labels"}

// jobsPage is the job list's data.
type jobsPage struct {
	// Filter is the page's query without its paging position: the filter
	// form's values, and what the sort and paging links keep.
	Filter url.Values
	Sort   string
	Order  string
	// Groups are the readable groups, for the group filter;
	// ScheduleTypes the schedule filter's choices.
	Groups        []string
	ScheduleTypes []string
	Jobs          []apiv1.Job
	// NextURL is the next page's link ("" on the last page), PrevURL the
	// previous page's ("" on the first); Paged says this is not the first
	// page.
	NextURL, PrevURL string
	Paged            bool
	// Total is how many jobs match the filters, Offset how many of them
	// come before this page: "51–100 of 1,234".
	Total, Offset int
	// Filtered says some filter is set (the empty state says so).
	Filtered bool
	// Back is this page's URL, where a row action returns to.
	Back string
	// lang is the page's language, for Range.
	lang i18n.Lang
}

// SortURL is the link of a column header: sorted by col, ascending unless
// the list is already sorted by it ascending, first page, filters kept.
func (p *jobsPage) SortURL(col string) string {
	q := cloneValues(p.Filter)
	order := "asc"
	if p.Sort == col && p.Order != "desc" {
		order = "desc"
	}
	q.Set("sort", col)
	q.Set("order", order)
	return listURL(q)
}

// SortState is a column's aria-sort value: ascending, descending or none.
func (p *jobsPage) SortState(col string) string {
	if p.Sort != col {
		return "none"
	}
	if p.Order == "desc" {
		return "descending"
	}
	return "ascending"
}

// Range is the page's place among the matches: "51–100 of 1,234".
func (p *jobsPage) Range() string {
	if len(p.Jobs) == 0 {
		return p.lang.T("0 of %s", thousands(p.Total))
	}
	return p.lang.T("%s–%s of %s", thousands(p.Offset+1), thousands(p.Offset+len(p.Jobs)), thousands(p.Total))
}

// FirstURL is the first page with the same filters and sort.
func (p *jobsPage) FirstURL() string { return listURL(p.sorted()) }

// listURL is the job list with query q.
func listURL(q url.Values) string {
	if len(q) == 0 {
		return "/jobs"
	}
	return "/jobs?" + q.Encode()
}

// sorted is the filters plus the sort, without a paging position.
func (p *jobsPage) sorted() url.Values {
	q := cloneValues(p.Filter)
	if p.Sort != "" {
		q.Set("sort", p.Sort)
	}
	if p.Order != "" {
		q.Set("order", p.Order)
	}
	return q
}

func cloneValues(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}

// jobs lists the jobs the user may read: the filters, sort and paging are
// the API's (GET /api/v1/jobs), and live in the page's URL. A filter the
// API refuses shows the list's form with the API's words.
func (c *Console) jobs(w http.ResponseWriter, r *http.Request) error {
	u, err := c.me(r)
	if err != nil {
		return err
	}
	in := r.URL.Query()
	back := cloneValues(in)
	back.Del(noticeParam) // a row action brings its own
	l := c.lang(r, u)
	data := &jobsPage{Filter: url.Values{}, Sort: in.Get("sort"), Order: in.Get("order"), Back: listURL(back),
		ScheduleTypes: fieldNamed("schedule_type").Options, lang: l}
	for _, k := range jobFilterParams {
		if v := in.Get(k); v != "" {
			data.Filter.Set(k, v)
			data.Filtered = true
		}
	}
	if data.Groups, err = c.groupNames(r); err != nil {
		return err
	}

	q := data.sorted()
	q.Set("limit", strconv.Itoa(jobsPageSize))
	q.Set("total", "true")
	for _, k := range []string{"cursor", "after", "before"} {
		if v := in.Get(k); v != "" {
			q.Set(k, v)
			data.Paged = true
		}
	}
	var jl apiv1.JobList
	_, err = c.call(r, http.MethodGet, "/api/v1/jobs", q, nil, &jl)
	var ae *APIError
	if errors.As(err, &ae) && ae.Status == http.StatusBadRequest {
		return c.render(w, r, http.StatusBadRequest, "jobs", page{Title: l.T("Jobs"), User: u, Error: ae.Error(), Data: data})
	}
	if err != nil {
		return err
	}
	data.Jobs = jl.Jobs
	if jl.Total != nil {
		data.Total, data.Offset = *jl.Total, jl.Offset
	}
	if jl.Cursor != "" {
		next := data.sorted()
		next.Set("cursor", jl.Cursor)
		data.NextURL = listURL(next)
	}
	if jl.Prev != "" {
		prev := data.sorted()
		if data.Offset > jobsPageSize {
			prev.Set("before", jl.Prev)
		}
		// else the page before is the first: its own plain link
		data.PrevURL = listURL(prev)
	}
	return c.render(w, r, http.StatusOK, "jobs", page{Title: l.T("Jobs"), User: u, Data: data})
}

// jobAction is one of the job's buttons: POST /api/v1/jobs/{id}<suffix>
// with the document body makes of the form, then back to where the form
// came from (its "back" field, a path on this site) with a note.
func (c *Console) jobAction(suffix string, done notice, body func(url.Values) any) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, err := postedForm(r, consoleID)
		if err != nil {
			return err
		}
		var j apiv1.Job
		if _, err := c.call(r, http.MethodPost, jobPath(id)+suffix, nil, body(r.PostForm), &j); err != nil {
			return err
		}
		back, ok := localPath(r.PostForm.Get("back"))
		if !ok {
			back = jobURL(id)
		}
		redirect(w, r, back, done)
		return nil
	}
}

// disableBody is the disable form's optional note (why the job is paused).
func disableBody(f url.Values) any {
	return apiv1.DisableRequest{Note: strings.TrimSpace(f.Get("note"))}
}

// enableBody is the enable form's choice for the fires missed meanwhile.
func enableBody(f url.Values) any {
	return apiv1.EnableRequest{CatchUp: f.Get("catch_up")}
}

// deleteJob deletes the job (the confirmation is the browser's, before the
// POST: this POST is the real action) and returns to the list.
func (c *Console) deleteJob(w http.ResponseWriter, r *http.Request) error {
	return c.remove(w, r, jobKind, noticeJobDeleted)
}

// triggerJob starts a run now, with the form's params when given (else
// the job's own, sent as typed), and opens the new run's page.
func (c *Console) triggerJob(w http.ResponseWriter, r *http.Request) error {
	return c.trigger(w, r, jobKind, noticeRunTriggered)
}

// runURL is the console page of run id.
func runURL(id int64) string { return "/runs/" + strconv.FormatInt(id, 10) }

// objectKind is what the buttons a job's page and a workflow's page share
// (Trigger, Delete) differ in between the two.
type objectKind struct {
	parseID    func(*http.Request) (int64, error) // the path's id
	apiPath    func(int64) string                 // its API resource
	listURL    string                             // the console's list of the kind
	runURL     func(int64) string                 // the console page of a run it started
	trimParams bool                               // a blank params box is none (else sent as typed)
}

var jobKind = objectKind{parseID: consoleID, apiPath: jobPath, listURL: "/jobs", runURL: runURL}

// trigger is a Trigger button: POST <its API resource>/trigger with the
// form's params when given, else the job's or workflow's own, then the new
// run's page with the notice done.
func (c *Console) trigger(w http.ResponseWriter, r *http.Request, k objectKind, done notice) error {
	id, err := postedForm(r, k.parseID)
	if err != nil {
		return err
	}
	var req apiv1.TriggerRequest
	p := r.PostForm.Get("params")
	if k.trimParams {
		p = strings.TrimSpace(p)
	}
	if p != "" {
		req.Params = &p
	}
	// A job's trigger form may give the run its own priority (the API
	// checks its range); empty keeps the job's.
	if v := strings.TrimSpace(r.PostForm.Get("priority")); v != "" {
		prio, err := strconv.Atoi(v)
		if err != nil {
			return &APIError{Status: http.StatusBadRequest, Doc: apiv1.Error{Error: "priority " + strconv.Quote(v) + ": want a whole number from -100 to 100"}}
		}
		req.Priority = &prio
	}
	var run apiv1.Run
	if _, err := c.call(r, http.MethodPost, k.apiPath(id)+"/trigger", nil, req, &run); err != nil {
		return err
	}
	redirect(w, r, k.runURL(run.ID), done)
	return nil
}

// remove is a Delete button: DELETE its API resource, then the kind's
// list with the notice done.
func (c *Console) remove(w http.ResponseWriter, r *http.Request, k objectKind, done notice) error {
	id, err := k.parseID(r)
	if err != nil {
		return err
	}
	if _, err := c.call(r, http.MethodDelete, k.apiPath(id), nil, nil, nil); err != nil {
		return err
	}
	redirect(w, r, k.listURL, done)
	return nil
}
