package policy

import (
	"testing"
	"time"
)

func TestLate(t *testing.T) {
	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name      string
		now       time.Time
		threshold time.Duration
		want      bool
	}{
		{"on time", at, 5 * time.Second, false},
		{"before its time", at.Add(-time.Hour), 5 * time.Second, false},
		{"within the threshold", at.Add(4 * time.Second), 5 * time.Second, false},
		{"exactly at the threshold", at.Add(5 * time.Second), 5 * time.Second, false},
		{"a nanosecond past the threshold", at.Add(5*time.Second + 1), 5 * time.Second, true},
		{"long past", at.Add(24 * time.Hour), 5 * time.Second, true},
		{"threshold 0 disables", at.Add(24 * time.Hour), 0, false},
		{"negative threshold disables", at.Add(24 * time.Hour), -time.Second, false},
		{"1ms threshold", at.Add(2 * time.Millisecond), time.Millisecond, true},
	} {
		if got := Late(at, c.now, c.threshold); got != c.want {
			t.Errorf("%s: Late(%s, %s, %s) = %v, want %v", c.name, at, c.now, c.threshold, got, c.want)
		}
		// LateBefore is Late's cutoff for a positive threshold.
		if c.threshold > 0 {
			if got := at.Before(LateBefore(c.now, c.threshold)); got != c.want {
				t.Errorf("%s: before LateBefore = %v, want %v", c.name, got, c.want)
			}
		}
	}
}

func TestDecide(t *testing.T) {
	late := 12345678 * time.Microsecond // 12.345678s
	for _, c := range []struct {
		name    string
		f       Facts
		want    Outcome
		message string
	}{
		// Planner: fires never planned.
		{"planning skip", Facts{Stage: AtPlanning, Policy: MisfireSkip, Late: late, Newer: NoNewer},
			Skip, "misfire: late by 12.346s, skipped (misfire policy skip)"},
		{"planning skip ignores newer", Facts{Stage: AtPlanning, Policy: MisfireSkip, Late: late, Newer: HasNewer},
			Skip, "misfire: late by 12.346s, skipped (misfire policy skip)"},
		{"planning fire_once newest", Facts{Stage: AtPlanning, Policy: MisfireFireOnce, Late: late, Newer: NoNewer},
			Run, "misfire: late by 12.346s, fired now (misfire policy fire_once)"},
		{"planning fire_once older", Facts{Stage: AtPlanning, Policy: MisfireFireOnce, Late: late, Newer: HasNewer},
			Superseded, "misfire: late by 12.346s, skipped: a later missed fire ran instead (misfire policy fire_once)"},
		{"planning fire_all", Facts{Stage: AtPlanning, Policy: MisfireFireAll, Late: late, Newer: HasNewer},
			Run, "misfire: late by 12.346s, fired now (misfire policy fire_all)"},
		// Dispatch: planned runs published late.
		{"publishing skip", Facts{Stage: AtPublishing, Policy: MisfireSkip, Late: late, Newer: NoNewer},
			Skip, "misfire: late by 12.346s when it could be published, skipped (misfire policy skip)"},
		{"publishing fire_once newest", Facts{Stage: AtPublishing, Policy: MisfireFireOnce, Late: late, Newer: NoNewer},
			Run, ""},
		{"publishing fire_once older", Facts{Stage: AtPublishing, Policy: MisfireFireOnce, Late: late, Newer: HasNewer},
			Superseded, "misfire: late by 12.346s when it could be published, skipped: a later missed fire ran instead (misfire policy fire_once)"},
		{"publishing fire_all", Facts{Stage: AtPublishing, Policy: MisfireFireAll, Late: late, Newer: HasNewer}, Run, ""},
		{"publishing unknown policy runs", Facts{Stage: AtPublishing, Policy: "later", Late: late, Newer: HasNewer}, Run, ""},
		// Worker: triggers picked up late.
		{"pick-up skip", Facts{Stage: AtPickUp, Policy: MisfireSkip, Late: late, Threshold: 5 * time.Second, Worker: "w1"},
			Skip, "trigger reached worker w1 12.3s after its fire time (misfire threshold 5s, policy skip): not run"},
		{"pick-up skip below a second", Facts{Stage: AtPickUp, Policy: MisfireSkip, Late: 12345 * time.Microsecond, Threshold: 10 * time.Millisecond, Worker: "w1"},
			Skip, "trigger reached worker w1 12ms after its fire time (misfire threshold 10ms, policy skip): not run"},
		{"pick-up fire_once unknown asks", Facts{Stage: AtPickUp, Policy: MisfireFireOnce, Late: late, Threshold: 5 * time.Second, Worker: "w1"},
			Ask, ""},
		{"pick-up fire_once no newer", Facts{Stage: AtPickUp, Policy: MisfireFireOnce, Late: late, Threshold: 5 * time.Second, Worker: "w1", Newer: NoNewer},
			Run, ""},
		{"pick-up fire_once superseded", Facts{Stage: AtPickUp, Policy: MisfireFireOnce, Late: late, Threshold: 5 * time.Second, Worker: "w1", Newer: HasNewer, NewerRun: 42},
			Superseded, "trigger reached worker w1 12.3s after its fire time (misfire threshold 5s, policy fire_once): not run, run 42 of the job runs instead"},
		{"pick-up fire_all", Facts{Stage: AtPickUp, Policy: MisfireFireAll, Late: late, Threshold: 5 * time.Second, Worker: "w1"}, Run, ""},
		{"pick-up no policy runs", Facts{Stage: AtPickUp, Late: late, Threshold: 5 * time.Second, Worker: "w1"}, Run, ""},
	} {
		d := Decide(c.f)
		if d.Outcome != c.want || d.Message != c.message {
			t.Errorf("%s: Decide = %v %q, want %v %q", c.name, d.Outcome, d.Message, c.want, c.message)
		}
	}
}

