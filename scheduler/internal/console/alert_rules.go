package console

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// The alert rules pages (docs/alerts.md, "Rules"): the list and the
// create and edit form, through GET, POST and PUT /api/v1/alert-rules.
// Which channels a rule may name is the API's decision (alerts.MayName):
// the form offers every channel the user sees, and a refusal comes back
// on the form in the API's words.

// ruleEvents are the events a rule may name, the form's choices.
var ruleEvents = []string{"failed", "timed_out", "lost", "retries_exhausted", "missed", "workflow_failed",
	"late_start", "running_long", "recovered", "succeeded"}

// rulesPage is the list's data.
type rulesPage struct {
	Rules []apiv1.AlertRule
	// Channels names the rules' channels by id.
	Channels map[int64]apiv1.Channel
}

// ruleForm is the create and edit form's data.
type ruleForm struct {
	Rule apiv1.AlertRule
	// Window, Renotify and SLA are the durations as typed ("10m").
	Window, Renotify, SLA string
	Edit                  bool
	Events                []string
	Channels              []apiv1.Channel
	Groups                []string
	Error                 string
}

// Action is where the form posts.
func (f *ruleForm) Action() string {
	if f.Edit {
		return fmt.Sprintf("/alert-rules/%d", f.Rule.ID)
	}
	return "/alert-rules"
}

// Has reports whether the rule names event e.
func (f *ruleForm) Has(e string) bool { return slices.Contains(f.Rule.Events, e) }

// Names reports whether the rule names channel id.
func (f *ruleForm) Names(id int64) bool { return slices.Contains(f.Rule.Channels, id) }

// durationText is d as the form shows it ("" for none).
func durationText(d apiv1.Duration) string {
	if d == 0 {
		return ""
	}
	return time.Duration(d).String()
}

func (c *Console) channelsByID(r *http.Request) ([]apiv1.Channel, map[int64]apiv1.Channel, error) {
	var cs []apiv1.Channel
	if _, err := c.call(r, http.MethodGet, "/api/v1/channels", nil, nil, &cs); err != nil {
		return nil, nil, err
	}
	byID := make(map[int64]apiv1.Channel, len(cs))
	for _, ch := range cs {
		byID[ch.ID] = ch
	}
	return cs, byID, nil
}

func (c *Console) alertRules(w http.ResponseWriter, r *http.Request) error {
	u, err := c.me(r)
	if err != nil {
		return err
	}
	var rs []apiv1.AlertRule
	if _, err := c.call(r, http.MethodGet, "/api/v1/alert-rules", nil, nil, &rs); err != nil {
		return err
	}
	_, byID, err := c.channelsByID(r)
	if err != nil {
		return err
	}
	return c.render(w, r, http.StatusOK, "alert_rules", page{Title: c.lang(r, u).T("Alert rules"), User: u, Data: rulesPage{Rules: rs, Channels: byID}})
}

func (c *Console) newAlertRule(w http.ResponseWriter, r *http.Request) error {
	u, err := c.me(r)
	if err != nil {
		return err
	}
	f := &ruleForm{Rule: apiv1.AlertRule{Events: []string{"failed", "recovered"}, Threshold: 1}}
	if g := r.URL.Query().Get("group"); g != "" {
		f.Rule.Group = g
	}
	if j, err := strconv.ParseInt(r.URL.Query().Get("job"), 10, 64); err == nil {
		f.Rule.JobID = j
	}
	return c.ruleFormPage(w, r, u, http.StatusOK, f)
}

func (c *Console) editAlertRule(w http.ResponseWriter, r *http.Request) error {
	u, err := c.me(r)
	if err != nil {
		return err
	}
	var ru apiv1.AlertRule
	if _, err := c.call(r, http.MethodGet, "/api/v1/alert-rules/"+r.PathValue("id"), nil, nil, &ru); err != nil {
		return err
	}
	return c.ruleFormPage(w, r, u, http.StatusOK, &ruleForm{Rule: ru, Edit: true, Window: durationText(ru.Window),
		Renotify: durationText(ru.Renotify), SLA: durationText(ru.SLA)})
}

