package console

import (
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

// failureWindow is the API's window of the dashboard's failing jobs.
const failureWindow = 24 * time.Hour

// dashboardPage is the dashboard's data: GET /api/v1/dashboard and its
// chart.
type dashboardPage struct {
	Group string
	// Groups are the readable groups, the group filter's choices.
	Groups []string
	D      apiv1.Dashboard
	Chart  barChart
	// Now is when the page was read: the failing jobs' window ends here.
	Now time.Time
}

// FailuresURL is the runs search behind a failing job's count: its failed
// runs (wire.FailedStatuses, the statuses the API counts) of the window.
func (p dashboardPage) FailuresURL(jobID int64) string {
	st := make([]string, len(wire.FailedStatuses))
	for i, s := range wire.FailedStatuses {
		st[i] = string(s)
	}
	q := url.Values{"job": {strconv.FormatInt(jobID, 10)}, "status": {strings.Join(st, ",")},
		"from": {p.Now.Add(-failureWindow).UTC().Truncate(time.Second).Format(time.RFC3339)}}
	return "/runs?" + q.Encode()
}

func (c *Console) dashboard(w http.ResponseWriter, r *http.Request) error {
	u, err := c.me(r)
	if err != nil {
		return err
	}
	group := r.URL.Query().Get("group")
	q := url.Values{}
	if group != "" {
		q.Set("group", group)
	}
	data := dashboardPage{Group: group, Now: time.Now()}
	if _, err := c.call(r, http.MethodGet, "/api/v1/dashboard", q, nil, &data.D); err != nil {
		return err // another group's dashboard: the API's 403
	}
	if data.Groups, err = c.groupNames(r); err != nil {
		return err
	}
	if group != "" && !slices.Contains(data.Groups, group) {
		// The API counts a group that does not exist as one without runs:
		// say so rather than show zeros.
		return &APIError{Status: http.StatusNotFound, Doc: apiv1.Error{Error: fmt.Sprintf("no group %q", group)}}
	}
	data.Chart = dayChart(data.D.Days)
	return c.render(w, r, http.StatusOK, "dashboard", page{Title: c.lang(r, u).T("Dashboard"), User: u, Data: data})
}
