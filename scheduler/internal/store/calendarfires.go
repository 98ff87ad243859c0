package store

import (
	"context"
	"time"

	"github.com/jetjob/jetjob/scheduler/internal/calendar"
	"github.com/jetjob/jetjob/shared/schedule"
)

// ExcludedFire is a fire of a job that one of its calendars excludes.
type ExcludedFire struct {
	At       time.Time
	Calendar string
}

// UpcomingFires is NextFires with the job's calendars applied: up to n
// fires that run, and the fires among them (before the last that runs)
// that a calendar excludes, as the planner will record them. A job
// without calendars costs what NextFires does.
func (s *Store) UpcomingFires(ctx context.Context, j Job, now time.Time, n int) ([]time.Time, []ExcludedFire, error) {
	if len(j.ExcludeCalendars) == 0 {
		times, err := s.NextFires(ctx, j, now, n)
		return times, nil, err
	}
	sched, err := j.Schedule()
	if err != nil {
		return nil, nil, err
	}
	// Walk further than n: the calendars may exclude many of them (a
	// daily job over a holiday month).
	cands, err := s.NextFires(ctx, j, now, min(n*8+64, schedule.MaxNextN))
	if err != nil {
		return nil, nil, err
	}
	sets, err := calendar.Load(ctx, s.pool, append(append([]string(nil), j.ExcludeCalendars...), j.IncludeCalendars...))
	if err != nil {
		return nil, nil, err
	}
	exclude, include := calendar.Pick(sets, j.ExcludeCalendars), calendar.Pick(sets, j.IncludeCalendars)
	var (
		run      []time.Time
		excluded []ExcludedFire
	)
	for _, t := range cands {
		if len(run) == n {
			break
		}
		// A fire's time carries its jitter; the planner judges the
		// nominal time, a jitter later on the same day unless it
		// crosses midnight (at most the jitter after it).
		if name := calendar.Judge(t, sched.LocationAt(t.Add(-j.Jitter)), exclude, include); name != "" {
			excluded = append(excluded, ExcludedFire{At: t, Calendar: name})
			continue
		}
		run = append(run, t)
	}
	return run, excluded, nil
}