func (c *Console) ruleFormPage(w http.ResponseWriter, r *http.Request, u *User, code int, f *ruleForm) error {
	f.Events = ruleEvents
	cs, _, err := c.channelsByID(r)
	if err != nil {
		return err
	}
	// A job's alarm fields' channels are named by that job's rule only.
	f.Channels = slices.DeleteFunc(cs, func(ch apiv1.Channel) bool { return ch.ManagedByJob != 0 })
	if !f.Edit {
		f.Groups = u.OperableGroups()
		if u.Admin {
			all, err := c.groupNames(r)
			if err != nil {
				return err
			}
			f.Groups = append([]string{""}, all...)
		}
	}
	title := c.lang(r, u).T("New alert rule")
	if f.Edit {
		title = c.lang(r, u).T("Edit alert rule %s", f.Rule.Name)
	}
	return c.render(w, r, code, "alert_rule_form", page{Title: title, User: u, Data: f})
}

// ruleOf reads the form; a duration or number that does not read is
// said on the form like the API's refusals.
func ruleOf(r *http.Request) (*ruleForm, string, error) {
	if err := r.ParseForm(); err != nil {
		return nil, "", badForm(err)
	}
	v := r.PostForm
	f := &ruleForm{Window: strings.TrimSpace(v.Get("window")), Renotify: strings.TrimSpace(v.Get("renotify")),
		SLA: strings.TrimSpace(v.Get("sla"))}
	f.Rule = apiv1.AlertRule{Name: strings.TrimSpace(v.Get("name")), Group: v.Get("group"), Events: v["events"], Channels: []int64{}}
	var problems []string
	num := func(field string) int64 {
		s := strings.TrimSpace(v.Get(field))
		if s == "" {
			return 0
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s %q: want a whole number", field, s))
		}
		return n
	}
	dur := func(field, s string) apiv1.Duration {
		if s == "" {
			return 0
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s %q: want a duration like 10m or 1h30m", field, s))
		}
		return apiv1.Duration(d)
	}
	f.Rule.JobID = num("job_id")
	f.Rule.Threshold = int(num("threshold"))
	f.Rule.PauseAfter = int(num("pause_after"))
	f.Rule.Window, f.Rule.Renotify, f.Rule.SLA = dur("window", f.Window), dur("renotify", f.Renotify), dur("sla", f.SLA)
	for _, s := range v["channels"] {
		id, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, "", badForm(fmt.Errorf("channel %q", s))
		}
		f.Rule.Channels = append(f.Rule.Channels, id)
	}
	return f, strings.Join(problems, "; "), nil
}

func (c *Console) createAlertRule(w http.ResponseWriter, r *http.Request) error {
	return c.saveAlertRule(w, r, http.MethodPost, "/api/v1/alert-rules", false)
}

func (c *Console) updateAlertRule(w http.ResponseWriter, r *http.Request) error {
	return c.saveAlertRule(w, r, http.MethodPut, "/api/v1/alert-rules/"+r.PathValue("id"), true)
}

// saveAlertRule sends the form to the API; a refusal (or a field that
// does not read) shows the form again with what was typed.
func (c *Console) saveAlertRule(w http.ResponseWriter, r *http.Request, method, path string, edit bool) error {
	f, problem, err := ruleOf(r)
	if err != nil {
		return err
	}
	f.Edit = edit
	if edit {
		var old apiv1.AlertRule
		if _, err := c.call(r, http.MethodGet, path, nil, nil, &old); err != nil {
			return err
		}
		f.Rule.ID, f.Rule.JobID, f.Rule.Group = old.ID, old.JobID, old.Group
	}
	code := http.StatusBadRequest
	if problem == "" {
		_, err = c.call(r, method, path, nil, f.Rule, nil)
		if err == nil {
			redirect(w, r, "/alert-rules", noticeRuleSaved)
			return nil
		}
		if !refused(err) {
			return err
		}
		var ae *APIError
		errors.As(err, &ae)
		problem, code = ae.Error(), ae.Status
	}
	u, err := c.me(r)
	if err != nil {
		return err
	}
	f.Error = problem
	return c.ruleFormPage(w, r, u, code, f)
}

func (c *Console) deleteAlertRule(w http.ResponseWriter, r *http.Request) error {
	if _, err := c.call(r, http.MethodDelete, "/api/v1/alert-rules/"+r.PathValue("id"), nil, nil, nil); err != nil {
		return err
	}
	redirect(w, r, "/alert-rules", noticeRuleDeleted)
	return nil
}
