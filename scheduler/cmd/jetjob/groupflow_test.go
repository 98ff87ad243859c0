package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// groups pause, drain and resume set the group's flow state with the
// note, groups list shows it, and a paused group's job is triggered only
// with --force.
func TestGroupsPauseDrainResume(t *testing.T) {
	r := isolatedAPI(t, "demo")
	job := adminJSON[apiv1.Job](t, r, "jobs", "create", "--group", "demo", "--name", "once", "--handler", "h", "--every", "1h")
	res := must(t, r.as(t, bootstrapToken, "", "groups", "pause", "demo", "--note", "quarter close"), "groups pause")
	printed(t, "groups pause", res.stdout, "State:", "paused", "quarter close")
	if res := must(t, r.as(t, bootstrapToken, "", "groups", "list"), "groups list"); !strings.Contains(res.stdout, "paused (0 running)") {
		t.Errorf("groups list does not show the pause:\n%s", res.stdout)
	}
	id := fmt.Sprint(job.ID)
	if res := r.as(t, bootstrapToken, "", "jobs", "trigger", id); res.code != exitError || !strings.Contains(res.stderr, "paused") {
		t.Errorf("trigger while paused: exit %d, stderr %q; want an error saying the group is paused", res.code, res.stderr)
	}
	must(t, r.as(t, bootstrapToken, "", "jobs", "trigger", id, "--force"), "trigger --force")
	g := adminJSON[apiv1.Group](t, r, "groups", "drain", "demo", "--note", "reboot")
	if g.Flow == nil || (g.Flow.State != "draining" && g.Flow.State != "drained") || g.Flow.Note != "reboot" {
		t.Errorf("groups drain: %+v, want draining or drained with the note", g.Flow)
	}
	g = adminJSON[apiv1.Group](t, r, "groups", "resume", "demo")
	if g.Flow == nil || g.Flow.State != "active" {
		t.Errorf("groups resume: %+v, want active", g.Flow)
	}
	if res := r.as(t, bootstrapToken, "", "groups", "pause", "nosuch"); res.code != exitError || !strings.Contains(res.stderr, "nosuch") {
		t.Errorf("pause of a missing group: exit %d, stderr %q", res.code, res.stderr)
	}
}

// groups set changes a group's cap and rate limit (a flag left out keeps
// its value), groups list shows them, groups queue shows the limits and
// the group's runs in flight, and a bad value is the API's clear error.
func TestGroupsSetAndQueue(t *testing.T) {
	r := isolatedAPI(t, "demo")
	job := adminJSON[apiv1.Job](t, r, "jobs", "create", "--group", "demo", "--name", "capped", "--handler", "h", "--every", "1h")
	res := must(t, r.as(t, bootstrapToken, "", "groups", "set", "demo", "--max-running", "3", "--rate-limit", "100/1m"), "groups set")
	printed(t, "groups set", res.stdout, "Max running:", "3", "Rate limit:", "100/1m")
	g := adminJSON[apiv1.Group](t, r, "groups", "set", "demo", "--max-running", "4")
	if g.MaxRunning != 4 || g.RateLimit != "100/1m" {
		t.Errorf("groups set --max-running: %+v, want 4 and the rate kept", g)
	}
	res = must(t, r.as(t, bootstrapToken, "", "groups", "list"), "groups list")
	printed(t, "groups list", res.stdout, "MAX RUNNING", "RATE LIMIT", "100/1m")
	if res := r.as(t, bootstrapToken, "", "groups", "set", "demo", "--rate-limit", "lots"); res.code != exitError || !strings.Contains(res.stderr, "COUNT/PERIOD") {
		t.Errorf("a bad rate: exit %d, stderr %q", res.code, res.stderr)
	}
	if res := r.as(t, bootstrapToken, "", "groups", "set", "demo"); res.code == 0 || !strings.Contains(res.stderr, "nothing to set") {
		t.Errorf("groups set without a flag: exit %d, stderr %q", res.code, res.stderr)
	}
	must(t, r.as(t, bootstrapToken, "", "jobs", "trigger", fmt.Sprint(job.ID)), "trigger")
	res = must(t, r.as(t, bootstrapToken, "", "groups", "queue", "demo"), "groups queue")
	printed(t, "groups queue", res.stdout, "0 of 4 held, 0 waiting", "100/1m: 100 may start now", "In flight (1)", "capped ("+fmt.Sprint(job.ID)+")")
	q := adminJSON[apiv1.GroupQueue](t, r, "groups", "queue", "demo")
	if q.MaxRunning != 4 || len(q.InFlight) != 1 || q.InFlight[0].JobID != job.ID {
		t.Errorf("groups queue -o json: %+v", q)
	}
}

// A group's limits travel with export and apply: apply creates a group
// with them, a second apply changes nothing, and an edited limit is
// planned as "~ group" and set.
func TestExportApplyGroupLimits(t *testing.T) {
	src := isolatedAPI(t, "billing")
	must(t, src.as(t, bootstrapToken, "", "groups", "set", "billing", "--max-running", "5", "--rate-limit", "100/1m"), "groups set")
	exported := src.admin(t, "", "export")
	printed(t, "export", exported, "  - name: billing\n    max_running: 5\n    rate_limit: 100/1m\n")

	dst := newRealAPI(t)
	res := must(t, dst.as(t, bootstrapToken, exported, "apply", "-f", "-"), "apply into an empty cluster")
	printed(t, "apply", res.stdout, "+ group billing\n")
	if got := dst.admin(t, "", "export"); got != exported {
		t.Fatalf("the applied cluster exports differently:\n%s\n---\nwant:\n%s", got, exported)
	}
	res = must(t, dst.as(t, bootstrapToken, exported, "apply", "-f", "-"), "second apply")
	printed(t, "second apply", res.stdout, "No changes")

	edited := strings.Replace(exported, "rate_limit: 100/1m", "rate_limit: 10/1s", 1)
	res = must(t, dst.as(t, bootstrapToken, edited, "apply", "-f", "-"), "apply the edit")
	printed(t, "apply the edit", res.stdout, "~ group billing  rate_limit: \"100/1m\" → \"10/1s\"\n", "1 group(s) to update", "updated group billing\n")
	g := adminJSON[apiv1.GroupList](t, dst, "groups", "list")
	if len(g.Groups) != 1 || g.Groups[0].MaxRunning != 5 || g.Groups[0].RateLimit != "10/1s" {
		t.Errorf("after apply: %+v", g.Groups)
	}
}
