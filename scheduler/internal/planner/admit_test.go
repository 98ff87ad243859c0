package planner

import (
	"testing"
	"time"
)

// admit plans the whole window while the stages after planning keep up
// (up to a quarter of MaxLag behind), less and less as they fall further
// behind, down to one interval, and nothing from MaxLag on; the further
// behind of dispatch and the applier decides.
func TestAdmit(t *testing.T) {
	const window, interval, maxLag = 5 * time.Second, time.Second, time.Second
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	cases := []struct {
		name  string
		p     Pressure
		ahead time.Duration
		ok    bool
	}{
		{"keeping up", Pressure{}, window, true},
		{"a burst's worth behind", Pressure{Dispatch: ms(250)}, window, true},
		{"halfway", Pressure{Results: ms(625)}, 3 * time.Second, true},
		{"the further behind decides", Pressure{Dispatch: ms(100), Results: ms(625)}, 3 * time.Second, true},
		{"further", Pressure{Dispatch: ms(850)}, ms(1800), true},
		{"at the limit", Pressure{Dispatch: maxLag}, 0, false},
		{"past it", Pressure{Results: 10 * time.Second}, 0, false},
	}
	for _, c := range cases {
		ahead, ok := admit(c.p, window, interval, maxLag)
		if ok != c.ok || ahead != c.ahead {
			t.Errorf("%s (%+v): admit = %s, %v; want %s, %v", c.name, c.p, ahead, ok, c.ahead, c.ok)
		}
	}
	// A window of one interval stays one interval.
	if ahead, ok := admit(Pressure{Results: ms(900)}, interval, interval, maxLag); !ok || ahead != interval {
		t.Errorf("window = interval: admit = %s, %v; want %s, true", ahead, ok, interval)
	}
}
