package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// JobSort is an order of job listings; each ends in id, so that it is a
// total order and keyset paging neither skips nor repeats a job.
type JobSort string

const (
	SortByID       JobSort = "id"
	SortByName     JobSort = "name"
	SortByNextFire JobSort = "next_fire" // jobs without a next fire last (ascending)
	SortByUpdated  JobSort = "updated"
)

// JobSorts are the orders SearchJobs knows.
var JobSorts = []JobSort{SortByID, SortByName, SortByNextFire, SortByUpdated}

// sortExpr is the sort's key column. next_fire_at is NULL for jobs
// without a next fire, and a disabled job has none (Job.UpcomingFire):
// coalesced to infinity, they sort after the others and the keyset
// comparison stays a plain row comparison.
func (s JobSort) sortExpr() string {
	switch s {
	case SortByName:
		return "name"
	case SortByNextFire:
		return "coalesce(CASE WHEN enabled THEN next_fire_at END, 'infinity'::timestamptz)"
	case SortByUpdated:
		return "updated_at"
	}
	return ""
}

// JobKey is a job's place in a sorted listing: what the next page resumes
// after. Only the sort's field is used (and ID always); a NextFire of nil
// is "no next fire".
type JobKey struct {
	ID       int64
	Name     string
	NextFire *time.Time
	Updated  time.Time
}

// KeyOf returns j's key in any order.
func KeyOf(j Job) JobKey {
	return JobKey{ID: j.ID, Name: j.Name, NextFire: j.UpcomingFire(), Updated: j.UpdatedAt}
}

// JobFilter selects jobs for SearchJobs. Zero fields do not filter.
type JobFilter struct {
	Group string
	// Groups, when not nil, keeps only jobs of these groups (a caller's
	// readable groups; empty: none).
	Groups []string
	// Query matches a substring of the name or the description, ignoring case.
	Query        string
	Handler      string
	Enabled      *bool
	ScheduleType string
	// Labels keeps only jobs carrying every pair (a label selector).
	Labels map[string]string
	Sort   JobSort // default SortByID
	Desc   bool
	After  *JobKey
	// Before, instead of After, lists the page that ends just before the
	// key (a "previous page"); SearchJobs's "more" then says whether jobs
	// precede it.
	Before *JobKey
	// Limit is the page size (required, positive).
	Limit int
	// Kind is the kind of row listed: KindJob (also for "") or
	// KindWorkflow.
	Kind string
}

func (f *JobFilter) kind() string {
	if f.Kind == "" {
		return KindJob
	}
	return f.Kind
}

// SearchJobs returns up to f.Limit jobs matching f in its order, and
// whether more follow.
//
// The id and name orders read the primary key and jobs_name (migration
// 0008) in order, updated reads jobs_updated; next_fire sorts the
// matches (an index on next_fire_at would cost the planner's hot update
// of every job an index write). The substring search cannot use a btree
// index and filters the rows it reads.
func (s *Store) SearchJobs(ctx context.Context, f JobFilter) ([]Job, bool, error) {
	if f.Limit <= 0 {
		return nil, false, fmt.Errorf("search jobs: limit %d: want a positive page size", f.Limit)
	}
	if f.After != nil && f.Before != nil {
		return nil, false, fmt.Errorf("search jobs: after and before: give one")
	}
	var a sqlArgs
	conds, err := f.conds(&a)
	if err != nil {
		return nil, false, err
	}
	// A previous page is read backwards from its key, then turned round.
	back := f.Before != nil
	desc := f.Desc != back
	key := f.Sort.sortExpr()
	dir := ""
	if desc {
		dir = " DESC"
	}
	order := " ORDER BY id" + dir
	if key != "" {
		order = " ORDER BY " + key + dir + ", id" + dir
	}
	if k := f.After; k != nil {
		conds = append(conds, f.keyset(&a, *k, desc))
	} else if k := f.Before; k != nil {
		conds = append(conds, f.keyset(&a, *k, desc))
	}
	q := `SELECT ` + jobColumns + ` FROM jobs WHERE ` + strings.Join(conds, " AND ") + order + ` LIMIT ` + a.add(f.Limit+1)
	rows, _ := s.pool.Query(ctx, q, append([]any{pgx.QueryExecModeExec}, a...)...)
	js, more, err := pageOf(rows, f.Limit, "search jobs", func(r pgx.CollectableRow) (Job, error) { return scanJob(r) })
	if back {
		slices.Reverse(js)
	}
	return js, more, err
}

