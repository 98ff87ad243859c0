package console

import (
	"net/http"
	"net/url"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// dashboardPage is the dashboard's data: GET /api/v1/dashboard and its
// chart.
type dashboardPage struct {
	Group string
	D     apiv1.Dashboard
	Chart barChart
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
	data := dashboardPage{Group: group}
	if _, err := c.call(r, http.MethodGet, "/api/v1/dashboard", q, nil, &data.D); err != nil {
		return err
	}
	data.Chart = dayChart(data.D.Days)
	return c.render(w, r, http.StatusOK, "dashboard", page{Title: "Dashboard", User: u, Data: data})
}
