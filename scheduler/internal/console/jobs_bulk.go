package console

import (
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// Bulk operations on jobs from the jobs list: the rows ticked (only the
// jobs the user may operate have a box). A first POST shows what would be
// done and to how many jobs, with the note field of a disable and a
// confirm button (no script needed); the confirmed POST asks the API's
// POST /api/v1/jobs/bulk with the jobs' ids, which authorizes and audits
// each job as its own route would, and the page lists what happened to
// each job: done, or refused and why.

// maxBulkJobs is the most jobs one bulk operation of the console names:
// the API's bound (api.maxBulkMax), which the request asks for as its max.
const maxBulkJobs = 1000

// jobsBulkPage is the confirmation or the result of a bulk operation on
// jobs.
type jobsBulkPage struct {
	Action, Verb string
	IDs          []int64
	// Names are the ticked jobs' names as the list showed them, by id, for
	// the confirmation (a name not sent is shown as its id).
	Names map[int64]string
	Note  string
	// Back is the jobs list the operation started from.
	Back   string
	Result *apiv1.BulkResult
}

// Shown are the first ids, for the confirmation's list.
func (p jobsBulkPage) Shown() []int64 { return p.IDs[:min(len(p.IDs), 50)] }

// Refused counts the items that were not done.
func (p jobsBulkPage) Refused() int {
	if p.Result == nil {
		return 0
	}
	return len(p.Result.Items) - p.Result.Done
}

// jobsBulkVerbs are the actions' verbs, in English: a page's texts are
// whole sentences by verb ("Disable jobs", "Disable %s jobs?"), as a
// verb alone reads differently in another language.
var jobsBulkVerbs = map[string]string{"enable": "Enable", "disable": "Disable", "trigger": "Trigger", "delete": "Delete"}

func (c *Console) bulkJobs(w http.ResponseWriter, r *http.Request) error {
	u, err := c.me(r)
	if err != nil {
		return err
	}
	if err := r.ParseForm(); err != nil {
		return badForm(err)
	}
	f := r.PostForm
	data := jobsBulkPage{Action: f.Get("action"), Note: strings.TrimSpace(f.Get("note")), Names: map[int64]string{}}
	if back, ok := localPath(f.Get("back")); ok && strings.HasPrefix(back, "/jobs") {
		data.Back = back
	} else {
		data.Back = "/jobs"
	}
	if data.Verb = jobsBulkVerbs[data.Action]; data.Verb == "" {
		return &APIError{Status: http.StatusBadRequest, Doc: apiv1.Error{Error: "action: want enable, disable, trigger or delete"}}
	}
	if data.IDs, err = bulkIDs(f, "job"); err != nil {
		return err
	}
	if len(data.IDs) > maxBulkJobs {
		return &APIError{Status: http.StatusBadRequest, Doc: apiv1.Error{Error: "at most " + thousands(maxBulkJobs) + " jobs at a time"}}
	}
	for _, v := range f["name"] {
		// "id:name", sent by the list with each box, only for display.
		if id, name, ok := strings.Cut(v, ":"); ok {
			if n, err := strconv.ParseInt(id, 10, 64); err == nil && slices.Contains(data.IDs, n) {
				data.Names[n] = name
			}
		}
	}
	l := c.lang(r, u)
	title := l.T(data.Verb + " jobs") // "Enable jobs", "Delete jobs"
	if len(data.IDs) == 0 {
		return c.render(w, r, http.StatusBadRequest, "jobs_bulk", page{Title: title, User: u, Data: data,
			Error: l.T("No job selected: tick the jobs in the list first.")})
	}
	if f.Get("confirm") != "yes" {
		return c.render(w, r, http.StatusOK, "jobs_bulk", page{Title: title, User: u, Data: data})
	}
	var res apiv1.BulkResult
	req := apiv1.BulkRequest{IDs: data.IDs, Action: data.Action, Note: data.Note, Max: maxBulkJobs}
	_, err = c.call(r, http.MethodPost, "/api/v1/jobs/bulk", nil, req, &res)
	var ae *APIError
	if errors.As(err, &ae) && ae.Status == http.StatusBadRequest {
		// A note too long, say: the confirmation again, with the API's words.
		return c.render(w, r, http.StatusBadRequest, "jobs_bulk", page{Title: title, User: u, Data: data, Error: ae.Error()})
	}
	if err != nil {
		return err
	}
	data.Result = &res
	return c.render(w, r, http.StatusOK, "jobs_bulk", page{Title: title, User: u, Data: data})
}
