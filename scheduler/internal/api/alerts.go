package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/alarm"
	"github.com/jetjob/jetjob/scheduler/internal/alerts"
	"github.com/jetjob/jetjob/scheduler/internal/auth"
	"github.com/jetjob/jetjob/scheduler/internal/store"
)

// Channels, alert rules and alerts (docs/alerts.md). A global channel or
// rule is the admins'; a group's, its operators'. A rule's reference to a
// channel is decided by alerts.MayName where the rule is written.

// scopeNeeds is what a route on a channel, rule or alert of group ("":
// global) needs: a global one is read by anyone authenticated and changed
// by admins only; a group's as the group's jobs are.
func scopeNeeds(p *auth.Principal, group, what string, write bool) ([]auth.Need, error) {
	if group == "" {
		if write && !p.Admin {
			return nil, &auth.Forbidden{Permission: "admin (" + what + " is global)"}
		}
		return nil, nil
	}
	return []auth.Need{{Group: group, Hidden: true, What: what}}, nil
}

// alertsHidden turns the alerts package's not-found into auth's hidden.
func alertsHidden(err error, what string) error {
	if errors.Is(err, alerts.ErrNotFound) {
		return auth.HiddenError(what)
	}
	return err
}

func (s *Server) pathScope(write bool, kind string, group func(context.Context, int64) (string, error)) auth.GroupOf {
	return func(r *http.Request, p *auth.Principal) ([]auth.Need, error) {
		id, err := pathID(r)
		if err != nil {
			return nil, err
		}
		what := fmt.Sprintf("%s %d", kind, id)
		g, err := group(r.Context(), id)
		if err != nil {
			return nil, alertsHidden(err, what)
		}
		return scopeNeeds(p, g, what, write)
	}
}

func (s *Server) channelGroup(ctx context.Context, id int64) (string, error) {
	ch, err := alerts.Channel(ctx, s.store.Pool(), id)
	return ch.Group, err
}

func (s *Server) ruleGroup(ctx context.Context, id int64) (string, error) {
	r, err := alerts.ReadRule(ctx, s.store.Pool(), id)
	return r.Group, err
}

func (s *Server) alertGroup(ctx context.Context, id int64) (string, error) {
	a, err := alerts.ReadAlert(ctx, s.store.Pool(), id)
	return a.Group, err
}

// channelBodyGroup is the group a new channel is for.
func (s *Server) channelBodyGroup(r *http.Request, p *auth.Principal) ([]auth.Need, error) {
	var f struct {
		Group string `json:"group"`
	}
	if _, err := peekBody(r, &f); err != nil {
		return nil, err
	}
	if f.Group == "" {
		return scopeNeeds(p, "", "a channel without a group", true)
	}
	return []auth.Need{{Group: f.Group}}, nil
}

// ruleBodyGroup is the group a new rule is for: its job's, or the body's.
func (s *Server) ruleBodyGroup(r *http.Request, p *auth.Principal) ([]auth.Need, error) {
	var f struct {
		Group string `json:"group"`
		JobID int64  `json:"job_id"`
	}
	if _, err := peekBody(r, &f); err != nil {
		return nil, err
	}
	if f.JobID != 0 {
		g, err := s.store.JobGroup(r.Context(), f.JobID)
		if err != nil {
			return nil, hidden(err, fmt.Sprintf("job %d", f.JobID))
		}
		return []auth.Need{{Group: g, Hidden: true, What: fmt.Sprintf("job %d", f.JobID)}}, nil
	}
	if f.Group == "" {
		return scopeNeeds(p, "", "a rule without a group or job", true)
	}
	return []auth.Need{{Group: f.Group}}, nil
}

func channelDoc(c alerts.ChannelInfo) apiv1.Channel {
	return apiv1.Channel{ID: c.ID, Name: c.Name, Kind: string(c.Kind), Group: c.Group, Target: c.Redacted(),
		SecretSet: c.Secret != "", Template: c.Template, CreatedBy: c.CreatedBy, CreatedAt: c.CreatedAt.UTC(),
		ManagedByJob: c.ManagedByJob}
}

