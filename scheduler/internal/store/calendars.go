package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/scheduler/internal/calendar"
	"github.com/jetjob/jetjob/scheduler/internal/pgerr"
	"github.com/jetjob/jetjob/scheduler/internal/refs"
)

// Calendars (package calendar): named sets of days that jobs exclude from
// their fires or include back. Every change records an audit row in its
// transaction. A calendar a job names cannot be deleted: the job would
// silently fire on the days it excluded.

// Calendar is a stored calendar; Group "" is global.
type Calendar struct {
	Name        string
	Group       string
	Description string
	Days        calendar.Days
	Version     int64
	CreatedBy   string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

const calendarColumns = `name, COALESCE(group_name, ''), description, days, version, created_by, created_at, updated_at`

func scanCalendar(row pgx.Row) (Calendar, error) {
	var c Calendar
	var days []byte
	if err := row.Scan(&c.Name, &c.Group, &c.Description, &days, &c.Version, &c.CreatedBy, &c.CreatedAt, &c.UpdatedAt); err != nil {
		return c, err
	}
	return c, json.Unmarshal(days, &c.Days)
}

func calendarTarget(name string) string { return "calendar:" + name }

// GetCalendar returns one calendar.
func (s *Store) GetCalendar(ctx context.Context, name string) (Calendar, error) {
	c, err := scanCalendar(s.pool.QueryRow(ctx, `SELECT `+calendarColumns+` FROM calendars WHERE name = $1`, name))
	if errors.Is(err, pgx.ErrNoRows) {
		return c, fmt.Errorf("calendar %s: %w", name, ErrNotFound)
	}
	return c, err
}

// ListCalendars returns the global calendars and those of groups (all of
// them when all), by name.
func (s *Store) ListCalendars(ctx context.Context, all bool, groups []string) ([]Calendar, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+calendarColumns+` FROM calendars
		WHERE $1 OR group_name IS NULL OR group_name = ANY($2::text[]) ORDER BY name`, all, groups)
	cs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Calendar, error) { return scanCalendar(r) })
	if err != nil {
		return nil, fmt.Errorf("list calendars: %w", err)
	}
	return cs, nil
}

// PutCalendar creates the calendar c.Name or replaces its days and
// description (its group cannot change: the jobs naming it were checked
// against it). It records calendar.create or calendar.update by a.
func (s *Store) PutCalendar(ctx context.Context, a Actor, c Calendar) (out Calendar, created bool, err error) {
	days, err := json.Marshal(c.Days)
	if err != nil {
		return out, false, err
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		cur, err := scanCalendar(tx.QueryRow(ctx, `SELECT `+calendarColumns+` FROM calendars WHERE name = $1 FOR UPDATE`, c.Name))
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			created = true
			out, err = scanCalendar(tx.QueryRow(ctx, `INSERT INTO calendars (name, group_name, description, days, created_by)
				VALUES ($1, NULLIF($2, ''), $3, $4, $5) RETURNING `+calendarColumns, c.Name, c.Group, c.Description, days, a.Name))
			if pgerr.ForeignKey(err) {
				return fmt.Errorf("group %q: %w", c.Group, ErrNotFound)
			}
			if err != nil {
				return err
			}
			return writeAudit(ctx, tx, a, "calendar.create", calendarTarget(c.Name), out.Group, nil, out)
		case err != nil:
			return err
		case cur.Group != c.Group:
			return fmt.Errorf("calendar %s belongs to %s: its group cannot change (the jobs naming it were checked against it); create another: %w",
				c.Name, orGlobal(cur.Group), ErrInvalid)
		}
		out, err = scanCalendar(tx.QueryRow(ctx, `UPDATE calendars SET description = $2, days = $3, version = version + 1,
			updated_at = now() WHERE name = $1 RETURNING `+calendarColumns, c.Name, c.Description, days))
		if err != nil {
			return err
		}
		return writeAudit(ctx, tx, a, "calendar.update", calendarTarget(c.Name), out.Group, cur, out)
	})
	if err != nil {
		return out, false, fmt.Errorf("put calendar %s: %w", c.Name, err)
	}
	return out, created, nil
}

// DeleteCalendar removes a calendar no job names (else ErrConflict, naming
// some of the jobs), recording calendar.delete by a.
func (s *Store) DeleteCalendar(ctx context.Context, a Actor, name string) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		cur, err := scanCalendar(tx.QueryRow(ctx, `SELECT `+calendarColumns+` FROM calendars WHERE name = $1 FOR UPDATE`, name))
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("calendar %s: %w", name, ErrNotFound)
		}
		if err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, `SELECT id FROM jobs WHERE exclude_calendars || include_calendars @> ARRAY[$1::text]
			AND (exclude_calendars <> '{}' OR include_calendars <> '{}') ORDER BY id LIMIT 10`, name)
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		if len(ids) > 0 {
			return fmt.Errorf("calendar %s is named by job %v: remove it from them first: %w", name, ids, ErrConflict)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM calendars WHERE name = $1`, name); err != nil {
			return err
		}
		return writeAudit(ctx, tx, a, "calendar.delete", calendarTarget(name), cur.Group, cur, nil)
	})
	if err != nil {
		return fmt.Errorf("delete calendar %s: %w", name, err)
	}
	return nil
}

// CalendarGroup is the group of a calendar ("" for a global one).
func (s *Store) CalendarGroup(ctx context.Context, name string) (string, error) {
	var g string
	err := s.pool.QueryRow(ctx, `SELECT COALESCE(group_name, '') FROM calendars WHERE name = $1`, name).Scan(&g)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("calendar %s: %w", name, ErrNotFound)
	}
	return g, err
}

// checkCalendars decides whether job j may name its calendars
// (refs.CheckCalendars), reading them FOR SHARE so that none is deleted or
// changed before the job's write commits.
func checkCalendars(ctx context.Context, tx pgx.Tx, j *Job) error {
	names := append(append([]string(nil), j.ExcludeCalendars...), j.IncludeCalendars...)
	if len(names) == 0 {
		return nil
	}
	rows, _ := tx.Query(ctx, `SELECT name, COALESCE(group_name, '') FROM calendars WHERE name = ANY($1::text[]) FOR SHARE`, names)
	found, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (refs.Calendar, error) {
		var c refs.Calendar
		return c, r.Scan(&c.Name, &c.Group)
	})
	if err != nil {
		return fmt.Errorf("read calendars: %w", err)
	}
	return errors.Join(refs.CheckCalendars(j.Group, "exclude_calendars", j.ExcludeCalendars, found),
		refs.CheckCalendars(j.Group, "include_calendars", j.IncludeCalendars, found))
}

func orGlobal(g string) string {
	if g == "" {
		return "every group (global)"
	}
	return "group " + g
}
