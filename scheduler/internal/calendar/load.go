package calendar

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Querier is a pool or a transaction.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Load reads and compiles the calendars of names. A name without a
// calendar is left out of the map: a job keeps naming a calendar only
// while it exists (deleting a named one is refused), so a missing one is a
// race with nothing to judge by.
func Load(ctx context.Context, q Querier, names []string) (map[string]*Set, error) {
	out := make(map[string]*Set, len(names))
	if len(names) == 0 {
		return out, nil
	}
	rows, _ := q.Query(ctx, `SELECT name, days FROM calendars WHERE name = ANY($1::text[])`, names)
	var (
		name string
		raw  []byte
	)
	_, err := pgx.ForEachRow(rows, []any{&name, &raw}, func() error {
		var d Days
		if err := json.Unmarshal(raw, &d); err != nil {
			return fmt.Errorf("calendar %s: %w", name, err)
		}
		s, err := d.Compile()
		if err != nil {
			return fmt.Errorf("calendar %s: %w", name, err)
		}
		out[name] = s
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load calendars: %w", err)
	}
	return out, nil
}

// Pick returns the calendars of names found in sets, in names' order.
func Pick(sets map[string]*Set, names []string) []Named {
	var out []Named
	for _, n := range names {
		if s, ok := sets[n]; ok {
			out = append(out, Named{Name: n, Set: s})
		}
	}
	return out
}
