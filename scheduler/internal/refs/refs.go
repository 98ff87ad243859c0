// Package refs decides what one job may do to another by naming it: as a
// child (child_job_ids: a run that succeeds triggers its children), or as a
// node of a workflow (store.checkNodes: a workflow run runs its nodes'
// jobs). Every path that writes a reference — the
// API's create and update, and so the console, `jetjob apply` and `jetjob
// import xxl-job`, which all write through it — reaches the same two
// decisions, made in the store's write transaction:
//
//   - Check: who may name a job. A reference hands on a capability:
//     whoever may trigger the referring job causes runs of the job it names.
//     So naming a job needs exactly what triggering it directly needs
//     (auth.Principal.MayTrigger): operator of its group, and the scripts
//     permission when its handler runs commands. A job the writer may not
//     trigger is answered in the same words as one that does not exist
//     (ErrUnknown), so references cannot probe another group's ids.
//   - Graph.Link: how far one fire may reach. A root fire may cause at
//     most a fixed number of runs through references (DefaultMaxRuns, the
//     scheduler's --max-chain-runs); a link that would let any job reach
//     further is refused with the reach it would have (*FanOutError), and
//     so is one that closes a cycle (ErrCycle).
//
// At run time the results applier enforces the same cap per fire (Grant):
// links made before the cap, or while the cap was higher, or multiplied by
// a broadcast's parts, cannot make one fire cause more runs than it allows.
//
// # Links and revoked grants
//
// A link is authorized once, when it is made, as its author's act: the
// write that adds a reference is checked, and the link keeps working
// afterwards even if its author loses the grant that allowed it (as a job
// written by an operator keeps running after they leave). A later edit of
// the parent re-checks only the references the edit adds; references the
// parent already had are kept without a check, because keeping one gives
// the editor nothing new: whoever may edit the parent may trigger it, and
// that already causes the child's runs. Moving the parent to another
// group is the exception: it hands its links to that group's operators, so
// all of them are checked as if new. Removing a reference needs no
// permission on its target. An admin who revokes a grant and wants its
// links gone removes them from the parents (the audit log names who made
// each). A reader who cannot read a child's group still sees its id in the
// parent (the parent is theirs to read; the id says nothing else), never
// its group, name or runs.
package refs

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jetjob/jetjob/scheduler/internal/auth"
)

// Target is a job a reference names, as it is when the reference is made.
type Target struct {
	ID    int64
	Group string
	// Commands is whether the job's handler runs commands in its group
	// (auth.RunsCommands).
	Commands bool
	// Inline marks the job of a workflow's inline node: named by its
	// workflow only, never by a reference.
	Inline bool
}

// Authority is what a writer may name. Nil may name nothing.
type Authority interface {
	// MayName reports whether the writer may make a reference to t.
	MayName(t Target) bool
}

// Of is the authority of a principal: the jobs it could trigger itself.
func Of(p *auth.Principal) Authority { return principal{p} }

type principal struct{ p *auth.Principal }

func (a principal) MayName(t Target) bool { return a.p != nil && a.p.MayTrigger(t.Group, t.Commands) }

// Unrestricted may name any job: jetjob's own writes (dev's demo jobs) and
// tests that write through the store directly.
var Unrestricted Authority = unrestricted{}

type unrestricted struct{}

func (unrestricted) MayName(Target) bool { return true }

// ErrUnknown is a reference to a job that does not exist or that the writer
// may not name: one error for both, so that the answer does not tell them
// apart.
var ErrUnknown = errors.New("no such job, or not one you may trigger (naming a job as a child or a workflow node needs operator of its group, and scripts when it runs commands)")

// ErrInlineRefused is an inline job of a workflow's node (a job spec
// written into the workflow) that the writer could not trigger as a job
// of its own: writing it needs what naming such a job does.
var ErrInlineRefused = errors.New("not a job you may trigger (writing an inline job needs operator of its group, and scripts when its handler runs commands)")

// UnknownError lists the refused ids of one reference field.
type UnknownError struct {
	// Field is the field of the references ("child_job_ids").
	Field string
	IDs   []int64
}

func (e *UnknownError) Error() string {
	ids := make([]string, len(e.IDs))
	for i, id := range e.IDs {
		ids[i] = fmt.Sprint(id)
	}
	return fmt.Sprintf("%s: job %s: %v", e.Field, strings.Join(ids, ", "), ErrUnknown)
}

// Is makes errors.Is(err, ErrUnknown) hold.
func (e *UnknownError) Is(target error) bool { return target == ErrUnknown }

// Check is the one decision on who may name which jobs: every id of added
// (the references a write adds, of field) must be a job found (the targets
// that exist) that a may name. The refused ids, in the order given, make an
// *UnknownError; a missing job and one the writer may not name are
// refused alike.
func Check(a Authority, field string, added []int64, found []Target) error {
	byID := make(map[int64]Target, len(found))
	for _, t := range found {
		byID[t.ID] = t
	}
	var refused []int64
	for _, id := range added {
		t, ok := byID[id]
		if !ok || a == nil || !a.MayName(t) {
			refused = append(refused, id)
		}
	}
	if len(refused) == 0 {
		return nil
	}
	return &UnknownError{Field: field, IDs: refused}
}

// Added returns the ids of next that cur lacks, in next's order: the
// references a write makes, the only ones it is checked for.
func Added(cur, next []int64) []int64 {
	var out []int64
	for _, id := range next {
		if !slices.Contains(cur, id) && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}
