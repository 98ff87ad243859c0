package refs_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/jetjob/jetjob/scheduler/internal/auth"
	"github.com/jetjob/jetjob/scheduler/internal/refs"
)

func TestCheck(t *testing.T) {
	op := &auth.Principal{Name: "op", Grants: map[string]auth.Grant{
		"a": {Role: auth.Operator}, "s": {Role: auth.Operator, Scripts: true}, "v": {Role: auth.Viewer, Scripts: true}}}
	found := []refs.Target{
		{ID: 1, Group: "a"},
		{ID: 2, Group: "a", Commands: true},
		{ID: 3, Group: "s", Commands: true},
		{ID: 4, Group: "v"},
		{ID: 5, Group: "other"},
	}
	for _, c := range []struct {
		name    string
		who     refs.Authority
		added   []int64
		refused []int64
	}{
		{"a job of a group operated", refs.Of(op), []int64{1}, nil},
		{"a command job without scripts", refs.Of(op), []int64{2}, []int64{2}},
		{"a command job with scripts", refs.Of(op), []int64{3}, nil},
		{"a job of a group only viewed", refs.Of(op), []int64{4}, []int64{4}},
		{"a job of another group", refs.Of(op), []int64{5}, []int64{5}},
		{"a missing job", refs.Of(op), []int64{99}, []int64{99}},
		{"several, in the order given", refs.Of(op), []int64{99, 1, 5, 2}, []int64{99, 5, 2}},
		{"an admin names any job that exists", refs.Of(&auth.Principal{Admin: true}), []int64{2, 5, 99}, []int64{99}},
		{"no principal names nothing", refs.Of(nil), []int64{1}, []int64{1}},
		{"no authority names nothing", nil, []int64{1}, []int64{1}},
		{"jetjob itself names any job that exists", refs.Unrestricted, []int64{5, 99}, []int64{99}},
		{"nothing added", refs.Of(nil), nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := refs.Check(c.who, "child_job_ids", c.added, found)
			if c.refused == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var ue *refs.UnknownError
			if !errors.As(err, &ue) || !errors.Is(err, refs.ErrUnknown) {
				t.Fatalf("error %v, want an UnknownError", err)
			}
			if len(ue.IDs) != len(c.refused) {
				t.Fatalf("refused %v, want %v", ue.IDs, c.refused)
			}
			for i := range ue.IDs {
				if ue.IDs[i] != c.refused[i] {
					t.Fatalf("refused %v, want %v", ue.IDs, c.refused)
				}
			}
			if !strings.HasPrefix(err.Error(), "child_job_ids: job ") {
				t.Errorf("message %q does not start with the field", err)
			}
		})
	}
	// A missing job and a foreign one are refused in the same words.
	a, b := refs.Check(refs.Of(op), "f", []int64{5}, found), refs.Check(refs.Of(op), "f", []int64{99}, found)
	if strings.Replace(a.Error(), "5", "N", 1) != strings.Replace(b.Error(), "99", "N", 1) {
		t.Errorf("foreign %q and missing %q differ", a, b)
	}
}

func TestAdded(t *testing.T) {
	got := refs.Added([]int64{1, 2, 3}, []int64{3, 4, 1, 5, 4})
	if len(got) != 2 || got[0] != 4 || got[1] != 5 {
		t.Errorf("Added = %v, want [4 5]", got)
	}
	if got := refs.Added([]int64{1, 2}, []int64{2}); got != nil {
		t.Errorf("Added of a removal = %v, want none", got)
	}
}

