package store

import (
	"context"
	"encoding/json"
	"fmt"
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
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	conds := []string{"kind = " + arg(f.kind())}
	if f.Group != "" {
		conds = append(conds, "group_name = "+arg(f.Group))
	}
	if f.Groups != nil {
		conds = append(conds, "group_name = ANY("+arg(f.Groups)+")")
	}
	if f.Query != "" {
		// Matched literally: the user's % and _ are not wildcards.
		p := "%" + strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(f.Query) + "%"
		n := arg(p)
		conds = append(conds, "(name ILIKE "+n+" OR description ILIKE "+n+")")
	}
	if f.Handler != "" {
		conds = append(conds, "handler = "+arg(f.Handler))
	}
	if f.Enabled != nil {
		conds = append(conds, "enabled = "+arg(*f.Enabled))
	}
	if f.ScheduleType != "" {
		conds = append(conds, "schedule_type = "+arg(f.ScheduleType))
	}
	if len(f.Labels) > 0 {
		sel, err := json.Marshal(f.Labels)
		if err != nil {
			return nil, false, fmt.Errorf("search jobs: labels: %w", err)
		}
		conds = append(conds, "labels <> '{}' AND labels @> "+arg(string(sel))+"::jsonb")
	}
	key := f.Sort.sortExpr()
	dir, cmp := "", ">"
	if f.Desc {
		dir, cmp = " DESC", "<"
	}
	order := " ORDER BY id" + dir
	if key != "" {
		order = " ORDER BY " + key + dir + ", id" + dir
	}
	if a := f.After; a != nil {
		if key == "" {
			conds = append(conds, "id "+cmp+" "+arg(a.ID))
		} else {
			var v any
			switch f.Sort {
			case SortByName:
				v = a.Name
			case SortByNextFire:
				v = a.NextFire
				if a.NextFire == nil {
					v = "infinity"
				}
			case SortByUpdated:
				v = a.Updated
			}
			val := arg(v)
			if f.Sort != SortByName {
				val += "::timestamptz"
			}
			conds = append(conds, "("+key+", id) "+cmp+" ("+val+", "+arg(a.ID)+")")
		}
	}
	q := `SELECT ` + jobColumns + ` FROM jobs WHERE ` + strings.Join(conds, " AND ") + order + ` LIMIT ` + arg(f.Limit+1)
	rows, _ := s.pool.Query(ctx, q, append([]any{pgx.QueryExecModeExec}, args...)...)
	return pageOf(rows, f.Limit, "search jobs", func(r pgx.CollectableRow) (Job, error) { return scanJob(r) })
}
