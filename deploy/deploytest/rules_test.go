package deploytest

import (
	"os"
	"path/filepath"
	"testing"

	"go.yaml.in/yaml/v3"
)

type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Record      string            `yaml:"record"`
			Expr        string            `yaml:"expr"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

type ruleTests struct {
	RuleFiles []string `yaml:"rule_files"`
	Tests     []struct {
		Name          string `yaml:"name"`
		AlertRuleTest []struct {
			Alertname string `yaml:"alertname"`
			ExpAlerts []any  `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
	} `yaml:"tests"`
}

func readYAML(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, name))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// TestAlertRules: every alert names series jetjob exports and documents,
// says how bad it is and what it means, and has a promtool test where it
// fires and one where it does not (promtool runs them: make rules-check).
func TestAlertRules(t *testing.T) {
	var rf ruleFile
	readYAML(t, "deploy/prometheus/jetjob-rules.yaml", &rf)
	var rt ruleTests
	readYAML(t, "deploy/prometheus/jetjob-rules.test.yaml", &rt)
	exported, documented := exportedSeries(t), documentedSeries(t)

	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range rt.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				quiet[a.Alertname] = true
			}
		}
	}
	alerts := map[string]bool{}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			if alerts[r.Alert] {
				t.Errorf("alert %s defined twice", r.Alert)
			}
			alerts[r.Alert] = true
			checkSeries(t, "alert "+r.Alert, r.Expr, exported, documented)
			if s := r.Labels["severity"]; s != "critical" && s != "warning" {
				t.Errorf("alert %s: severity %q, want critical or warning", r.Alert, s)
			}
			if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("alert %s: needs a summary and a description", r.Alert)
			}
			if !fires[r.Alert] {
				t.Errorf("alert %s: no test in jetjob-rules.test.yaml where it fires", r.Alert)
			}
			if !quiet[r.Alert] {
				t.Errorf("alert %s: no test in jetjob-rules.test.yaml where it does not fire", r.Alert)
			}
		}
	}
	for a := range fires {
		if !alerts[a] {
			t.Errorf("jetjob-rules.test.yaml tests alert %s, which jetjob-rules.yaml does not define", a)
		}
	}
	if len(alerts) == 0 {
		t.Fatal("no alert read from jetjob-rules.yaml")
	}
	t.Logf("%d alerts checked", len(alerts))
}
