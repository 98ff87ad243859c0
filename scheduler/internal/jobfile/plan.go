package jobfile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// Action is what a plan does to one job.
type Action string

// The actions of a plan.
const (
	Create    Action = "create"
	Update    Action = "update"
	Delete    Action = "delete"
	Unchanged Action = "unchanged"
)

// Change is the plan for one job.
type Change struct {
	Action Action `json:"action"`
	Key    Key    `json:"job"`
	// ID and Version are the job as read when planning (not on create): an
	// update sends Version, so a job changed since is refused (409), never
	// overwritten.
	ID      int64 `json:"id,omitempty"`
	Version int64 `json:"version,omitempty"`
	// Diffs are the fields an update changes.
	Diffs []FieldDiff `json:"diffs,omitempty"`
	// Keep are the job's children the plan cannot name (no job the caller
	// reads has their id: another group's, or deleted). A file cannot list
	// them, so they are no difference: an update sends them back as they
	// are, and the server keeps a link it is sent unchanged.
	Keep []int64 `json:"keep_children,omitempty"`
	// Job is what the file says (create, update).
	Job *Job `json:"-"`
}

// FieldDiff is one changed field, its values as JSON (defaults filled in).
type FieldDiff struct {
	Field string `json:"field"`
	Old   string `json:"old"`
	New   string `json:"new"`
}

// Plan is what apply does to bring the cluster to the file.
type Plan struct {
	// NewGroups are the file's groups the cluster lacks (created first).
	NewGroups []apiv1.Group `json:"new_groups,omitempty"`
	// GroupChanges are the file's existing groups whose limits differ
	// (max_running, rate_limit: grouplimits.go).
	GroupChanges []GroupChange `json:"group_changes,omitempty"`
	// Changes are in key order, one per job of the file, plus the
	// deletions (--prune).
	Changes []Change `json:"changes"`
	// Warnings are differences apply does not change (a group's title).
	Warnings []string `json:"warnings,omitempty"`
	// IDs are the ids of every job of the cluster known when planning, to
	// resolve children by name.
	IDs map[Key]int64 `json:"-"`
}

// Count returns how many changes have action a.
func (p *Plan) Count(a Action) int {
	n := 0
	for _, c := range p.Changes {
		if c.Action == a {
			n++
		}
	}
	return n
}

// Empty reports whether applying the plan would change nothing.
func (p *Plan) Empty() bool {
	return len(p.NewGroups) == 0 && len(p.GroupChanges) == 0 && p.Count(Unchanged) == len(p.Changes)
}