// listScoped answers GET of a collection (channels, rules): the global
// items and those of the caller's readable groups, as documents.
func listScoped[T, D any](s *Server, list func(context.Context, alerts.DB, bool, []string) ([]T, error), doc func(T) D) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		groups, all := auth.FromContext(r.Context()).Readable()
		xs, err := list(r.Context(), s.store.Pool(), all, groups)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, docs(xs, doc))
		return nil
	}
}

// getScoped answers GET of one item by the path's id (its scope was
// decided by the route's pathScope).
func getScoped[T, D any](s *Server, kind string, read func(context.Context, alerts.DB, int64) (T, error), doc func(T) D) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, err := pathID(r)
		if err != nil {
			return err
		}
		x, err := read(r.Context(), s.store.Pool(), id)
		if err != nil {
			return alertsHidden(err, fmt.Sprintf("%s %d", kind, id))
		}
		writeJSON(w, http.StatusOK, doc(x))
		return nil
	}
}

// itemKind is what the write routes of channels and rules need to know of
// an item: its audit name (actions kind.create, kind.update, kind.delete
// on target kind:<id>), its id and group, and its document.
type itemKind[T, D any] struct {
	name  string
	id    func(T) int64
	group func(T) string
	doc   func(T) D
}

var (
	channelKind = itemKind[alerts.ChannelInfo, apiv1.Channel]{name: "channel",
		id: func(c alerts.ChannelInfo) int64 { return c.ID }, group: func(c alerts.ChannelInfo) string { return c.Group }, doc: channelDoc}
	ruleKind = itemKind[alerts.RuleInfo, apiv1.AlertRule]{name: "alert_rule",
		id: func(r alerts.RuleInfo) int64 { return r.ID }, group: func(r alerts.RuleInfo) string { return r.Group }, doc: ruleDoc}
)

// writeAudited runs write in one transaction with the audit record of
// k.name+"."+action on the item written, with before (the item's document
// before the write; nil for none) and its document after, then answers
// status with that document.
func writeAudited[T, D any](s *Server, w http.ResponseWriter, r *http.Request, k itemKind[T, D], action string, status int, write func(tx pgx.Tx) (out T, before any, err error)) error {
	var out T
	err := s.alertsTx(r, func(tx pgx.Tx) error {
		var before any
		var err error
		if out, before, err = write(tx); err != nil {
			return err
		}
		return store.Audit(r.Context(), tx, actor(r), k.name+"."+action, fmt.Sprintf("%s:%d", k.name, k.id(out)), k.group(out), before, k.doc(out))
	})
	if err != nil {
		return err
	}
	writeJSON(w, status, k.doc(out))
	return nil
}

// deleteScoped answers DELETE of one item by the path's id (its scope was
// decided by the route's pathScope): it reads the item, deletes it and
// audits k.name+".delete" with the item's document as it was, in one
// transaction.
func deleteScoped[T, D any](s *Server, k itemKind[T, D], read func(context.Context, alerts.DB, int64) (T, error), del func(context.Context, alerts.DB, int64) error) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, err := pathID(r)
		if err != nil {
			return err
		}
		err = s.alertsTx(r, func(tx pgx.Tx) error {
			x, err := read(r.Context(), tx, id)
			if err != nil {
				return err
			}
			if err := del(r.Context(), tx, id); err != nil {
				return err
			}
			return store.Audit(r.Context(), tx, actor(r), k.name+".delete", fmt.Sprintf("%s:%d", k.name, id), k.group(x), k.doc(x), nil)
		})
		if err != nil {
			return err
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
}

func (s *Server) createChannel(w http.ResponseWriter, r *http.Request) error {
	var c apiv1.Channel
	if err := decode(w, r, &c); err != nil {
		return err
	}
	return writeAudited(s, w, r, channelKind, "create", http.StatusCreated, func(tx pgx.Tx) (alerts.ChannelInfo, any, error) {
		out, err := alerts.CreateChannel(r.Context(), tx, alarm.Channel{Name: c.Name, Kind: alarm.Kind(c.Kind), Group: c.Group,
			Target: c.Target, Secret: c.Secret, Template: c.Template}, actor(r).Name)
		return out, nil, err
	})
}

