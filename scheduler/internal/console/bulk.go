package console

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// Bulk operations on runs from the runs page: the rows ticked, or every
// run matching the page's filter (the first 500: the API's bound). A
// first POST shows what would be done and to how many runs, with a
// confirm button (no script needed); the confirmed POST asks the API's
// bulk endpoint, which authorizes and audits each run as alone, and the
// page lists what was done and what was refused, and why.

// maxBulkRuns is the API's bound on one bulk request (api.maxBulk).
const maxBulkRuns = 500

// bulkPage is the confirmation or the result of a bulk operation.
type bulkPage struct {
	Action, Verb string
	IDs          []int64
	// Back is the runs page the operation started from.
	Back string
	// Capped says the filter matched more runs than one request takes.
	Capped bool
	Result *apiv1.RunsBulkResult
}

// Shown are the first ids, for the confirmation's list.
func (p bulkPage) Shown() []int64 { return p.IDs[:min(len(p.IDs), 50)] }

// Refused are the items that were not done.
func (p bulkPage) Refused() []apiv1.RunsBulkItem {
	var out []apiv1.RunsBulkItem
	if p.Result != nil {
		for _, it := range p.Result.Results {
			if it.Error != "" {
				out = append(out, it)
			}
		}
	}
	return out
}

var bulkVerbs = map[string]string{apiv1.BulkKill: "Kill", apiv1.BulkRerun: "Re-run", apiv1.BulkDelete: "Delete"}

func (c *Console) bulkRuns(w http.ResponseWriter, r *http.Request) error {
	u, err := c.me(r)
	if err != nil {
		return err
	}
	if err := r.ParseForm(); err != nil {
		return badForm(err)
	}
	f := r.PostForm
	data := bulkPage{Action: f.Get("action"), Back: runsLink(f, "")}
	if data.Verb = bulkVerbs[data.Action]; data.Verb == "" {
		return &APIError{Status: http.StatusBadRequest, Doc: apiv1.Error{Error: "action: want kill, rerun or delete"}}
	}
	if f.Get("scope") == "matching" {
		q, err := c.runSearchAPIQuery(r, f)
		if err != nil {
			return err
		}
		q.Set("limit", strconv.Itoa(maxBulkRuns))
		q.Del("cursor")
		var list apiv1.RunList
		if _, err := c.call(r, http.MethodGet, "/api/v1/runs", q, nil, &list); err != nil {
			return err
		}
		for _, run := range list.Runs {
			data.IDs = append(data.IDs, run.ID)
		}
		data.Capped = list.Cursor != ""
	} else if data.IDs, err = bulkIDs(f, "run"); err != nil {
		return err
	}
	if len(data.IDs) > maxBulkRuns {
		data.IDs, data.Capped = data.IDs[:maxBulkRuns], true
	}
	l := c.lang(r, u)
	title := l.T(data.Verb + " runs") // "Kill runs", "Re-run runs", "Delete runs"
	if len(data.IDs) == 0 {
		return c.render(w, r, http.StatusBadRequest, "bulk", page{Title: title, User: u, Data: data,
			Error: l.T("No run selected: tick the runs, or choose every run matching the filter.")})
	}
	if f.Get("confirm") != "yes" {
		return c.render(w, r, http.StatusOK, "bulk", page{Title: title, User: u, Data: data})
	}
	var res apiv1.RunsBulkResult
	if _, err := c.call(r, http.MethodPost, "/api/v1/runs/bulk", nil, apiv1.RunsBulk{Action: data.Action, IDs: data.IDs}, &res); err != nil {
		return err
	}
	data.Result = &res
	return c.render(w, r, http.StatusOK, "bulk", page{Title: title, User: u, Data: data})
}

// bulkIDs reads the ids a bulk form ticked (its "id" fields), each once,
// in the order given; one that is not a positive number (what: "run" or
// "job") refuses the whole form.
func bulkIDs(f url.Values, what string) ([]int64, error) {
	var ids []int64
	seen := map[int64]bool{}
	for _, v := range f["id"] {
		id, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || id <= 0 {
			return nil, &APIError{Status: http.StatusBadRequest, Doc: apiv1.Error{Error: "id " + strconv.Quote(v) + ": want a " + what + " id"}}
		}
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// bulkHidden are the filter fields a bulk form carries, so that "every
// run matching the filter" is the page's search and the result page can
// go back to it.
func bulkHidden(q url.Values) [][2]string {
	var out [][2]string
	for _, k := range runSearchParams {
		if k == "cursor" {
			continue
		}
		for _, v := range q[k] {
			if v = strings.TrimSpace(v); v != "" {
				out = append(out, [2]string{k, v})
			}
		}
	}
	return out
}