// CountJobs counts the jobs matching f (its After, Before and Limit
// ignored) and, when at is given, those that come before at in f's order:
// the place of a page starting at at, for "41-60 of 1,234".
func (s *Store) CountJobs(ctx context.Context, f JobFilter, at *JobKey) (total, before int, err error) {
	var a sqlArgs
	conds, err := f.conds(&a)
	if err != nil {
		return 0, 0, err
	}
	ahead := "0"
	if at != nil {
		ahead = "count(*) FILTER (WHERE " + f.keyset(&a, *at, !f.Desc) + ")"
	}
	q := `SELECT count(*), ` + ahead + ` FROM jobs WHERE ` + strings.Join(conds, " AND ")
	if err := s.pool.QueryRow(ctx, q, append([]any{pgx.QueryExecModeExec}, a...)...).Scan(&total, &before); err != nil {
		return 0, 0, fmt.Errorf("count jobs: %w", err)
	}
	return total, before, nil
}

// sqlArgs are a statement's arguments; add appends one and returns its
// placeholder.
type sqlArgs []any

func (a *sqlArgs) add(v any) string {
	*a = append(*a, v)
	return "$" + strconv.Itoa(len(*a))
}

// conds are f's filters as SQL conditions (without its paging place).
func (f *JobFilter) conds(a *sqlArgs) ([]string, error) {
	conds := []string{"kind = " + a.add(f.kind())}
	if f.Group != "" {
		conds = append(conds, "group_name = "+a.add(f.Group))
	}
	if f.Groups != nil {
		conds = append(conds, "group_name = ANY("+a.add(f.Groups)+")")
	}
	if f.Query != "" {
		// Matched literally: the user's % and _ are not wildcards.
		p := "%" + strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(f.Query) + "%"
		n := a.add(p)
		conds = append(conds, "(name ILIKE "+n+" OR description ILIKE "+n+")")
	}
	if f.Handler != "" {
		conds = append(conds, "handler = "+a.add(f.Handler))
	}
	if f.Enabled != nil {
		conds = append(conds, "enabled = "+a.add(*f.Enabled))
	}
	if f.ScheduleType != "" {
		conds = append(conds, "schedule_type = "+a.add(f.ScheduleType))
	}
	if len(f.Labels) > 0 {
		sel, err := json.Marshal(f.Labels)
		if err != nil {
			return nil, fmt.Errorf("search jobs: labels: %w", err)
		}
		conds = append(conds, "labels <> '{}' AND labels @> "+a.add(string(sel))+"::jsonb")
	}
	return conds, nil
}

// keyset is the condition "after k" in f's sort, read descending when desc
// (so "before k" in an ascending listing).
func (f *JobFilter) keyset(a *sqlArgs, k JobKey, desc bool) string {
	cmp := ">"
	if desc {
		cmp = "<"
	}
	key := f.Sort.sortExpr()
	if key == "" {
		return "id " + cmp + " " + a.add(k.ID)
	}
	var v any
	switch f.Sort {
	case SortByName:
		v = k.Name
	case SortByNextFire:
		v = k.NextFire
		if k.NextFire == nil {
			v = "infinity"
		}
	case SortByUpdated:
		v = k.Updated
	}
	val := a.add(v)
	if f.Sort != SortByName {
		val += "::timestamptz"
	}
	return "(" + key + ", id) " + cmp + " (" + val + ", " + a.add(k.ID) + ")"
}
