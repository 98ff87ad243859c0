package jobfile

import (
	"errors"
	"strings"
	"testing"
)

const header = "apiVersion: jetjob/v1\nkind: Jobs\n"

// Every problem of an invalid file is reported with the file, the line and
// the field, before anything is sent to a cluster.
func TestParseRefusesInvalidFiles(t *testing.T) {
	job := "jobs:\n  - group: billing\n    name: a\n    handler: shell\n" // lines 3-6
	for _, tc := range []struct {
		name, doc string
		want      []string
	}{
		{"empty", "", []string{"jobs.yaml:1: the file is empty"}},
		{"no header", "jobs: []\n", []string{"missing apiVersion: jetjob/v1", "missing kind: Jobs"}},
		{"other version", "apiVersion: jetjob/v2\nkind: Jobs\n", []string{"jobs.yaml:1: apiVersion: want jetjob/v1"}},
		{"unknown top field", header + "job: []\n", []string{`jobs.yaml:3: unknown field "job"`}},
		{"unknown job field", header + job + "    schedul_expr: 1m\n",
			[]string{"jobs.yaml:7: jobs[0].schedul_expr: unknown field (known fields: group, name,", "schedule_expr", "children)"}},
		{"ids instead of names", header + job + "    child_job_ids: [3]\n",
			[]string{"jobs.yaml:7: jobs[0].child_job_ids: unknown field (name child jobs by group/name under children)"}},
		{"version", header + job + "    version: 3\n", []string{"jobs.yaml:7: jobs[0].version: unknown field (apply takes versions from the cluster)"}},
		{"wrong type", header + job + "    max_retries: many\n", []string{"jobs.yaml:7: jobs[0].max_retries: want a whole number, not string"}},
		{"duration as number", header + job + "    timeout: 30\n", []string{`jobs.yaml:7: jobs[0].timeout: want a duration like "30s", not number`}},
		{"bad duration", header + job + "    timeout: soon\n", []string{`jobs.yaml:7: jobs[0].timeout: duration "soon"`}},
		{"bool as text", header + job + "    enabled: nope\n", []string{"jobs.yaml:7: jobs[0].enabled: want true or false"}},
		{"field twice", header + job + "    handler: http\n", []string{"jobs.yaml:7: jobs[0].handler: appears twice (first at line 6)"}},
		{"missing handler", header + "jobs:\n  - group: billing\n    name: a\n", []string{"jobs.yaml:4: jobs[0].handler: required"}},
		{"bad group", header + "jobs:\n  - group: bill ing\n    name: a\n    handler: x\n", []string{`jobs.yaml:4: jobs[0].group: invalid group "bill ing"`}},
		{"bad cron", header + job + "    schedule_type: cron\n    schedule_expr: every day\n", []string{"jobs.yaml:8: jobs[0].schedule_expr:"}},
		{"bad zone", header + job + "    schedule_type: cron\n    schedule_expr: '@daily'\n    timezone: Mars/Olympus\n", []string{"jobs.yaml:9: jobs[0].timezone:"}},
		{"bad misfire", header + job + "    misfire_policy: later\n", []string{`jobs.yaml:7: jobs[0].misfire_policy: unknown misfire_policy "later"`}},
		{"bad child", header + job + "    children: [nogroup]\n", []string{`jobs.yaml:7: jobs[0].children[0]: "nogroup": want group/name`}},
		{"own child", header + job + "    children: [billing/a]\n", []string{"jobs.yaml:7: jobs[0].children: billing/a names the job itself"}},
		{"job twice", header + job + "  - group: billing\n    name: a\n    handler: x\n", []string{"jobs.yaml:7: jobs[1]: job billing/a is already defined at line 4"}},
		{"group twice", header + "groups:\n  - name: g\n  - name: g\n", []string{"jobs.yaml:5: groups[1]: group g is already declared at line 4"}},
		{"unknown group field", header + "groups:\n  - name: g\n    owner: me\n", []string{"jobs.yaml:5: groups[0].owner: unknown field (known fields: name, title, command_handlers, max_running, rate_limit)"}},
		{"two documents", header + "---\n" + header, []string{"a second YAML document"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("jobs.yaml", []byte(tc.doc))
			var ie *InvalidError
			if !errors.As(err, &ie) {
				t.Fatalf("Parse(%q) = %v, want an InvalidError", tc.doc, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error\n%v\ndoes not say %q", err, w)
				}
			}
		})
	}
}

// A file may use anchors, leave jobs empty and write any scalar for a
// string field as it is.
func TestParseAcceptsPlainYAML(t *testing.T) {
	f := mustParse(t, header+`groups:
  - name: billing
jobs:
  - &base
    group: billing
    name: a
    handler: shell
    params: 42
  - group: billing
    name: b
    handler: shell
    alarm_emails: &mails [ops@example.com]
    enabled: false
`)
	if len(f.Jobs) != 2 || f.Jobs[0].Spec.Params != "42" || *f.Jobs[1].Spec.Enabled || f.Jobs[1].Spec.AlarmEmails[0] != "ops@example.com" {
		t.Fatalf("parsed %+v", f.Jobs)
	}
	if f := mustParse(t, header+"jobs:\n"); len(f.Jobs) != 0 {
		t.Fatalf("empty jobs parsed as %+v", f.Jobs)
	}
}
