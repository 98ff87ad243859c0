package console

import (
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/i18n"
	"github.com/jetjob/jetjob/shared/wire"
)

// templateIDs are the message ids the templates name: {{t "…"}} and
// (t "…").
var templateIDRE = regexp.MustCompile(`\bt ("(?:[^"\\]|\\.)*")`)

// goIDRE finds the ids the handlers name: l.T("…"), c.lang(r, u).T("…"),
// and the job form's messages msgf("…") (jobs_fields.go).
var goIDRE = regexp.MustCompile(`(?:\.T|\bmsgf)\(("(?:[^"\\]|\\.)*")`)

func eachTemplate(t *testing.T, fn func(name, src string)) {
	t.Helper()
	err := fs.WalkDir(assets, "templates", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".html") {
			return err
		}
		b, err := assets.ReadFile(p)
		if err != nil {
			return err
		}
		fn(p, string(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func unquoteAll(t *testing.T, re *regexp.Regexp, src string) []string {
	t.Helper()
	var out []string
	for _, m := range re.FindAllStringSubmatch(src, -1) {
		s, err := strconv.Unquote(m[1])
		if err != nil {
			t.Fatalf("%s: %v", m[1], err)
		}
		out = append(out, s)
	}
	return out
}

// Every message the console names, in its templates and its Go code, and
// every message it looks up by a value (a run's status, a notice, a role,
// a timeline step) has its Chinese text.
func TestCatalogueHasEveryMessage(t *testing.T) {
	need := map[string]string{} // id → where
	eachTemplate(t, func(name, src string) {
		for _, id := range unquoteAll(t, templateIDRE, src) {
			need[id] = name
		}
	})
	gos, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range gos {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range unquoteAll(t, goIDRE, string(b)) {
			need[id] = f
		}
	}
	if len(need) < 400 {
		t.Fatalf("found %d message ids: the patterns no longer match the sources", len(need))
	}
	for _, text := range notices {
		need[text] = "notice.go"
	}
	for _, s := range []wire.Status{wire.StatusScheduled, wire.StatusTriggered, wire.StatusRunning, wire.StatusSucceeded,
		wire.StatusFailed, wire.StatusTimedOut, wire.StatusCancelled, wire.StatusSkipped, wire.StatusDiscarded,
		wire.StatusExpired, wire.StatusLost} {
		need[string(s)] = "a run's status"
	}
	for _, s := range []string{"PENDING", "pending", "open", "closed", "sending", "sent", "failed", "unknown"} {
		need[s] = "a workflow node's status, an alert's or a delivery's state"
	}
	for _, s := range []string{"operator", "viewer"} {
		need[s] = "a role (User.RoleLabel)"
	}
	for _, v := range bulkVerbs {
		need[v] = "bulkVerbs"
		need[v+" runs"] = "bulkVerbs (title)"
	}
	for _, v := range jobsBulkVerbs {
		for _, id := range []string{v + " jobs", v + " 1 job?", v + " %s jobs?", v + " 1 job", v + " %s jobs"} {
			need[id] = "jobsBulkVerbs (title, question, button)"
		}
	}
	for _, s := range []string{"active", "paused", "draining", "drained"} {
		need[s] = "a group's flow state (groupState)"
	}
	steps := timeline(apiv1.Run{})
	for i, st := range steps {
		need[st.Name] = "timeline"
		need[st.GapLabel] = "timeline"
		if i < len(steps)-1 { // a gap reaches back to any step but the last
			need["since "+strings.ToLower(st.Name)] = "timeline"
		}
	}
	for _, f := range jobFields {
		need[f.Label] = "jobFields (label)"
		if f.Hint != "" {
			need[f.Hint] = "jobFields (hint)"
		}
	}
	for _, sec := range jobSections {
		need[sec] = "jobSections"
	}
	for _, sec := range formLayout {
		need[sec.name] = "formLayout"
	}
	for _, s := range workflowSettings(&apiv1.Workflow{}, i18n.English) {
		need[s.Label] = "workflow settings"
	}
	for _, code := range []int{400, 401, 403, 404, 405, 409, 410, 413, 422, 429, 500, 503} {
		need[http.StatusText(code)] = "the error page's title"
	}
	for id, where := range need {
		if id != "" && !i18n.Chinese.Has(id) {
			t.Errorf("%s: %q has no Chinese text in i18n/zh-CN.json", where, id)
		}
	}
	// And the catalogue holds nothing else: a text no page uses any more
	// is left for a translator to wonder about.
	for _, id := range i18n.IDs() {
		if _, ok := need[id]; !ok {
			t.Errorf("i18n/zh-CN.json: %q is used nowhere: remove it", id)
		}
	}
}

// attrRE are the attributes whose text people read.
var attrRE = regexp.MustCompile(`\b(title|placeholder|aria-label|data-confirm|alt|label)="([^"]*)"`)

// actionRE is a template action, commentRE a template comment.
var (
	actionRE  = regexp.MustCompile(`(?s)\{\{.*?\}\}`)
	commentRE = regexp.MustCompile(`(?s)\{\{-?\s*/\*.*?\*/\s*-?\}\}`)
	rawRE     = regexp.MustCompile(`(?is)<(script|style|code|kbd|pre)\b.*?</(script|style|code|kbd|pre)>`)
	tagRE     = regexp.MustCompile(`(?s)<[^>]*>`)
	letterRE  = regexp.MustCompile(`[A-Za-z]{2,}`)
)

// notWords are the texts a page shows as they are in every language:
// names of things, units, the product.
var notWords = map[string]bool{"jetjob": true, "· jetjob": true, "UTC": true, "p50": true, "p99": true, "docs/alerts.md": true, "ms": true, "env=prod,team=x": true}

// No template shows English words that do not go through the catalogue:
// text between tags and the attributes people read (title, placeholder,
// aria-label, data-confirm) hold only actions once {{t …}} and the other
// actions are taken out.
func TestTemplatesSayNothingOutsideTheCatalogue(t *testing.T) {
	eachTemplate(t, func(name, src string) {
		src = commentRE.ReplaceAllString(src, "")
		src = rawRE.ReplaceAllString(src, "")
		for _, m := range attrRE.FindAllStringSubmatch(src, -1) {
			if rest := strings.TrimSpace(actionRE.ReplaceAllString(m[2], "")); letterRE.MatchString(rest) && !notWords[rest] {
				t.Errorf("%s: %s=%q is not in the catalogue ({{t …}})", name, m[1], m[2])
			}
		}
		text := tagRE.ReplaceAllString(actionRE.ReplaceAllString(src, " "), "\n")
		for _, line := range strings.Split(text, "\n") {
			line = strings.TrimSpace(line)
			if letterRE.MatchString(line) && !notWords[line] {
				t.Errorf("%s: %q is not in the catalogue ({{t …}})", name, line)
			}
		}
	})
}
