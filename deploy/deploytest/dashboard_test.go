package deploytest

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

const dashboardFile = "deploy/grafana/jetjob-dashboard.json"

type dashboard struct {
	UID        string `json:"uid"`
	Title      string `json:"title"`
	Templating struct {
		List []struct {
			Name  string          `json:"name"`
			Type  string          `json:"type"`
			Query json.RawMessage `json:"query"`
		} `json:"list"`
	} `json:"templating"`
	Panels []panel `json:"panels"`
}

type panel struct {
	ID         int                      `json:"id"`
	Type       string                   `json:"type"`
	Title      string                   `json:"title"`
	Datasource map[string]any           `json:"datasource"`
	GridPos    struct{ H, W, X, Y int } `json:"gridPos"`
	Targets    []struct {
		Datasource map[string]any `json:"datasource"`
		Expr       string         `json:"expr"`
		RefID      string         `json:"refId"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a collapsed row's
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, dashboardFile))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return d
}

// allPanels flattens collapsed rows.
func allPanels(ps []panel) []panel {
	var out []panel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, allPanels(p.Panels)...)
	}
	return out
}

// TestDashboard: the dashboard imports into any Grafana with any Prometheus
// data source (a variable, no data source uid of ours), has the panels the
// issue asks for, and every query names series jetjob exports and
// documents.
func TestDashboard(t *testing.T) {
	d := readDashboard(t)
	exported, documented := exportedSeries(t), documentedSeries(t)
	if d.UID == "" || d.Title == "" {
		t.Error("the dashboard needs a uid and a title (a re-import then replaces it)")
	}
	var hasDS bool
	for _, v := range d.Templating.List {
		if v.Name == "datasource" && v.Type == "datasource" && string(v.Query) == `"prometheus"` {
			hasDS = true
		}
	}
	if !hasDS {
		t.Error(`no template variable "datasource" of type datasource over prometheus`)
	}
	wantTitles := []string{"Fire lag", "Start lag", "Throughput", "Failures", "Planning lag per shard", "Lease changes",
		"Live workers", "Slots busy / total", "Pending triggers", "Oldest pending trigger", "Alarm deliveries", "API errors"}
	titles := map[string]bool{}
	ids := map[int]string{}
	queries := 0
	for _, p := range allPanels(d.Panels) {
		titles[p.Title] = true
		if other, dup := ids[p.ID]; dup {
			t.Errorf("panels %q and %q share id %d", p.Title, other, p.ID)
		}
		ids[p.ID] = p.Title
		if p.Type == "row" {
			continue
		}
		if p.GridPos.W == 0 || p.GridPos.H == 0 || p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("panel %q: gridPos %+v is not on Grafana's 24-column grid", p.Title, p.GridPos)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		checkDS := func(what string, ds map[string]any) {
			if ds["uid"] != "${datasource}" || ds["type"] != "prometheus" {
				t.Errorf("%s: data source %v, want the ${datasource} variable", what, ds)
			}
		}
		checkDS(fmt.Sprintf("panel %q", p.Title), p.Datasource)
		for _, q := range p.Targets {
			where := fmt.Sprintf("panel %q query %s", p.Title, q.RefID)
			checkDS(where, q.Datasource)
			checkSeries(t, where, q.Expr, exported, documented)
			queries++
		}
	}
	for _, w := range wantTitles {
		if !titles[w] {
			t.Errorf("no panel %q", w)
		}
	}
	t.Logf("%d panels, %d queries checked", len(ids), queries)
}

// TestDashboardQueriesParse hands every dashboard query to promtool (as a
// recording rule, Grafana's variables replaced by what Grafana would put
// there) so that a syntax error shows here, not as an empty panel. It needs
// promtool: JETJOB_PROMTOOL=$(deploy/tools.sh promtool), as make rules-check
// does.
func TestDashboardQueriesParse(t *testing.T) {
	promtool := promtoolBinary(t)
	d := readDashboard(t)
	r := strings.NewReplacer("$__rate_interval", "1m", "${__rate_interval}", "1m", "$group", ".*", "${group}", ".*")
	type rule struct {
		Record string `yaml:"record"`
		Expr   string `yaml:"expr"`
	}
	var rules []rule
	for _, p := range allPanels(d.Panels) {
		for _, q := range p.Targets {
			rules = append(rules, rule{Record: fmt.Sprintf("dashboard:panel%d:%s", p.ID, strings.ToLower(q.RefID)), Expr: r.Replace(q.Expr)})
		}
	}
	b, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}})
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "dashboard-queries.yaml")
	if err := os.WriteFile(f, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(promtool, "check", "rules", f).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check rules on the dashboard's %d queries: %v\n%s", len(rules), err, out)
	}
}