func (s *Server) updateChannel(w http.ResponseWriter, r *http.Request) error {
	id, c, err := pathIDBody[apiv1.Channel](w, r)
	if err != nil {
		return err
	}
	return writeAudited(s, w, r, channelKind, "update", http.StatusOK, func(tx pgx.Tx) (alerts.ChannelInfo, any, error) {
		out, err := alerts.UpdateChannel(r.Context(), tx, alarm.Channel{ID: id, Name: c.Name, Target: c.Target, Secret: c.Secret,
			Template: c.Template}, c.Secret == "" && !c.ClearSecret)
		return out, nil, err
	})
}

// testChannel sends a test notice on the channel now and answers how it
// went.
func (s *Server) testChannel(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	c, err := alerts.Channel(r.Context(), s.store.Pool(), id)
	if err != nil {
		return alertsHidden(err, fmt.Sprintf("channel %d", id))
	}
	if s.cfg.SendTest == nil {
		return &httpError{http.StatusServiceUnavailable, "this API has no alert sender"}
	}
	res := s.cfg.SendTest(r.Context(), c.Channel)
	out := apiv1.ChannelTest{Sent: res.Err == nil, Code: res.Code}
	if res.Err != nil {
		out.Error = res.Err.Error()
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func ruleDoc(r alerts.RuleInfo) apiv1.AlertRule {
	out := apiv1.AlertRule{ID: r.ID, Name: r.Name, JobID: r.JobID, Group: r.Group, Threshold: r.Threshold,
		Window: apiv1.Duration(r.Window), Renotify: apiv1.Duration(r.Renotify), PauseAfter: r.PauseAfter, SLA: apiv1.Duration(r.SLA), Channels: r.Channels, Enabled: r.Enabled,
		MutedUntil: utcTime(r.MutedUntil), MutedBy: r.MutedBy, MuteReason: r.MuteReason, CreatedBy: r.CreatedBy,
		CreatedAt: r.CreatedAt.UTC(), ManagedByJob: r.ManagedByJob}
	for _, e := range r.Events {
		out.Events = append(out.Events, string(e))
	}
	if out.Channels == nil {
		out.Channels = []int64{}
	}
	return out
}

// utcTime is t in UTC, nil for the zero time.
func utcTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

// ruleOf is the rule a request's document describes, its name checked.
func ruleOf(in apiv1.AlertRule) (alerts.Rule, error) {
	if err := alerts.CheckName("rule", in.Name); err != nil {
		return alerts.Rule{}, err
	}
	rule := alerts.Rule{Name: in.Name, JobID: in.JobID, Group: in.Group, Threshold: in.Threshold,
		Window: time.Duration(in.Window), Renotify: time.Duration(in.Renotify), PauseAfter: in.PauseAfter, SLA: time.Duration(in.SLA), Channels: in.Channels}
	for _, e := range in.Events {
		rule.Events = append(rule.Events, alarm.Event(e))
	}
	return rule, nil
}

func (s *Server) createRule(w http.ResponseWriter, r *http.Request) error {
	var in apiv1.AlertRule
	if err := decode(w, r, &in); err != nil {
		return err
	}
	rule, err := ruleOf(in)
	if err != nil {
		return err
	}
	return writeAudited(s, w, r, ruleKind, "create", http.StatusCreated, func(tx pgx.Tx) (alerts.RuleInfo, any, error) {
		out, err := alerts.CreateRule(r.Context(), tx, rule, auth.FromContext(r.Context()))
		return out, nil, err
	})
}

// updateRule replaces a rule's settings and channels; its job or group
// stays (a body's job_id and group are ignored).
func (s *Server) updateRule(w http.ResponseWriter, r *http.Request) error {
	id, in, err := pathIDBody[apiv1.AlertRule](w, r)
	if err != nil {
		return err
	}
	rule, err := ruleOf(in)
	if err != nil {
		return err
	}
	rule.ID = id
	err = writeAudited(s, w, r, ruleKind, "update", http.StatusOK, func(tx pgx.Tx) (alerts.RuleInfo, any, error) {
		before, err := alerts.ReadRule(r.Context(), tx, id)
		if err != nil {
			return alerts.RuleInfo{}, nil, err
		}
		out, err := alerts.UpdateRule(r.Context(), tx, rule, auth.FromContext(r.Context()))
		return out, ruleDoc(before), err
	})
	return alertsHidden(err, fmt.Sprintf("rule %d", id))
}

// mute silences a rule or an alert (table) until the body's time.
func (s *Server) mute(table, kind string) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, m, err := pathIDBody[apiv1.Mute](w, r)
		if err != nil {
			return err
		}
		if len(m.Reason) > 500 {
			return invalidf("reason is longer than 500 characters")
		}
		if !m.Until.IsZero() && !m.Until.After(s.now()) {
			return invalidf("until %s is not in the future (leave it out to lift the silence)", m.Until.Format(time.RFC3339))
		}
		a := actor(r)
		err = s.alertsTx(r, func(tx pgx.Tx) error {
			if err := alerts.Mute(r.Context(), tx, table, id, m.Until, a.Name, m.Reason); err != nil {
				return err
			}
			return store.Audit(r.Context(), tx, a, kind+".mute", fmt.Sprintf("%s:%d", kind, id), "", nil, m)
		})
		if err != nil {
			return alertsHidden(err, fmt.Sprintf("%s %d", kind, id))
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
}

func alertDoc(a alerts.AlertInfo) apiv1.Alert {
	return apiv1.Alert{ID: a.ID, RuleID: a.RuleID, Rule: a.RuleName, JobID: a.JobID, Group: a.Group, State: a.State,
		Count: a.Count, FirstAt: a.FirstAt.UTC(), LastAt: a.LastAt.UTC(), OpenedAt: utcTime(a.OpenedAt),
		ClosedAt: utcTime(a.ClosedAt), NotifiedAt: utcTime(a.NotifiedAt), LastRunID: a.LastRunID,
		LastEvent: string(a.LastEvent), LastStatus: a.LastStatus, LastMessage: a.LastMessage, AckedBy: a.AckedBy,
		AckedAt: utcTime(a.AckedAt), MutedUntil: utcTime(a.MutedUntil), MutedBy: a.MutedBy, MuteReason: a.MuteReason}
}

func (s *Server) listAlerts(w http.ResponseWriter, r *http.Request) error {
	groups, all := auth.FromContext(r.Context()).Readable()
	if g := r.URL.Query().Get("group"); g != "" {
		groups, all = []string{g}, false
	}
	state := r.URL.Query().Get("state")
	if state != "" && state != "open" && state != "all" {
		return invalidf("state %q: want open or all", state)
	}
	limit, err := queryInt(r, "limit", 100, 1, 1000)
	if err != nil {
		return err
	}
	as, err := alerts.Alerts(r.Context(), s.store.Pool(), state == "open", all, groups, int(limit))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, docs(as, alertDoc))
	return nil
}

func (s *Server) getAlert(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	a, err := alerts.ReadAlert(r.Context(), s.store.Pool(), id)
	if err != nil {
		return alertsHidden(err, fmt.Sprintf("alert %d", id))
	}
	ds, err := alerts.Deliveries(r.Context(), s.store.Pool(), id, 0, 100)
	if err != nil {
		return err
	}
	doc := alertDoc(a)
	for _, d := range ds {
		dd := apiv1.Delivery{ID: d.ID, ChannelID: d.ChannelID, Event: d.Event, State: d.State, CreatedAt: d.CreatedAt.UTC(),
			Attempts: []apiv1.DeliveryAttempt{}}
		if d.State == "pending" {
			dd.NextAt = utcTime(d.NextAt)
		}
		for _, t := range d.Attempts {
			dd.Attempts = append(dd.Attempts, apiv1.DeliveryAttempt{N: t.N, At: t.At.UTC(), Result: t.Result, Code: t.Code, Error: t.Error})
		}
		doc.Deliveries = append(doc.Deliveries, dd)
	}
	writeJSON(w, http.StatusOK, doc)
	return nil
}

func (s *Server) ackAlert(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	a := actor(r)
	err = s.alertsTx(r, func(tx pgx.Tx) error {
		if err := alerts.Acknowledge(r.Context(), tx, id, a.Name); err != nil {
			return err
		}
		return store.Audit(r.Context(), tx, a, "alert.ack", fmt.Sprintf("alert:%d", id), "", nil, nil)
	})
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// alertsTx runs fn in a transaction of the store's pool.
func (s *Server) alertsTx(r *http.Request, fn func(pgx.Tx) error) error {
	return pgx.BeginFunc(r.Context(), s.store.Pool(), fn)
}
