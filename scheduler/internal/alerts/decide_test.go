package alerts

import (
	"testing"
	"time"

	"github.com/jetjob/jetjob/internal/fakeclock"
	"github.com/jetjob/jetjob/scheduler/internal/alarm"
)

// feed is one rule's alerts on one job, driven by injected ends at a
// fake clock's times, recording the notices Decide asks for.
type feed struct {
	t       *testing.T
	rule    *Rule
	clk     *fakeclock.Clock
	alert   *Alert
	closed  []*Alert
	notices []alarm.Event
	run     int64
}

func newFeed(t *testing.T, r Rule) *feed {
	return &feed{t: t, rule: &r, clk: fakeclock.New(time.Date(2026, 11, 22, 2, 30, 0, 0, time.UTC))}
}

// end applies a run ending status (final: no retry follows), after
// advancing the clock by d.
func (f *feed) end(d time.Duration, status string, final bool) {
	f.clk.Advance(d)
	f.run++
	a, n := Decide(f.rule, f.alert, End{RunID: f.run, JobID: 1, Group: "g", Status: status, Final: final, At: f.clk.Now()}, f.clk.Now())
	if a != nil && a.State == StateClosed {
		f.closed = append(f.closed, a)
		a = nil
	}
	f.alert = a
	if n != nil {
		f.notices = append(f.notices, n.Event)
	}
}

func (f *feed) wantNotices(want ...alarm.Event) {
	f.t.Helper()
	if len(f.notices) != len(want) {
		f.t.Fatalf("notices %v, want %v", f.notices, want)
	}
	for i := range want {
		if f.notices[i] != want[i] {
			f.t.Fatalf("notices %v, want %v", f.notices, want)
		}
	}
}

// A job failing every second for a minute under a rule of 3 failures in
// a minute yields one alert counting 60 and one notice, not 60; its
// recovery closes it and is told.
func TestFailingEverySecondIsOneAlert(t *testing.T) {
	f := newFeed(t, Rule{Events: []alarm.Event{alarm.EventFailed, alarm.EventRecovered}, Threshold: 3, Window: time.Minute})
	for range 60 {
		f.end(time.Second, "FAILED", true)
	}
	f.wantNotices(alarm.EventFailed)
	if f.alert.State != StateOpen || f.alert.Count != 60 {
		t.Fatalf("alert %s counting %d, want open counting 60", f.alert.State, f.alert.Count)
	}
	f.end(time.Second, "SUCCEEDED", true)
	f.wantNotices(alarm.EventFailed, alarm.EventRecovered)
	if f.alert != nil || len(f.closed) != 1 || f.closed[0].Count != 60 {
		t.Fatalf("after the recovery: live %v, closed %v; want one closed alert counting 60", f.alert, f.closed)
	}
}

// Fewer events than the threshold within the window open nothing: the
// window slides, and a recovery ends the pending alert silently.
func TestThresholdWithinWindow(t *testing.T) {
	f := newFeed(t, Rule{Events: []alarm.Event{alarm.EventFailed, alarm.EventRecovered}, Threshold: 3, Window: 10 * time.Second})
	for range 5 {
		f.end(6*time.Second, "FAILED", true) // never 3 within 10 s
	}
	f.wantNotices()
	if f.alert.State != StatePending || f.alert.Count != 5 {
		t.Fatalf("alert %s counting %d, want pending counting 5", f.alert.State, f.alert.Count)
	}
	f.end(time.Second, "SUCCEEDED", true)
	f.wantNotices()
	f.end(time.Second, "FAILED", true)
	f.end(time.Second, "FAILED", true)
	f.end(time.Second, "FAILED", true)
	f.wantNotices(alarm.EventFailed)
}

// An open alert that keeps failing is told again once per re-notify
// interval, not per event.
func TestRenotify(t *testing.T) {
	f := newFeed(t, Rule{Events: []alarm.Event{alarm.EventFailed}, Threshold: 1, Renotify: 10 * time.Minute})
	for range 30 * 60 {
		f.end(time.Second, "FAILED", true)
	}
	// 1,800 events over 30 minutes: told at the first, then 10 and 20
	// minutes after it.
	if len(f.notices) != 3 {
		t.Fatalf("%d notices in 30 minutes with re-notify every 10, want 3", len(f.notices))
	}
}