func TestCatchupSummary(t *testing.T) {
	first := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	last := first.Add(time.Hour)
	got := CatchupSummary("at least 7", first, last, 100, MisfireSkip, time.Time{})
	want := "misfire: at least 7 more missed fires from 2026-01-01T00:00:00Z to 2026-01-01T01:00:00Z, past max_catchup 100, not recorded one by one: skipped (misfire policy skip)"
	if got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	got = CatchupSummary("3", first, last, 10, MisfireFireOnce, last.Add(time.Minute))
	want = "misfire: 3 more missed fires from 2026-01-01T00:00:00Z to 2026-01-01T01:00:00Z, past max_catchup 10, not recorded one by one: skipped (misfire policy fire_once); the newest missed fire, 2026-01-01T01:01:00Z, ran instead"
	if got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

// A SKIPPED run that stands for several missed fires says how many and
// which, to the nanosecond, and ParseSkipped reads that back, from its
// message and from a max_catchup summary's; any other message is none.
func TestSkippedRangeParses(t *testing.T) {
	first := time.Date(2026, 5, 1, 12, 0, 0, 250_000_000, time.FixedZone("x", 3600))
	last := first.Add(14 * time.Second)
	msg := SkippedRange("15", first, last, MisfireFireOnce, last.Add(time.Second))
	want := "misfire: 15 missed fires from 2026-05-01T11:00:00.25Z to 2026-05-01T11:00:14.25Z, skipped (misfire policy fire_once); the newest missed fire, 2026-05-01T11:00:15.25Z, runs instead"
	if msg != want {
		t.Errorf("SkippedRange = %q, want %q", msg, want)
	}
	cases := []struct {
		msg         string
		n           int
		exact       bool
		first, last time.Time
		ok          bool
	}{
		{msg, 15, true, first, last, true},
		{SkippedRange("at least 100000", first, last, MisfireSkip, time.Time{}), 100000, false, first, last, true},
		{CatchupSummary("7", first.Truncate(time.Second), last.Truncate(time.Second), 100, MisfireSkip, time.Time{}),
			7, true, first.Truncate(time.Second), last.Truncate(time.Second), true},
		{"misfire: late by 6s, skipped (misfire policy skip)", 0, false, time.Time{}, time.Time{}, false},
		{"misfire: 3 missed fires from yesterday to today, skipped", 0, false, time.Time{}, time.Time{}, false},
	}
	for _, c := range cases {
		n, exact, f, l, ok := ParseSkipped(c.msg)
		if ok != c.ok || n != c.n || exact != c.exact || !f.Equal(c.first) || !l.Equal(c.last) {
			t.Errorf("ParseSkipped(%q) = %d, %v, %s, %s, %v; want %d, %v, %s, %s, %v", c.msg, n, exact, f, l, ok, c.n, c.exact, c.first, c.last, c.ok)
		}
	}
}
