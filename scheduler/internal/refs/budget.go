package refs

import "fmt"

// Spawn is a run that succeeded and would trigger Children runs (its job's
// enabled children) in the chain of the root fire Root: the run that
// started it all (the run itself for a root).
type Spawn struct {
	Run, Root int64
	Children  int
}

// Decision is Grant's answer for one spawn: triggered, or not and why.
type Decision struct {
	Granted bool
	// Note says why a refused spawn triggered nothing; its run records
	// it, for whoever looks at the run.
	Note string
}

// Grant is the run-time side of the cap: it decides which spawns may
// trigger their children. used holds, by root, the runs each chain has
// caused so far, and is updated in place. In the order given (the
// applier's run order), a spawn is granted when its chain stays within
// limit with all of its children; otherwise none of them is triggered — a
// run's children start together or not at all, since picking some would
// be arbitrary — and the decision says why.
func Grant(spawns []Spawn, used map[int64]int, limit int) []Decision {
	out := make([]Decision, len(spawns))
	for i, s := range spawns {
		if n := used[s.Root]; n+s.Children > limit {
			out[i].Note = fmt.Sprintf("child jobs not triggered: the fire of run %d has caused %d runs through child jobs, and these %d would pass the limit of %d runs per fire (the scheduler's --max-chain-runs)",
				s.Root, n, s.Children, limit)
			continue
		}
		used[s.Root] += s.Children
		out[i].Granted = true
	}
	return out
}
