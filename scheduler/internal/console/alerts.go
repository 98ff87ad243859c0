package console

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// The alerts pages (docs/alerts.md): the open (or all) alerts, and one
// alert with its deliveries and every attempt, where an operator
// acknowledges it or mutes it until a time with a reason (POST
// /api/v1/alerts/{id}/ack, …/mute).

// alertsPage is the list's data.
type alertsPage struct {
	Alerts []apiv1.Alert
	// All lists closed alerts too.
	All bool
}

// alertPage is one alert's data.
type alertPage struct {
	Alert    apiv1.Alert
	Channels map[int64]apiv1.Channel
	// MuteUntil is the mute form's proposed end (an hour from now, UTC,
	// as a datetime-local input reads it).
	MuteUntil string
	Error     string
}

// muteLayout is a datetime-local input's value, read as UTC.
const muteLayout = "2006-01-02T15:04"

func (c *Console) alerts(w http.ResponseWriter, r *http.Request) error {
	u, err := c.me(r)
	if err != nil {
		return err
	}
	all := r.URL.Query().Get("state") == "all"
	q := url.Values{"state": {"open"}}
	if all {
		q.Set("state", "all")
	}
	var as []apiv1.Alert
	if _, err := c.call(r, http.MethodGet, "/api/v1/alerts", q, nil, &as); err != nil {
		return err
	}
	return c.render(w, r, http.StatusOK, "alerts", page{Title: c.lang(r, u).T("Alerts"), User: u, Data: alertsPage{Alerts: as, All: all}})
}

func (c *Console) alert(w http.ResponseWriter, r *http.Request) error {
	return c.alertWith(w, r, http.StatusOK, "")
}

func (c *Console) alertWith(w http.ResponseWriter, r *http.Request, code int, problem string) error {
	u, err := c.me(r)
	if err != nil {
		return err
	}
	var a apiv1.Alert
	if _, err := c.call(r, http.MethodGet, "/api/v1/alerts/"+r.PathValue("id"), nil, nil, &a); err != nil {
		return err
	}
	_, byID, err := c.channelsByID(r)
	if err != nil {
		return err
	}
	return c.render(w, r, code, "alert", page{Title: c.lang(r, u).T("Alert %d", a.ID), User: u, Data: alertPage{Alert: a, Channels: byID,
		MuteUntil: time.Now().UTC().Add(time.Hour).Format(muteLayout), Error: problem}})
}

func (c *Console) ackAlert(w http.ResponseWriter, r *http.Request) error {
	if _, err := c.call(r, http.MethodPost, "/api/v1/alerts/"+r.PathValue("id")+"/ack", nil, nil, nil); err != nil {
		return err
	}
	redirect(w, r, "/alerts/"+r.PathValue("id"), noticeAlertAcked)
	return nil
}

// muteAlert silences the alert until the form's time (UTC) with its
// reason; an empty time lifts the silence.
func (c *Console) muteAlert(w http.ResponseWriter, r *http.Request) error {
	if err := r.ParseForm(); err != nil {
		return badForm(err)
	}
	m := apiv1.Mute{Reason: strings.TrimSpace(r.PostForm.Get("reason"))}
	n := noticeAlertUnmuted
	if s := strings.TrimSpace(r.PostForm.Get("until")); s != "" {
		t, err := time.ParseInLocation(muteLayout, s, time.UTC)
		if err != nil {
			return c.alertWith(w, r, http.StatusBadRequest, fmt.Sprintf("until %q: want a date and time like 2026-11-28T15:00 (UTC)", s))
		}
		m.Until, n = t, noticeAlertMuted
	}
	_, err := c.call(r, http.MethodPost, "/api/v1/alerts/"+r.PathValue("id")+"/mute", nil, m, nil)
	if refused(err) {
		return c.alertWith(w, r, http.StatusBadRequest, err.Error())
	}
	if err != nil {
		return err
	}
	redirect(w, r, "/alerts/"+r.PathValue("id"), n)
	return nil
}
