package console

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// The backfills page: every backfill of the caller's groups, newest first,
// with its progress, and a cancel button on a running one.

var noticeBackfillCancelled = newNotice("backfill-cancelled", "Backfill cancelled: no further run is written; runs already out finish.")

type backfillsPage struct {
	Group, State string
	Groups       []string
	States       []string
	Backfills    []apiv1.Backfill
	JobNames     map[int64]string
}

func (c *Console) backfills(w http.ResponseWriter, r *http.Request) error {
	u, err := c.me(r)
	if err != nil {
		return err
	}
	in := r.URL.Query()
	data := backfillsPage{Group: in.Get("group"), State: in.Get("state"),
		States: []string{apiv1.BackfillRunning, apiv1.BackfillCompleted, apiv1.BackfillCancelled}}
	q := url.Values{}
	for k, v := range map[string]string{"group": data.Group, "state": data.State} {
		if v != "" {
			q.Set(k, v)
		}
	}
	var bl apiv1.BackfillList
	if _, err := c.call(r, http.MethodGet, "/api/v1/backfills", q, nil, &bl); err != nil {
		return err
	}
	data.Backfills = bl.Backfills
	if data.Groups, err = c.groupNames(r); err != nil {
		return err
	}
	ids := make([]int64, 0, len(bl.Backfills))
	for _, b := range bl.Backfills {
		ids = append(ids, b.JobID)
	}
	if data.JobNames, err = c.jobNames(r, ids); err != nil {
		return err
	}
	return c.render(w, r, http.StatusOK, "backfills", page{Title: c.lang(r, u).T("Backfills"), User: u, Data: data})
}

// cancelBackfill cancels a running backfill and goes back to the list.
func (c *Console) cancelBackfill(w http.ResponseWriter, r *http.Request) error {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		return &APIError{Status: http.StatusNotFound, Doc: apiv1.Error{Error: "no such backfill"}}
	}
	if _, err := c.call(r, http.MethodPost, "/api/v1/backfills/"+strconv.FormatInt(id, 10)+"/cancel", nil, nil, nil); err != nil {
		return err
	}
	redirect(w, r, "/backfills", noticeBackfillCancelled)
	return nil
}