// Silence keeps notices back but not the count; an alert opened in
// silence is told at its first event after the silence. An acknowledged
// alert is not told again.
func TestSilenceAndAcknowledge(t *testing.T) {
	f := newFeed(t, Rule{Events: []alarm.Event{alarm.EventFailed, alarm.EventRecovered}, Threshold: 1})
	f.rule.MutedUntil = f.clk.Now().Add(time.Minute)
	for range 30 {
		f.end(time.Second, "FAILED", true)
	}
	f.wantNotices()
	f.end(time.Minute, "FAILED", true)
	f.wantNotices(alarm.EventFailed)
	if f.alert.Count != 31 {
		t.Errorf("count %d, want 31", f.alert.Count)
	}

	g := newFeed(t, Rule{Events: []alarm.Event{alarm.EventFailed}, Threshold: 1, Renotify: time.Second})
	g.end(time.Second, "FAILED", true)
	g.alert.AckedAt = g.clk.Now()
	for range 10 {
		g.end(time.Minute, "FAILED", true)
	}
	g.wantNotices(alarm.EventFailed)
}

// Events map from statuses: retries_exhausted only on the final attempt,
// missed for an expired trigger; a rule hears only what it subscribes to,
// and succeeded is opt-in.
func TestEventsOfAnEnd(t *testing.T) {
	f := newFeed(t, Rule{Events: []alarm.Event{alarm.EventRetriesExhausted}, Threshold: 1})
	f.end(time.Second, "FAILED", false)
	f.end(time.Second, "TIMED_OUT", false)
	f.wantNotices()
	f.end(time.Second, "TIMED_OUT", true)
	f.wantNotices(alarm.EventRetriesExhausted)

	m := newFeed(t, Rule{Events: []alarm.Event{alarm.EventMissed}, Threshold: 1})
	m.end(time.Second, "FAILED", true)
	m.end(time.Second, "EXPIRED", false)
	m.wantNotices(alarm.EventMissed)

	s := newFeed(t, Rule{Events: []alarm.Event{alarm.EventSucceeded}, Threshold: 1})
	s.end(time.Second, "SUCCEEDED", true)
	s.end(time.Second, "SUCCEEDED", true)
	s.wantNotices(alarm.EventSucceeded, alarm.EventSucceeded)
}

// A rule covers one job, a group's jobs or every job.
func TestRuleCovers(t *testing.T) {
	for _, c := range []struct {
		r     Rule
		job   int64
		group string
		want  bool
	}{
		{Rule{JobID: 1, Group: "g"}, 1, "g", true},
		{Rule{JobID: 1, Group: "g"}, 2, "g", false},
		{Rule{Group: "g"}, 2, "g", true},
		{Rule{Group: "g"}, 2, "h", false},
		{Rule{}, 3, "h", true},
	} {
		if got := c.r.Covers(c.job, c.group); got != c.want {
			t.Errorf("%+v covers job %d of %s: %v, want %v", c.r, c.job, c.group, got, c.want)
		}
	}
}

// Pause is set once, by the event that brings the alert to PauseAfter,
// silenced or not; a success between failures starts the count again.
func TestPauseAfter(t *testing.T) {
	f := newFeed(t, Rule{Events: []alarm.Event{alarm.EventFailed}, Threshold: 1, PauseAfter: 3})
	f.rule.MutedUntil = f.clk.Now().Add(time.Hour)
	var pauses []int
	for i := range 5 {
		if i == 2 {
			f.end(time.Second, "SUCCEEDED", true)
		}
		f.end(time.Second, "FAILED", true)
		if f.alert.Pause {
			pauses = append(pauses, f.alert.Count)
		}
	}
	if len(pauses) != 1 || pauses[0] != 3 {
		t.Fatalf("paused at counts %v, want once, at the third consecutive failure", pauses)
	}
}
