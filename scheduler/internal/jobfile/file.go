// Package jobfile keeps jobs as files in git: the YAML document that
// `jetjob export` writes and `jetjob apply` reads, and the plan that brings
// a cluster to what such a file says.
//
// A file names jobs by group + name, never by numeric id: ids differ from
// one cluster to the next, so a file exported from one cluster applies to
// another. Child jobs are written the same way ("group/name"). A child the
// exporter cannot read (another group's, linked by someone who could
// trigger it) cannot be named without telling what the exporter may not
// know: it is left out of the file, with a comment counting it, and apply
// keeps such children of a job as they are (package refs: a link kept
// unchanged is not re-checked, so keeping it needs no right to its target).
//
// The fields of a job are apiv1.JobSpec's, under their JSON names, found by
// reflection: a field added to JobSpec is exported, read, compared and
// applied without a change here. Only the fields that are not what a user
// writes are handled by hand: child_job_ids (written as children) and
// version (the optimistic lock, taken from the cluster when planning).
package jobfile

import (
	"fmt"
	"strings"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// The header every file carries, so that a later format can be told apart.
const (
	APIVersion = "jetjob/v1"
	Kind       = "Jobs"
)

// Key names a job the same way in every cluster.
type Key struct {
	Group, Name string
}

// String is "group/name"; a group name holds no "/", so the first one
// splits it again (ParseKey).
func (k Key) String() string { return k.Group + "/" + k.Name }

// MarshalText lets a Key be a JSON string ("group/name").
func (k Key) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// ParseKey reads "group/name".
func ParseKey(s string) (Key, error) {
	group, name, ok := strings.Cut(s, "/")
	if !ok || group == "" || name == "" {
		return Key{}, fmt.Errorf("%q: want group/name", s)
	}
	return Key{Group: group, Name: name}, nil
}

// less orders keys by group, then name: the order of a file and of a plan.
func (k Key) less(o Key) bool {
	if k.Group != o.Group {
		return k.Group < o.Group
	}
	return k.Name < o.Name
}

// File is a parsed jobs file.
type File struct {
	// Groups are the executor groups the file declares: apply creates the
	// missing ones. Their names, with the groups of the jobs, are the
	// file's scope: --prune deletes only there.
	Groups []apiv1.Group
	Jobs   []Job

	// lines remembers where each group and job starts, for messages.
	groupLines []int
}

// Job is one job of a file.
type Job struct {
	// Spec holds every field of the job except its links: Spec.ChildJobIDs
	// and Spec.Version are always empty (ids mean nothing in a file).
	Spec apiv1.JobSpec
	// Children are the jobs triggered when a run of this one succeeds.
	Children []Key
	// Hidden counts the children Export could not name (not readable by
	// the exporter, or deleted): a file never holds them, and apply keeps
	// them. Encode notes them in a comment; Parse leaves it 0.
	Hidden int

	// line is where the job starts in the file (0 when not read from
	// one); fieldLines where each of its fields is, by name.
	line       int
	fieldLines map[string]int
}

// Key is the job's group + name.
func (j *Job) Key() Key { return Key{Group: j.Spec.Group, Name: j.Spec.Name} }

// Scope is the set of groups the file speaks for: those it declares and
// those of its jobs. --prune deletes only jobs of these groups.
func (f *File) Scope() map[string]bool {
	s := map[string]bool{}
	for _, g := range f.Groups {
		s[g.Name] = true
	}
	for i := range f.Jobs {
		s[f.Jobs[i].Spec.Group] = true
	}
	return s
}
