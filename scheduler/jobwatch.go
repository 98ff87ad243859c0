package scheduler

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/backoff"
	"github.com/jetjob/jetjob/internal/logging"
	"github.com/jetjob/jetjob/scheduler/internal/runs"
	"github.com/jetjob/jetjob/scheduler/internal/store"
)

// watchJobs drops from the wheel the runs of jobs that were edited,
// disabled or deleted: the store deletes their planned rows and sends the
// job id on store.JobsChannel in the same transaction. On the same
// connection it follows the groups' flow changes (store.GroupsChannel):
// each one reads the paused and draining groups again, whose waiting runs
// dispatch holds back (pausedGroups). After each (re)connection the wheel
// is checked against the table and the paused groups are read, since
// notifications sent while disconnected are lost. It reconnects until ctx
// ends: listenJobs returns only on an error. A group found active again
// makes the planner sweep at its next pass (Planner.SweepSoon): the sweep
// hands over the runs that waited for the resume.
func (w *wiring) watchJobs(ctx context.Context) error {
	return w.s.watchJobs(ctx, w.planner.SweepSoon)
}

func (s *Scheduler) watchJobs(ctx context.Context, resumed func()) error {
	_ = backoff.Retry(ctx, backoff.Policy{
		Backoff: backoff.Backoff{Initial: 100 * time.Millisecond, Max: 5 * time.Second},
		OnRetry: func(_ int, _ time.Duration, err error) {
			s.log.Warn("job change listener failed; reconnecting", zap.Error(err))
		},
	}, func(ctx context.Context) error { return s.listenJobs(ctx, resumed) })
	return nil
}

func (s *Scheduler) listenJobs(ctx context.Context, resumed func()) error {
	conn, err := s.deps.Pool.Acquire(ctx)
	if err != nil {
		return err
	}
	// The connection keeps LISTEN state: never return it to the pool.
	pc := conn.Hijack()
	defer pc.Close(context.WithoutCancel(ctx))
	for _, ch := range []string{store.JobsChannel, store.GroupsChannel} {
		if _, err := pc.Exec(ctx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
			return fmt.Errorf("listen on %s: %w", ch, err)
		}
	}
	if err := s.readPaused(ctx, pc, resumed); err != nil {
		return err
	}
	if err := s.revalidateWheel(ctx, pc); err != nil {
		return err
	}
	for {
		n, err := pc.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if n.Channel == store.GroupsChannel {
			if err := s.readPaused(ctx, pc, resumed); err != nil {
				return err
			}
			continue
		}
		id, cutoff, err := store.ParseJobsNotification(n.Payload)
		if err != nil {
			s.log.Warn("ignoring malformed job notification", zap.Error(err))
			continue
		}
		if k := s.wheel.Remove(func(r *runs.Planned) bool {
			return r.JobID == id && r.ScheduledAt.After(cutoff)
		}); k > 0 {
			s.log.Info("job changed; dropped its planned runs from memory", logging.Job(id), zap.Int("runs", k))
		}
	}
}

// revalidateWheel drops held runs whose rows are no longer SCHEDULED.
func (s *Scheduler) revalidateWheel(ctx context.Context, conn *pgx.Conn) error {
	ids := s.wheel.IDs()
	if len(ids) == 0 {
		return nil
	}
	still, err := runs.StillScheduled(ctx, conn, ids)
	if err != nil {
		return fmt.Errorf("revalidate wheel: %w", err)
	}
	keep := make(map[int64]bool, len(still))
	for _, id := range still {
		keep[id] = true
	}
	held := make(map[int64]bool, len(ids))
	for _, id := range ids {
		held[id] = true
	}
	// Only drop runs that were held when the check was made; runs added
	// since are newer than the query and stay.
	s.wheel.Remove(func(r *runs.Planned) bool { return held[r.RunID] && !keep[r.RunID] })
	return nil
}

// readPaused reads the groups that are not active into the copy dispatch
// holds runs back by (Scheduler.pausedGroups), and calls resumed when a
// group of the last copy is no longer in it.
func (s *Scheduler) readPaused(ctx context.Context, conn *pgx.Conn, resumed func()) error {
	p, err := runs.LoadPaused(ctx, conn)
	if err != nil {
		return err
	}
	old := s.pausedGroups()
	s.paused.Store(&p)
	if len(old) != len(p) || len(p) > 0 {
		s.log.Info("groups paused or draining", zap.Int("groups", len(p)))
	}
	for g := range old {
		if _, still := p[g]; !still {
			resumed()
			break
		}
	}
	return nil
}

// pausedGroups is the last read of the groups that are not active: nil
// before the first read, and empty while none is, so that dispatch's
// check costs nothing then.
func (s *Scheduler) pausedGroups() runs.Paused {
	if p := s.paused.Load(); p != nil {
		return *p
	}
	return nil
}
