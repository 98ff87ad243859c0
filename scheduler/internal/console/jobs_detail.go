package console

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/i18n"
)

const (
	// jobPageRuns is how many recent runs the job page lists, sparkRuns
	// how many its sparkline draws.
	jobPageRuns = 20
	sparkRuns   = 50
	// jobPageEntries is how many history and audit entries it shows.
	jobPageEntries = 20
)

// jobPage is the job page's data.
type jobPage struct {
	Job      apiv1.Job
	Settings []settingSection
	Next     schedulePreview
	Runs     []apiv1.Run
	Spark    sparkline
	History  []historyEntry
	// Audit is the job's audit entries (every action, triggers included);
	// AuditShown is false for non-admins, whom GET /audit refuses.
	Audit      []historyEntry
	AuditShown bool
	Children   []jobLink
	CanOperate bool
}

// settingSection is one section of the job's settings.
type settingSection struct {
	Name string
	Rows []setting
}

type setting struct {
	Label, Value string
}

// jobLink is a related job: its name when the user may read it.
type jobLink struct {
	ID   int64
	Name string
	// Note says why there is no name (deleted, not readable).
	Note string
}

// historyEntry is an audit entry with the job fields it changed.
type historyEntry struct {
	apiv1.AuditEntry
	Changes []fieldChange
}

// job shows one job: settings, next fires, recent runs with a sparkline,
// revision history, audit entries (admins) and children.
func (c *Console) job(w http.ResponseWriter, r *http.Request) error {
	u, j, err := c.userAndJob(r)
	if err != nil {
		return err
	}
	id := j.ID
	l := c.lang(r, u)
	data := &jobPage{Job: j, Settings: settingsOf(&j.JobSpec, l), CanOperate: u.CanOperate(j.Group), AuditShown: u.Admin}

	data.Next = schedulePreview{Zone: j.Timezone}
	var nf apiv1.NextFires
	if _, err := c.call(r, http.MethodGet, jobPath(id)+"/next", url.Values{"n": {"10"}}, nil, &nf); err != nil {
		data.Next.Error = err.Error()
	}
	data.Next.Times, data.Next.Excluded = nf.Times, nf.Excluded

	var rl apiv1.RunList
	if _, err := c.call(r, http.MethodGet, jobPath(id)+"/runs", url.Values{"limit": {strconv.Itoa(sparkRuns)}}, nil, &rl); err != nil {
		return err
	}
	data.Runs = rl.Runs[:min(len(rl.Runs), jobPageRuns)]
	data.Spark = newSparkline(rl.Runs, l)

	var hist apiv1.AuditList
	if _, err := c.call(r, http.MethodGet, jobPath(id)+"/history", url.Values{"limit": {strconv.Itoa(jobPageEntries)}}, nil, &hist); err != nil {
		return err
	}
	data.History = historyOf(hist.Entries)
	if u.Admin {
		var al apiv1.AuditList
		q := url.Values{"target": {"job:" + strconv.FormatInt(id, 10)}, "limit": {strconv.Itoa(jobPageEntries)}}
		if _, err := c.call(r, http.MethodGet, "/api/v1/audit", q, nil, &al); err != nil {
			return err
		}
		// The revisions are listed above: the audit adds what is not one
		// (triggers, kills, deletes of runs...), not the same rows again.
		revision := map[int64]bool{}
		for _, h := range hist.Entries {
			revision[h.ID] = true
		}
		others := al.Entries[:0]
		for _, e := range al.Entries {
			if !revision[e.ID] {
				others = append(others, e)
			}
		}
		data.Audit = historyOf(others)
	}
	if data.Children, err = c.jobLinks(r, l, j.ChildJobIDs); err != nil {
		return err
	}
	return c.render(w, r, http.StatusOK, "job", page{Title: j.Name, User: u, Data: data})
}

// settingsOf lists a job's settings by section, from jobFields, the
// section names and labels in l.
func settingsOf(spec *apiv1.JobSpec, l i18n.Lang) []settingSection {
	out := make([]settingSection, 0, len(jobSections))
	for _, sec := range jobSections {
		s := settingSection{Name: l.T(sec)}
		for _, f := range jobFields {
			if f.Section == sec {
				s.Rows = append(s.Rows, setting{Label: l.T(f.Label), Value: f.get(spec)})
			}
		}
		out = append(out, s)
	}
	return out
}

// jobLinks names the jobs of ids that the user may read; the others keep
// their id with the reason.
func (c *Console) jobLinks(r *http.Request, l i18n.Lang, ids []int64) ([]jobLink, error) {
	out := make([]jobLink, 0, len(ids))
	for _, id := range ids {
		var j apiv1.Job
		_, err := c.call(r, http.MethodGet, jobPath(id), nil, nil, &j)
		var ae *APIError
		switch {
		case err == nil:
			out = append(out, jobLink{ID: id, Name: j.Name})
		case errors.As(err, &ae) && ae.Status == http.StatusNotFound:
			// The API answers another group's job as a missing one.
			out = append(out, jobLink{ID: id, Note: l.T("deleted, or in a group you may not read")})
		default:
			return nil, err
		}
	}
	return out, nil
}

// historyOf adds to each entry the fields its change touched; a create or
// delete, with one side absent, lists nothing.
func historyOf(es []apiv1.AuditEntry) []historyEntry {
	out := make([]historyEntry, 0, len(es))
	for _, e := range es {
		h := historyEntry{AuditEntry: e}
		fields, _ := e.Changes() // documents that are not objects list nothing
		for _, f := range fields {
			h.Changes = append(h.Changes, fieldChange{Label: f.Field, Old: jsonText(f.Before), New: jsonText(f.After)})
		}
		out = append(out, h)
	}
	return out
}

// jsonText shows a JSON value for a person: strings without quotes,
// absent as "—", long values cut.
func jsonText(v json.RawMessage) string {
	if len(v) == 0 || string(v) == "null" {
		return "—"
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		s = string(v)
	}
	if r := []rune(s); len(r) > 120 {
		s = string(r[:119]) + "…"
	}
	return s
}

// sparkline is the SVG of a job's recent runs: one bar per run, oldest
// left, newest right, coloured by status.
type sparkline struct {
	Width, Height int
	Bars          []sparkBar
}

type sparkBar struct {
	X, Y, W, H int
	RunID      int64
	Class      string
	URL        string
	Title      string
}

const (
	sparkBarW   = 8
	sparkGap    = 2
	sparkHeight = 28
)

// newSparkline draws runs, which come newest first; a bar's title is in l.
func newSparkline(runs []apiv1.Run, l i18n.Lang) sparkline {
	s := sparkline{Height: sparkHeight, Width: max(len(runs), 1)*(sparkBarW+sparkGap) - sparkGap}
	for i := range runs {
		run := runs[len(runs)-1-i]
		h := sparkHeight
		if run.FinishedAt == nil {
			// A run still open is a shorter bar: it has no outcome yet.
			h = sparkHeight / 2
		}
		s.Bars = append(s.Bars, sparkBar{X: i * (sparkBarW + sparkGap), Y: sparkHeight - h, W: sparkBarW, H: h, RunID: run.ID,
			Class: statusClass(run.Status), URL: "/runs/" + strconv.FormatInt(run.ID, 10),
			Title: l.T("run %d · %s · %s · %s", run.ID, l.T(string(run.Status)), run.ScheduledAt.UTC().Format(time.DateTime),
				dur(run.StartedAt, run.FinishedAt))})
	}
	return s
}
