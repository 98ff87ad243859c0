package workflow

import (
	"errors"
	"slices"
	"testing"
)

// Retry from the failed nodes re-runs what failed, at its next attempt, and
// what was skipped because of it; what succeeded stays.
func TestRetry(t *testing.T) {
	g := mk(t, "a>b", "a>c", "b>d", "c>d", "d*cleanup")
	_, s, result := sim(t, g, nil, map[string]Status{"b": Failed})
	if result != Failed {
		t.Fatalf("first run: %s", result)
	}
	s, err := Retry(g, s)
	if err != nil {
		t.Fatal(err)
	}
	if b := s["b"]; b.Status != Pending || b.Attempt != 1 {
		t.Errorf("b after retry: %+v, want pending at attempt 1", b)
	}
	if d := s["d"]; d.Status != Pending || d.Attempt != 0 {
		t.Errorf("d after retry: %+v, want pending at attempt 0 (it never ran)", d)
	}
	for _, kept := range []string{"a", "c", "cleanup"} {
		if s[kept].Status != Succeeded {
			t.Errorf("%s after retry: %s, want it kept SUCCEEDED", kept, s[kept].Status)
		}
	}
	started, _, result := sim(t, g, s, nil)
	if !slices.Equal(started, []string{"b", "d"}) || result != Succeeded {
		t.Errorf("retry ran %v and ended %s; want [b d] and SUCCEEDED", started, result)
	}

	if _, err := Retry(g, State{"a": {Status: Succeeded}}); !errors.Is(err, ErrNotAllowed) {
		t.Errorf("retry with nothing failed: %v", err)
	}
}

// Marking a failed node succeeded unblocks what waited on it; the run ends
// as if it had succeeded.
func TestMarkSucceeded(t *testing.T) {
	g := mk(t, "a>b", "b>c", "b!alert")
	_, s, _ := sim(t, g, nil, map[string]Status{"b": Failed})
	if s["c"].Status != Skipped || s["alert"].Status != Succeeded {
		t.Fatalf("before: c %s, alert %s", s["c"].Status, s["alert"].Status)
	}
	s, err := MarkSucceeded(g, s, "b", "fixed by hand")
	if err != nil {
		t.Fatal(err)
	}
	started, final, result := sim(t, g, s, nil)
	if !slices.Equal(started, []string{"c"}) || result != Succeeded {
		t.Errorf("after marking b: ran %v, ended %s; want [c], SUCCEEDED", started, result)
	}
	if final["alert"].Status != Succeeded {
		t.Errorf("the handler that already ran: %s, want kept", final["alert"].Status)
	}
	if _, err := MarkSucceeded(g, State{"a": {Status: Running}}, "a", ""); !errors.Is(err, ErrNotAllowed) {
		t.Errorf("marking a running node: %v", err)
	}
	if _, err := MarkSucceeded(g, final, "b", ""); !errors.Is(err, ErrNotAllowed) {
		t.Errorf("marking a succeeded node: %v", err)
	}
	if _, err := MarkSucceeded(g, final, "zz", ""); err == nil {
		t.Error("marking an unknown node: no error")
	}
}

// An operator skips a failed node: it passes through as a disabled one
// does.
func TestBypass(t *testing.T) {
	g := mk(t, "a>b", "b>c")
	_, s, _ := sim(t, g, nil, map[string]Status{"b": Failed})
	s, err := Bypass(g, s, "b", "skipped by ops")
	if err != nil {
		t.Fatal(err)
	}
	started, final, result := sim(t, g, s, nil)
	if !slices.Equal(started, []string{"c"}) || result != Succeeded {
		t.Errorf("after skipping b: ran %v, ended %s", started, result)
	}
	if b := final["b"]; b.Status != Skipped || !b.Bypass || b.Reason != "skipped by ops" {
		t.Errorf("b: %+v", b)
	}
}

// Cancel settles what has not started and names what runs; once those end,
// the run is done, CANCELLED. Retry re-runs the cancelled nodes.
func TestCancel(t *testing.T) {
	g := mk(t, "a>b", "a>c", "b>d", "c>d")
	s := Advance(g, nil).Next                     // a runs
	s["a"] = NodeState{Status: Succeeded}         // a ends
	s = Advance(g, s).Next                        // b and c run
	s["b"] = NodeState{Status: Succeeded}         // b ends
	s, kill := Cancel(g, s, "cancelled by alice") // c runs, d waits
	if !slices.Equal(kill, []string{"c"}) {
		t.Errorf("kill %v, want [c]", kill)
	}
	if d := s["d"]; d.Status != Cancelled || d.Reason != "cancelled by alice" {
		t.Errorf("d: %+v", d)
	}
	if step := Advance(g, s); step.Done || len(step.Start) > 0 {
		t.Errorf("while c runs: done %v, start %v", step.Done, step.Start)
	}
	s["c"] = NodeState{Status: Cancelled}
	step := Advance(g, s)
	if !step.Done || step.Result != Cancelled {
		t.Fatalf("after c ended: done %v result %s", step.Done, step.Result)
	}
	s, err := Retry(g, step.Next)
	if err != nil {
		t.Fatal(err)
	}
	started, _, result := sim(t, g, s, nil)
	if !slices.Equal(started, []string{"c", "d"}) || result != Succeeded {
		t.Errorf("retry after cancel ran %v, ended %s", started, result)
	}
}