// MakePlan compares the file with the cluster's groups and jobs (every job
// the caller can read) and returns what to create, update and, with prune,
// delete: only jobs of the file's groups are deleted. A job's group must
// exist or be declared in the file, and every child must be a job of the
// file or of the cluster.
func MakePlan(name string, f *File, groups []apiv1.Group, current []apiv1.Job, prune bool) (*Plan, error) {
	p := &Plan{IDs: make(map[Key]int64, len(current))}
	byKey := make(map[Key]*apiv1.Job, len(current))
	names := make(map[int64]Key, len(current))
	for i := range current {
		j := &current[i]
		k := Key{Group: j.Group, Name: j.Name}
		byKey[k], names[j.ID], p.IDs[k] = j, k, j.ID
	}

	probs := &problems{file: name}
	exists := make(map[string]apiv1.Group, len(groups))
	for _, g := range groups {
		exists[g.Name] = g
	}
	declared := map[string]bool{}
	for i, g := range f.Groups {
		declared[g.Name] = true
		cur, ok := exists[g.Name]
		if !ok {
			// Its limits are checked (created with the group) as an
			// existing group's would be.
			groupLimitsDiff(probs, f.groupLines[i], fmt.Sprintf("groups[%d]", i), apiv1.Group{}, g)
			p.NewGroups = append(p.NewGroups, g)
			continue
		}
		if c := groupLimitsDiff(probs, f.groupLines[i], fmt.Sprintf("groups[%d]", i), cur, g); c != nil {
			p.GroupChanges = append(p.GroupChanges, *c)
		}
		if cur.Title != g.Title || !slices.Equal(cur.CommandHandlers, g.CommandHandlers) {
			p.Warnings = append(p.Warnings, fmt.Sprintf("%s:%d: group %s differs from the cluster's (title, command_handlers): apply does not change existing groups",
				name, f.groupLines[i], g.Name))
		}
	}
	inFile := make(map[Key]bool, len(f.Jobs))
	for i := range f.Jobs {
		inFile[f.Jobs[i].Key()] = true
	}
	for i := range f.Jobs {
		j := &f.Jobs[i]
		path := fmt.Sprintf("jobs[%d]", i)
		if _, ok := exists[j.Spec.Group]; !ok && !declared[j.Spec.Group] {
			probs.add(j.lineOf(fieldGroup), path+".group", "group %q does not exist: declare it under groups (apply creates it; admin only) or create it with \"jetjob groups create\"", j.Spec.Group)
		}
		for _, c := range j.Children {
			if _, ok := byKey[c]; !ok && !inFile[c] {
				probs.add(j.lineOf(fieldChildren), path+"."+fieldChildren, "job %s exists neither in the file nor in the cluster", c)
			}
		}
		cur, ok := byKey[j.Key()]
		if !ok {
			p.Changes = append(p.Changes, Change{Action: Create, Key: j.Key(), Job: j})
			continue
		}
		ch := Change{Action: Unchanged, Key: j.Key(), ID: cur.ID, Version: cur.Version, Job: j}
		var was *Job
		was, ch.Keep = current2file(cur, names)
		ch.Diffs = diff(was, j)
		if len(ch.Diffs) > 0 {
			ch.Action = Update
		}
		if n := len(ch.Keep); n > 0 {
			p.Warnings = append(p.Warnings, fmt.Sprintf("%s: %d child job(s) you cannot read (or deleted) are not in the file: apply keeps them", j.Key(), n))
		}
		p.Changes = append(p.Changes, ch)
	}
	if err := probs.err(); err != nil {
		return nil, err
	}
	if prune {
		scope := f.Scope()
		for k, cur := range byKey {
			if scope[k.Group] && !inFile[k] {
				p.Changes = append(p.Changes, Change{Action: Delete, Key: k, ID: cur.ID, Version: cur.Version})
			}
		}
	}
	sort.SliceStable(p.Changes, func(a, b int) bool { return p.Changes[a].Key.less(p.Changes[b].Key) })
	return p, nil
}

// lineOf is the line of a field of the job, else of the job.
func (j *Job) lineOf(field string) int {
	if l, ok := j.fieldLines[field]; ok {
		return l
	}
	return j.line
}

// current2file is a job of the cluster as a file would hold it, children
// by name, and the ids of its children no readable job has (kept: a file
// cannot name them).
func current2file(cur *apiv1.Job, names map[int64]Key) (*Job, []int64) {
	spec := cur.JobSpec
	enabled := cur.Enabled
	spec.Enabled, spec.Version, spec.ChildJobIDs = &enabled, 0, nil
	j := &Job{Spec: spec}
	var keep []int64
	for _, id := range cur.ChildJobIDs {
		k, ok := names[id]
		if !ok {
			keep = append(keep, id)
			continue
		}
		j.Children = append(j.Children, k)
	}
	sortKeys(j.Children)
	return j, keep
}

// diff lists the fields that differ between two jobs, defaults filled in.
func diff(old, new *Job) []FieldDiff {
	a, b := Normalize(old.Spec), Normalize(new.Spec)
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	var out []FieldDiff
	for _, f := range jobFields {
		x, y := va.Field(f.index), vb.Field(f.index)
		if reflect.DeepEqual(x.Interface(), y.Interface()) {
			continue
		}
		out = append(out, FieldDiff{Field: f.name, Old: render(x.Interface()), New: render(y.Interface())})
	}
	oc, nc := slices.Clone(old.Children), slices.Clone(new.Children)
	sortKeys(oc)
	sortKeys(nc)
	if !slices.Equal(oc, nc) {
		out = append(out, FieldDiff{Field: fieldChildren, Old: render(keyStrings(oc)), New: render(keyStrings(nc))})
	}
	return out
}

func keyStrings(ks []Key) []string {
	out := make([]string, 0, len(ks))
	for _, k := range ks {
		out = append(out, k.String())
	}
	return out
}

// render writes a value as JSON on one line (control characters escaped).
func render(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return string(bytes.TrimRight(b.Bytes(), "\n"))
}
