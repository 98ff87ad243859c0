package console

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/shared/wire"
)

// A group's limits (cap, rate limit) on the workers page, and its queue
// page: what holds and waits for them (docs/flow-control.md).

// limitsForm is a group's limits form as sent.
type limitsForm struct {
	Group, MaxRunning, RateLimit string
}

// groupLimits sets a group's cap and rate limit through PATCH
// /api/v1/groups/{name} (which decides who may); a refused value shows
// the workers page again with the form as sent and why.
func (c *Console) groupLimits(w http.ResponseWriter, r *http.Request) error {
	if err := r.ParseForm(); err != nil {
		return badForm(err)
	}
	f := limitsForm{Group: r.PathValue("name"), MaxRunning: strings.TrimSpace(r.PostForm.Get("max_running")),
		RateLimit: strings.TrimSpace(r.PostForm.Get("rate_limit"))}
	body := apiv1.GroupLimitsRequest{RateLimit: &f.RateLimit}
	n, err := strconv.Atoi(f.MaxRunning)
	if f.MaxRunning == "" {
		n, err = 0, nil // empty: no cap
	}
	if err != nil {
		return c.refuseLimits(w, r, f, http.StatusBadRequest, msgf("max running: want a whole number from 0 (no cap) to %d", wire.MaxConcurrencyLimit))
	}
	body.MaxRunning = &n
	_, err = c.call(r, http.MethodPatch, "/api/v1/groups/"+url.PathEscape(f.Group), nil, body, nil)
	if ae := formRefusal(err); ae != nil {
		return c.refuseLimits(w, r, f, ae.Status, ae)
	}
	if err != nil {
		return err
	}
	redirect(w, r, "/workers?group="+url.QueryEscape(f.Group), noticeGroupLimits)
	return nil
}

// refuseLimits shows the workers page of f's group with its limits form
// as sent and why it was refused.
func (c *Console) refuseLimits(w http.ResponseWriter, r *http.Request, f limitsForm, code int, why error) error {
	u, err := c.me(r)
	if err != nil {
		return err
	}
	data, err := c.workersData(r, f.Group)
	if err != nil {
		return err
	}
	l := c.lang(r, u)
	data.Limits, data.LimitsError = f, inLang(why, l)
	return c.render(w, r, code, "workers", page{Title: l.T("Workers"), User: u, Data: data})
}

// groupQueue shows GET /api/v1/groups/{name}/queue: who holds the group's
// slots, who waits and in which order, the rate limit's state, and the
// group's runs in flight.
func (c *Console) groupQueue(w http.ResponseWriter, r *http.Request) error {
	u, err := c.me(r)
	if err != nil {
		return err
	}
	name := r.PathValue("name")
	var q apiv1.GroupQueue
	if _, err := c.call(r, http.MethodGet, "/api/v1/groups/"+url.PathEscape(name)+"/queue", nil, nil, &q); err != nil {
		return err
	}
	return c.render(w, r, http.StatusOK, "group_queue", page{Title: c.lang(r, u).T("Queue of group %s", name), User: u,
		Data: q})
}
