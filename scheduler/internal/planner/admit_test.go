package planner

import (
	"slices"
	"testing"
	"time"
)

// admit plans the whole window while the stages after planning keep up
// (up to a quarter of MaxLag behind), less and less as they fall further
// behind, down to one interval, and from MaxLag on a pass waits (one under
// way plans one interval ahead); the further behind of dispatch and the
// applier decides.
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
		{"at the limit", Pressure{Dispatch: maxLag}, interval, false},
		{"past it", Pressure{Results: 10 * time.Second}, interval, false},
	}
	for _, c := range cases {
		a, ok := admit(c.p, window, interval, maxLag)
		if ok != c.ok || a.ahead != c.ahead || a.behind != nil {
			t.Errorf("%s (%+v): admit = %+v, %v; want %s ahead, no group behind, %v", c.name, c.p, a, ok, c.ahead, c.ok)
		}
	}
	// A window of one interval stays one interval.
	if a, ok := admit(Pressure{Results: ms(900)}, interval, interval, maxLag); !ok || a.ahead != interval {
		t.Errorf("window = interval: admit = %+v, %v; want %s ahead, true", a, ok, interval)
	}
}

// A worker group whose oldest waiting trigger waited twice MaxLag or more
// is behind: its jobs are left out, and only its; the others' and the
// window are as the shared stages say.
func TestAdmitGroupsBehind(t *testing.T) {
	const window, interval, maxLag = 5 * time.Second, time.Second, time.Second
	p := Pressure{Groups: map[string]time.Duration{"slow": 2 * time.Second, "slower": time.Minute, "busy": 1999 * time.Millisecond, "idle": 0}}
	a, ok := admit(p, window, interval, maxLag)
	if !ok || a.ahead != window || !slices.Equal(a.behind, []string{"slow", "slower"}) {
		t.Errorf("admit = %+v, %v; want the whole window, groups slow and slower behind", a, ok)
	}
	p.Dispatch = maxLag
	if _, ok := admit(p, window, interval, maxLag); ok {
		t.Error("dispatch at MaxLag: admitted, want a wait whatever the groups")
	}
}
