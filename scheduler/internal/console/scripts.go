package console

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// scriptPage is the script editor's data: the current source in a
// textarea with line numbers, the kept versions, and the diff of two when
// the query names them (?from=&to=).
type scriptPage struct {
	Job      apiv1.Job
	Current  apiv1.Script
	Lines    []int // the gutter's line numbers
	Versions []apiv1.Script
	// Diff is the unified diff of versions From and To, split into
	// lines with their kind; DiffShown is false when none was asked.
	From, To  int
	Diff      []diffLine
	DiffShown bool
	CanEdit   bool
}

// diffLine is a line of a unified diff: its kind (add, del, hunk, head,
// same) and its text.
type diffLine struct {
	Kind, Text string
}

// script shows a script job's script page.
func (c *Console) script(w http.ResponseWriter, r *http.Request) error {
	u, j, err := c.userAndJob(r)
	if err != nil {
		return err
	}
	data := &scriptPage{Job: j, CanEdit: u.CanScripts(j.Group)}
	if _, err := c.call(r, http.MethodGet, jobPath(j.ID)+"/script", nil, nil, &data.Current); err != nil {
		return err
	}
	// Room to type below the last line: the gutter is not redrawn
	// without the page's script.
	n := strings.Count(data.Current.Source, "\n") + 1
	for i := 1; i <= n+20; i++ {
		data.Lines = append(data.Lines, i)
	}
	var vl apiv1.ScriptVersionList
	if _, err := c.call(r, http.MethodGet, jobPath(j.ID)+"/script/versions", nil, nil, &vl); err != nil {
		return err
	}
	data.Versions = vl.Versions
	q := r.URL.Query()
	if q.Get("from") != "" {
		from, err1 := strconv.Atoi(q.Get("from"))
		to, err2 := strconv.Atoi(cmpOr(q.Get("to"), strconv.Itoa(data.Current.Version)))
		if err1 != nil || err2 != nil || from <= 0 || to <= 0 {
			return &APIError{Status: http.StatusBadRequest, Doc: apiv1.Error{Error: "from and to must be version numbers"}}
		}
		var d apiv1.ScriptDiff
		qv := url.Values{"from": {strconv.Itoa(from)}, "to": {strconv.Itoa(to)}}
		if _, err := c.call(r, http.MethodGet, jobPath(j.ID)+"/script/diff", qv, nil, &d); err != nil {
			return err
		}
		data.From, data.To, data.DiffShown, data.Diff = from, to, true, diffLines(d.Diff)
	}
	return c.render(w, r, http.StatusOK, "script", page{Title: c.lang(r, u).T("Script of %s", j.Name), User: u, Data: data})
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// diffLines splits a unified diff into classed lines.
func diffLines(d string) []diffLine {
	if d == "" {
		return nil
	}
	var out []diffLine
	for _, l := range strings.Split(strings.TrimSuffix(d, "\n"), "\n") {
		k := "same"
		switch {
		case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"):
			k = "head"
		case strings.HasPrefix(l, "@@"):
			k = "hunk"
		case strings.HasPrefix(l, "+"):
			k = "add"
		case strings.HasPrefix(l, "-"):
			k = "del"
		}
		out = append(out, diffLine{Kind: k, Text: l})
	}
	return out
}

// scriptURL is the console page of job id's script.
func scriptURL(id int64) string { return jobURL(id) + "/script" }

// saveScript posts the editor's source and remark as a new version.
func (c *Console) saveScript(w http.ResponseWriter, r *http.Request) error {
	id, err := postedForm(r, consoleID)
	if err != nil {
		return err
	}
	// Browsers send a textarea's line breaks as CRLF: store them as typed
	// on a keyboard, LF.
	src := strings.ReplaceAll(r.PostForm.Get("source"), "\r\n", "\n")
	var s apiv1.Script
	if _, err := c.call(r, http.MethodPut, jobPath(id)+"/script", nil,
		apiv1.ScriptSave{Source: src, Remark: strings.TrimSpace(r.PostForm.Get("remark"))}, &s); err != nil {
		return err
	}
	redirect(w, r, scriptURL(id), noticeScriptSaved)
	return nil
}

// rollbackScript makes an old version the current one (as a new version).
func (c *Console) rollbackScript(w http.ResponseWriter, r *http.Request) error {
	id, err := postedForm(r, consoleID)
	if err != nil {
		return err
	}
	v, err := strconv.Atoi(r.PostForm.Get("version"))
	if err != nil || v <= 0 {
		return badForm(fmt.Errorf("version %q: want a version number", r.PostForm.Get("version")))
	}
	var s apiv1.Script
	if _, err := c.call(r, http.MethodPost, jobPath(id)+"/script/rollback", nil, apiv1.ScriptRollback{Version: v}, &s); err != nil {
		return err
	}
	redirect(w, r, scriptURL(id), noticeScriptRolledBack)
	return nil
}
