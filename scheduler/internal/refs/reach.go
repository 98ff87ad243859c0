package refs

import (
	"errors"
	"fmt"
)

// DefaultMaxRuns is the default cap on the runs one root fire may cause
// through references (the scheduler's --max-chain-runs): the runs its
// children, their children and so on would make, the root's own run not
// counted.
const DefaultMaxRuns = 100

// MaxRunsLimit bounds the cap an operator may set.
const MaxRunsLimit = 1_000_000

// ValidateMaxRuns checks a configured cap: 1 to MaxRunsLimit, or 0 for
// DefaultMaxRuns.
func ValidateMaxRuns(n int) error {
	if n < 0 || n > MaxRunsLimit {
		return fmt.Errorf("max chain runs %d: want 1 to %d (0: the default, %d)", n, MaxRunsLimit, DefaultMaxRuns)
	}
	return nil
}

// MaxRunsOr is n, or DefaultMaxRuns for 0.
func MaxRunsOr(n int) int {
	if n == 0 {
		return DefaultMaxRuns
	}
	return n
}

// ceiling is where reach stops counting: past every sensible cap, and far
// from overflowing however many paths a graph has.
const ceiling = 1 << 31

var (
	// ErrCycle is a link that would make a job trigger itself again.
	ErrCycle = errors.New("child jobs form a cycle")
	// ErrFanOut is a link that would let one fire cause more runs than
	// the cap.
	ErrFanOut = errors.New("one fire would cause too many runs through child jobs")
)

// FanOutError is a link refused for its reach.
type FanOutError struct {
	// Job is the job written (0: a new one).
	Job int64
	// Reach is the runs one fire would cause (at least ceiling when it
	// stopped counting), Max the cap.
	Reach, Max int
	// Ancestor is set when the fire is that of a job triggering Job
	// through references, not Job's own. That job is not named: the
	// writer may not be allowed to know it.
	Ancestor bool
}

func (e *FanOutError) Error() string {
	reach := fmt.Sprint(e.Reach)
	if e.Reach >= ceiling {
		reach = fmt.Sprintf("more than %d", ceiling-1)
	}
	who := "this job"
	if e.Job != 0 {
		who = fmt.Sprintf("job %d", e.Job)
	}
	if e.Ancestor {
		who = "a job that triggers " + who + " through its children"
	}
	return fmt.Sprintf("child_job_ids: with these children, one fire of %s would cause %s runs through child jobs, more than the limit of %d runs per fire (the scheduler's --max-chain-runs)",
		who, reach, e.Max)
}

// Is makes errors.Is(err, ErrFanOut) hold.
func (e *FanOutError) Is(target error) bool { return target == ErrFanOut }

// Graph is the jobs' references: the children of each job that has some,
// each child a job that exists.
type Graph map[int64][]int64

// Link decides whether job id (0: a job being created) may have the
// children next, in the graph g holds of every other job: following the
// children from next must never lead back to id (ErrCycle), and neither
// id's fire nor that of any job triggering id may cause more than limit runs
// (*FanOutError, reporting id's own reach first, else the largest). A run
// is counted per path, as each path triggers one: a job reached two ways
// runs twice.
func (g Graph) Link(id int64, next []int64, limit int) error {
	h := make(Graph, len(g)+1)
	for k, v := range g {
		h[k] = v
	}
	h[id] = next
	if id != 0 && h.reaches(next, id) {
		return fmt.Errorf("job %d with children %v: %w (a child, or one of its descendants, triggers job %d again)", id, next, ErrCycle, id)
	}
	memo := map[int64]int{}
	if r := h.reach(id, memo, map[int64]bool{}); r > limit {
		return &FanOutError{Job: id, Reach: r, Max: limit}
	}
	worst := 0
	for _, a := range h.ancestors(id) {
		worst = max(worst, h.reach(a, memo, map[int64]bool{}))
	}
	if worst > limit {
		return &FanOutError{Job: id, Reach: worst, Max: limit, Ancestor: true}
	}
	return nil
}

// Reach is how many runs one fire of id causes through its references.
func (g Graph) Reach(id int64) int { return g.reach(id, map[int64]int{}, map[int64]bool{}) }

// reaches reports whether following children from starts reaches target.
func (g Graph) reaches(starts []int64, target int64) bool {
	seen := map[int64]bool{}
	stack := append([]int64(nil), starts...)
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if n == target {
			return true
		}
		if seen[n] {
			continue
		}
		seen[n] = true
		stack = append(stack, g[n]...)
	}
	return false
}

// reach counts the runs below n, memoized, stopping at ceiling. A cycle
// (which Link refuses to make, but a graph read back might hold) counts as
// endless.
func (g Graph) reach(n int64, memo map[int64]int, onPath map[int64]bool) int {
	if r, ok := memo[n]; ok {
		return r
	}
	if onPath[n] {
		return ceiling
	}
	onPath[n] = true
	total := 0
	for _, c := range g[n] {
		total = min(ceiling, total+1+g.reach(c, memo, onPath))
	}
	delete(onPath, n)
	memo[n] = total
	return total
}

// ancestors are the jobs from which following children reaches id.
func (g Graph) ancestors(id int64) []int64 {
	parents := map[int64][]int64{}
	for p, cs := range g {
		for _, c := range cs {
			parents[c] = append(parents[c], p)
		}
	}
	seen := map[int64]bool{id: true}
	var out []int64
	stack := []int64{id}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, p := range parents[n] {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
				stack = append(stack, p)
			}
		}
	}
	return out
}
