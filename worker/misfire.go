package worker

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/jetjob/jetjob/shared/stream"

	"github.com/jetjob/jetjob/shared/policy"
	"github.com/jetjob/jetjob/shared/wire"
)

// expired decides whether a claimed trigger must not run because it reached
// this worker later than its job's misfire threshold, and if so returns the
// message its EXPIRED result carries. now is when the handler would start;
// lateness is now - ScheduledAt.
//
// How each misfire policy treats a late trigger:
//
//   - skip: the trigger expires, unless its type is manual, retry or parent
//     (a user or a failed run asked for it explicitly, whatever the time).
//   - fire_all, or none given: it runs.
//   - fire_once: it runs unless a newer fire of the same job was already
//     published; a worker cannot see the group's backlog, so it asks the
//     schedulers (superseded, below), who see every run in PostgreSQL.
//
// A threshold of 0 disables the check, and a trigger exactly at its
// threshold is still on time. Policies this build does not know run, so
// that a newer scheduler's policy never silently drops fires.
func expired(trig *wire.Trigger, workerID string, now time.Time) (bool, string) {
	late, threshold, ok := lateness(trig, now)
	if !ok || policy.Misfire(trig.MisfirePolicy) != policy.MisfireSkip {
		return false, ""
	}
	return true, fmt.Sprintf("trigger reached worker %s %s after its fire time (misfire threshold %s, policy %s): not run",
		workerID, roundLateness(late), threshold, policy.MisfireSkip)
}

// lateness returns how late a scheduled trigger is at now and its
// threshold, and whether it is past the threshold. Manual, retry and
// parent triggers are never late: someone asked for them, whatever the time.
func lateness(trig *wire.Trigger, now time.Time) (late, threshold time.Duration, ok bool) {
	if trig.MisfireThresholdMS <= 0 {
		return 0, 0, false
	}
	switch trig.TriggerType {
	case wire.TriggerSchedule, wire.TriggerMisfire:
	default:
		return 0, 0, false
	}
	threshold = time.Duration(trig.MisfireThresholdMS) * time.Millisecond
	late = now.Sub(trig.ScheduledAt)
	return late, threshold, late > threshold
}

// supersedeTimeout bounds the question to the schedulers. Without an
// answer (no scheduler up, PostgreSQL down) the trigger runs: fire_once
// errs towards running a fire, never towards losing the newest.
const supersedeTimeout = 2 * time.Second

// superseded applies fire_once to a late trigger: when a newer missed fire
// of the same job has already been published, only that one runs and this
// one ends EXPIRED with the returned message. This is what makes a backlog
// replayed after a worker outage run once per job, not once per missed fire.
func (w *Worker) superseded(ctx context.Context, trig *wire.Trigger, log *zap.Logger) (bool, string) {
	late, threshold, ok := lateness(trig, time.Now())
	if !ok || policy.Misfire(trig.MisfirePolicy) != policy.MisfireFireOnce {
		return false, ""
	}
	// Only a newer fire that is itself missed (late) supersedes this one:
	// the newest missed fire is the catch-up, and on-time fires run.
	now := time.Now()
	data, err := wire.EncodeControl(&wire.SupersedeRequest{RunID: trig.RunID, JobID: trig.JobID, Cutoff: now.Add(-threshold).UTC()})
	if err != nil {
		log.Error("supersede request cannot be encoded; running the trigger", zap.Error(err))
		return false, ""
	}
	rctx, cancel := context.WithTimeout(ctx, supersedeTimeout)
	defer cancel()
	msg, err := w.cfg.NATS.RequestWithContext(rctx, stream.Supersede, data)
	if err != nil {
		log.Warn("no scheduler answered whether a late fire_once trigger is superseded; running it", zap.Error(err))
		return false, ""
	}
	var reply wire.SupersedeReply
	if err := wire.DecodeControl(msg.Data, &reply); err != nil || reply.Error != "" {
		log.Warn("schedulers could not say whether a late fire_once trigger is superseded; running it",
			zap.Error(err), zap.String("reply_error", reply.Error))
		return false, ""
	}
	if reply.By == 0 {
		return false, ""
	}
	return true, fmt.Sprintf("trigger reached worker %s %s after its fire time (misfire threshold %s, policy %s): not run, the newer run %d of the job runs instead",
		w.cfg.ID, roundLateness(late), threshold, policy.MisfireFireOnce, reply.By)
}

// roundLateness keeps a lateness readable: tenths of a second from one
// second on, milliseconds below (a threshold may be that small).
func roundLateness(d time.Duration) time.Duration {
	if d >= time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}
