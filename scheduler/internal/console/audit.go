package console

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// The audit page (admins): the log of changes, filtered by who, what,
// which group and when, newest first, a page at a time.

type auditPage struct {
	Form    url.Values
	Entries []auditRow
	// Older is the link to the next page, "" on the last.
	Older  string
	Groups []string
}

// auditRow is an entry with what it changed, for the table.
type auditRow struct {
	apiv1.AuditEntry
	Changed []string
}

// TargetLink is the console page of the entry's target, "" when there is
// none (a key, a session, a deleted object's id still links: its page
// says it is gone).
func (e auditRow) TargetLink() string {
	kind, id, ok := strings.Cut(e.Target, ":")
	if !ok || id == "" {
		return ""
	}
	switch kind {
	case "job":
		return "/jobs/" + id
	case "run":
		return "/runs/" + id
	case "workflow":
		return "/workflows/" + id
	case "user":
		return "/users/" + url.PathEscape(id)
	case "group":
		return "/workers?group=" + url.QueryEscape(id)
	}
	return ""
}

// auditFilters are the query parameters the page passes on to the API.
var auditFilters = []string{"actor", "action", "target", "group", "from", "to", "before"}

func (c *Console) audit(w http.ResponseWriter, r *http.Request) error {
	u, err := c.me(r)
	if err != nil {
		return err
	}
	in := r.URL.Query()
	q := url.Values{"limit": {"50"}}
	for _, k := range auditFilters {
		if v := strings.TrimSpace(in.Get(k)); v != "" {
			if k == "from" || k == "to" {
				v = formTime(v)
			}
			q.Set(k, v)
		}
	}
	var al apiv1.AuditList
	if _, err := c.call(r, http.MethodGet, "/api/v1/audit", q, nil, &al); err != nil {
		return err
	}
	data := auditPage{Form: in}
	for _, e := range al.Entries {
		row := auditRow{AuditEntry: e}
		if ch, err := e.Changes(); err == nil {
			for _, f := range ch {
				row.Changed = append(row.Changed, f.Field)
			}
		}
		data.Entries = append(data.Entries, row)
	}
	if al.Next > 0 {
		next := url.Values{}
		for _, k := range auditFilters {
			if v := in.Get(k); v != "" && k != "before" {
				next.Set(k, v)
			}
		}
		next.Set("before", strconv.FormatInt(al.Next, 10))
		data.Older = "/audit?" + next.Encode()
	}
	if data.Groups, err = c.groupNames(r); err != nil {
		return err
	}
	return c.render(w, r, http.StatusOK, "audit", page{Title: c.lang(r, u).T("Audit log"), User: u, Data: data})
}

// FormTime is a time filter as its input shows it (runs.go, inputTime).
func (p auditPage) FormTime(name string) string { return inputTime(p.Form.Get(name)) }