func TestGraphLink(t *testing.T) {
	// leaves 1..10; 20 → leaves; 30 → 20, 20's twin 21 → leaves.
	leaves := []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	g := refs.Graph{20: leaves, 21: leaves, 30: {20, 21}}
	for _, c := range []struct {
		name     string
		id       int64
		next     []int64
		limit    int
		err      error
		reach    int
		ancestor bool
	}{
		{"a new job within the cap", 0, []int64{30}, 100, nil, 0, false},
		{"a new job at the cap", 0, []int64{30}, 23, nil, 0, false},
		{"a new job over the cap", 0, []int64{30}, 22, refs.ErrFanOut, 23, false},
		{"paths count twice", 0, []int64{30, 20}, 33, refs.ErrFanOut, 34, false},
		{"an ancestor pushed over", 1, []int64{2, 3}, 25, refs.ErrFanOut, 26, true},
		{"own reach is reported first", 20, leaves[:3], 2, refs.ErrFanOut, 3, false},
		{"a cycle", 1, []int64{30}, 1000, refs.ErrCycle, 0, false},
		{"a job naming itself", 5, []int64{5}, 1000, refs.ErrCycle, 0, false},
		{"dropping children", 30, nil, 0, nil, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := g.Link(c.id, c.next, c.limit)
			if !errors.Is(err, c.err) || (c.err == nil) != (err == nil) {
				t.Fatalf("Link(%d, %v, %d) = %v, want %v", c.id, c.next, c.limit, err, c.err)
			}
			var fe *refs.FanOutError
			if errors.As(err, &fe) {
				if fe.Reach != c.reach || fe.Ancestor != c.ancestor || fe.Max != c.limit {
					t.Errorf("%+v, want reach %d, ancestor %v", fe, c.reach, c.ancestor)
				}
				t.Log(err)
			}
		})
	}
	if g[1] != nil {
		t.Error("Link changed the graph it was given")
	}
}

// Reach stops counting far beyond any cap instead of overflowing: 40
// levels of two paths each are 2^41 runs.
func TestReachSaturates(t *testing.T) {
	g := refs.Graph{}
	for i := int64(1); i <= 40; i++ {
		g[i] = []int64{i + 100, i + 100}
		g[i+100] = []int64{i + 1}
	}
	r := g.Reach(1)
	if r < 1<<31 || r > 1<<31 {
		t.Fatalf("Reach = %d, want the ceiling %d", r, 1<<31)
	}
	err := g.Link(0, []int64{1}, refs.DefaultMaxRuns)
	if !errors.Is(err, refs.ErrFanOut) || !strings.Contains(err.Error(), "more than 2147483647") {
		t.Fatalf("Link: %v", err)
	}
}

func TestGrant(t *testing.T) {
	spawns := []refs.Spawn{
		{Run: 1, Root: 1, Children: 10},  // 10
		{Run: 2, Root: 1, Children: 80},  // 90
		{Run: 3, Root: 1, Children: 20},  // would be 110: refused
		{Run: 4, Root: 9, Children: 100}, // another chain, exactly the cap
		{Run: 5, Root: 1, Children: 10},  // 100: still fits after the refusal
		{Run: 6, Root: 1, Children: 1},   // 101: refused
		{Run: 7, Root: 8, Children: 1},   // a chain already at its cap
	}
	used := map[int64]int{8: 100}
	ds := refs.Grant(spawns, used, 100)
	want := []bool{true, true, false, true, true, false, false}
	for i, d := range ds {
		if d.Granted != want[i] || (d.Note == "") != d.Granted {
			t.Errorf("spawn %+v: %+v, want granted %v with a note when refused", spawns[i], d, want[i])
		}
	}
	if used[1] != 100 || used[9] != 100 || used[8] != 100 {
		t.Errorf("used after: %v", used)
	}
	if n := ds[2].Note; !strings.Contains(n, "run 1 has caused 90 runs") || !strings.Contains(n, "these 20") || !strings.Contains(n, "limit of 100") {
		t.Errorf("note %q", n)
	}
}

func TestValidateMaxRuns(t *testing.T) {
	for n, ok := range map[int]bool{0: true, 1: true, 100: true, refs.MaxRunsLimit: true, -1: false, refs.MaxRunsLimit + 1: false} {
		if err := refs.ValidateMaxRuns(n); (err == nil) != ok {
			t.Errorf("ValidateMaxRuns(%d) = %v", n, err)
		}
	}
	if refs.MaxRunsOr(0) != refs.DefaultMaxRuns || refs.MaxRunsOr(7) != 7 {
		t.Error("MaxRunsOr")
	}
}
