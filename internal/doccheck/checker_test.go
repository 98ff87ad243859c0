package doccheck

import (
	"strings"
	"testing"
)

// TestCheckerCatchesDrift: the check flags what drifted and leaves prose
// alone, read against the real tree.
func TestCheckerCatchesDrift(t *testing.T) {
	r := openTestRepo(t)
	cases := []struct {
		name string
		md   string
		want string // a problem containing this; "" for none
	}{
		{"missing package", "Delays: `worker/internal/backoff`.", "`worker/internal/backoff` names a path"},
		{"missing file", "See `scheduler/internal/runs/nosuch.go`.", "`scheduler/internal/runs/nosuch.go` names a path"},
		{"missing short path", "See `planner/nosuch.go`.", "`planner/nosuch.go` names a path"},
		{"missing symbol", "Cancels through `store.NoSuchCancel`.", "`store.NoSuchCancel` names a symbol"},
		{"missing method", "Delay in `dispatch.Config.NoSuchDelay`.", "`dispatch.Config.NoSuchDelay` names a symbol"},
		{"bare file in the wrong package", "| kills | `worker/internal/kills`, `scheduler.go` (the hook) |", "`scheduler.go` is in none of worker/internal/kills"},
		{"name not in the file", "The hook: `scheduler/scheduler.go` (`kill`).", "does not declare `kill`"},
		{"name in another file of the package", "The stages: `scheduler/wiring.go` (`stages`).", "does not declare `stages`"},
		{"signature drifted", "| `scheduler/internal/wheel` | `func New(cfg Config, deps Deps) (*Wheel, error)` |", "the code `func New(fire"},
		{"link to a missing file", "See [the guide](docs/nosuch.md).", "docs/nosuch.md does not exist"},
		{"link to a missing heading", "See [limits](docs/operations.md#no-such-heading).", "has no heading #no-such-heading"},

		{"short and full paths", "`planner/fires.go`, `scheduler/internal/runs/fence.go`, `worker/internal/...`, `internal/egress`, `store/migrations/0001_init.sql`", ""},
		{"a package's symbols", "`runs.Fence`, `store.CancelRun`, `refs.Graph.Link`, `dispatch.Config.TriggeredDelay`, `internal/logging.Named`", ""},
		{"files of the package before them", "`scheduler/internal/runs` (`doc.go`, `fence.go`); `worker` (`receive.go`, `exec.go`)", ""},
		{"a name declared in its file", "`scheduler/wiring.go` (`kill`), `scheduler/scheduler.go` (`stages()`: the table)", ""},
		{"a signature as declared", "| `scheduler/internal/wheel` | `func New(fire func(context.Context, []runs.Planned), ready func(context.Context) bool) *Wheel` |", ""},
		{"prose", "`application/json`, `jetjob.sched.started`, `scheduler.egressAllow`, `/proc/$PPID/environ`, " +
			"`bench-results/<scenario>-<time>.json`, `jobs.yaml`, `--nats-url`, `nats://x:4222`, `w.Collector()`, `jetjob.trigger.<group>.batch`", ""},
		{"code blocks are not claims", "```\nmake -C worker/internal/backoff\n```", ""},
		{"links that resolve", "[ops](docs/operations.md#trigger-signing), [web](https://example.com/x.md), [schemas](docs/schemas), [img](docs/img/console-jobs.png)", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := parseMarkdown("README.md", c.md)
			problems := append(r.checkClaims(d), r.checkLinks(d)...)
			if c.want == "" {
				if len(problems) > 0 {
					t.Errorf("flagged prose or a true claim: %q", problems)
				}
				return
			}
			for _, p := range problems {
				if strings.Contains(p, c.want) {
					return
				}
			}
			t.Errorf("not flagged (want %q): %q", c.want, problems)
		})
	}
}

// TestSlug: anchors as GitHub makes them.
func TestSlug(t *testing.T) {
	for h, want := range map[string]string{
		"Job locks (`JETJOB_LOCKS`)":                           "job-locks-jetjob_locks",
		"Egress policy: where user-chosen requests may go":     "egress-policy-where-user-chosen-requests-may-go",
		"After a run: retries, child jobs, alarms, logs, kill": "after-a-run-retries-child-jobs-alarms-logs-kill",
	} {
		if got := slug(h); got != want {
			t.Errorf("slug(%q) = %q, want %q", h, got, want)
		}
	}
	d := parseMarkdown("x.md", "# A\n\n## A\n\n## A\n")
	for _, a := range []string{"a", "a-1", "a-2"} {
		if !d.anchors[a] {
			t.Errorf("anchor %q missing: %v", a, d.anchors)
		}
	}
}
