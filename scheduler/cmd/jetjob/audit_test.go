package main

import (
	"strings"
	"testing"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// "audit" filters by actor, target, action and time, pages with the
// cursor it prints, and refuses malformed filters before any request.
func TestAuditFiltersAndPages(t *testing.T) {
	r := isolatedAPI(t, "demo")
	r.admin(t, "", "jobs", "create", "--group", "demo", "--name", "a", "--handler", "hello")
	r.admin(t, "", "jobs", "create", "--group", "demo", "--name", "b", "--handler", "hello")
	r.admin(t, "", "jobs", "disable", "2")

	out := r.admin(t, "", "audit")
	rows := tableRows(out)
	want := [][]string{
		{"TIME", "ACTOR", "AUTH", "ACTION", "TARGET", "CLIENT"},
		{"bootstrap", "bootstrap", "job.disable", "job:2", "127.0.0.1"},
		{"bootstrap", "bootstrap", "job.create", "job:2", "127.0.0.1"},
		{"bootstrap", "bootstrap", "job.create", "job:1", "127.0.0.1"},
		{"bootstrap", "bootstrap", "group.create", "group:demo", "127.0.0.1"},
	}
	if len(rows) != len(want) || strings.Join(rows[0], " ") != strings.Join(want[0], " ") {
		t.Fatalf("audit:\n%s", out)
	}
	for i, w := range want[1:] {
		got := rows[i+1]
		if _, err := time.Parse(timeLayout, got[0]); err != nil {
			t.Errorf("row %d: time %q: %v", i+1, got[0], err)
		}
		if strings.Join(got[1:], " ") != strings.Join(w, " ") {
			t.Errorf("row %d = %q, want %q", i+1, got[1:], w)
		}
	}

	l := adminJSON[apiv1.AuditList](t, r, "audit", "--target", "job:2", "--action", "job.create")
	if len(l.Entries) != 1 || l.Entries[0].Target != "job:2" || l.Entries[0].Action != "job.create" || len(l.Entries[0].After) == 0 {
		t.Fatalf("--target job:2 --action job.create: %+v", l)
	}
	l = adminJSON[apiv1.AuditList](t, r, "audit", "--actor", "alice")
	if len(l.Entries) != 0 {
		t.Fatalf("--actor alice: %+v", l)
	}
	l = adminJSON[apiv1.AuditList](t, r, "audit", "--since", "1h", "--until", "2099-01-01T00:00:00Z")
	if len(l.Entries) != 4 {
		t.Fatalf("--since 1h: %d entries", len(l.Entries))
	}
	l = adminJSON[apiv1.AuditList](t, r, "audit", "--until", "1d")
	if len(l.Entries) != 0 {
		t.Fatalf("--until 1d: %+v", l)
	}

	// Pages of three: the printed cursor reads the rest, nothing twice.
	page := must(t, r.as(t, bootstrapToken, "", "audit", "--limit", "3"), "page 1")
	if n := len(tableRows(page.stdout)); n != 4 {
		t.Fatalf("page 1:\n%s", page.stdout)
	}
	_, cursor, ok := strings.Cut(page.stderr, "more entries: pass --after ")
	if !ok {
		t.Fatalf("page 1 announced no next page: %q", page.stderr)
	}
	cursor = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(cursor), "for the next page"))
	page2 := must(t, r.as(t, bootstrapToken, "", "audit", "--limit", "3", "--after", cursor), "page 2")
	if rows := tableRows(page2.stdout); len(rows) != 2 || rows[1][3] != "group.create" || page2.stderr != "" {
		t.Fatalf("page 2:\n%s\nstderr %q", page2.stdout, page2.stderr)
	}

	bad := []struct {
		args []string
		want string
	}{
		{[]string{"--target", "12"}, "want <kind>:<id>"},
		{[]string{"--action", "update"}, "want <kind>.<verb>"},
		{[]string{"--since", "yesterday"}, `--since "yesterday"`},
		{[]string{"--since", "-5m"}, "positive duration"},
		{[]string{"--since", "1h", "--until", "2h"}, "is not before --until"},
		{[]string{"--limit", "1001"}, "want 1 to 1000"},
		{[]string{"--after", "0"}, "invalid --after"},
		{[]string{"extra"}, `unexpected argument "extra"`},
	}
	before := r.reqs.Load()
	for _, b := range bad {
		res := r.as(t, bootstrapToken, "", append([]string{"audit"}, b.args...)...)
		if res.code != exitUsage || !strings.Contains(res.stderr, b.want) {
			t.Errorf("audit %v: exit %d, stderr %q; want exit 2 and %q", b.args, res.code, res.stderr, b.want)
		}
	}
	if n := r.reqs.Load() - before; n != 0 {
		t.Errorf("refused commands sent %d requests", n)
	}
}

func TestParseDays(t *testing.T) {
	const day = 24 * time.Hour
	good := map[string]time.Duration{"90d": 90 * day, "1d12h": day + 12*time.Hour, "12h": 12 * time.Hour, "0d": 0, "30m": 30 * time.Minute}
	for in, want := range good {
		if got, err := parseDays(in); err != nil || got != want {
			t.Errorf("parseDays(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "d", "xd", "-1d", "1d-1h", "1dd", "1.5d", "99999999d", "7 days"} {
		if got, err := parseDays(in); err == nil {
			t.Errorf("parseDays(%q) = %v, want an error", in, got)
		}
	}
}
