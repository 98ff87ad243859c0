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
