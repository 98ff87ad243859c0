// Package runs owns run storage: the in-memory planned run (Planned) that
// the planner, the wheel and dispatch pass along, and every statement that
// writes job_runs — on the path of a fire: insert planned (InsertPlanned,
// InsertManual, InsertBackfill; history imported from another scheduler,
// written finished: InsertImported), read what is still to publish (LoadShard,
// LoadOrphans, LoadScheduled), expand a broadcast (Expand), mark triggered
// or ended (Record), apply workers' events (ApplyEvents); for the API:
// cancel (Cancel, CancelBackfill), delete an edited job's planned runs
// (DeletePlanned) and a finished run a user deletes (Delete); for the questions workers ask: choose a catch-up fire
// (ChooseSuperseders); for maintenance: the day partitions (Partitions,
// CreatePartition, DropPartition, DeleteDefaultDay) and the chain counters
// (ForgetIdleChains). The callers keep their decisions, batching, locks
// and timers; the SQL that writes runs lives here, next to the rules it
// keeps, and owner_test.go fails if a statement writing job_runs or its
// partitions appears in any other package's source. Reads are not
// confined: the API's listings and search, the reports and the bench read
// job_runs where they are.
//
// # The run state machine
//
// A run's status is a wire.Status, ranked by wire.Status.Rank: 0
// SCHEDULED, 1 TRIGGERED, 2 RUNNING, 3 terminal (SUCCEEDED, FAILED,
// TIMED_OUT, CANCELLED, SKIPPED, DISCARDED, EXPIRED, LOST). A run only
// moves to a status of higher rank, so a repeated, late or reordered event
// changes nothing and a terminal run never changes. Who moves it:
//
//   - SCHEDULED (a new row): InsertPlanned (planner), InsertManual (API),
//     InsertBackfill (backfill), Expand (the parts of a broadcast), and
//     ApplyEvents (retries and child runs, in the transaction that ends their
//     cause).
//   - SKIPPED or FAILED from SCHEDULED, never published: Record (dispatch's
//     misfire policy, or a run that cannot be encoded); SKIPPED also by
//     InsertPlanned for fires the planner's misfire policy skipped.
//   - TRIGGERED: Record, deferred (below), or ApplyEvents along with the
//     event's own status.
//   - RUNNING and every terminal status a worker reports: ApplyEvents.
//   - CANCELLED from SCHEDULED, by a user through the API: Cancel (a kill
//     of a run, store.CancelRun), CancelBackfill (a cancelled backfill's
//     runs, store.CancelBackfill). A published run may still read
//     SCHEDULED (the deferred TRIGGERED write, below): it ends CANCELLED
//     all the same, and the API sends its worker the kill.
//   - No status, the row deleted: DeletePlanned, an edited, disabled or
//     deleted job's runs not yet due (DeletePlannedForPause, a paused
//     group's, keeps the retries: they wait, held.go); Delete, a terminal
//     run outside any workflow run that a user deletes (DELETE /runs/{id});
//     DropPartition and DeleteDefaultDay, days older than the retention,
//     once rolled up.
//
// The statements compare ranks in SQL with jetjob_status_rank, a function of
// migration 0001 that mirrors wire.Status.Rank; migrations are history and
// are not edited, so rank_test.go checks, against PostgreSQL, that the two
// agree for every status in wire.Statuses.
//
// Every write names a run by (id, scheduled_at): job_runs is partitioned by
// scheduled_at, and the pair takes each row straight to its one partition
// instead of probing every day's. Batches lock rows in id order (Record
// sorts, the results applier sorts), so dispatch's writes and concurrent
// appliers never deadlock.
//
// # Fencing
//
// A run planned under a shard's lease carries that lease's epoch
// (Planned.Epoch); every write this package makes for such a run is
// conditional on the writer still holding the shard at that epoch on the
// database's clock — one predicate, holds in fence.go, used by Fence (the
// first statement of a planning transaction), Record and Expand. Epoch 0
// marks a run created outside planning (manual, retry, child): unfenced,
// its Nats-Msg-Id de-duplicates a later recovery instead.
//
// The fence is for writes made on behalf of a shard, which a scheduler
// paused past its lease must not make. The other writes are made for a
// user, a worker or the whole table, by whichever scheduler serves them,
// and hold no lease to check: each says why it is safe without one.
// Cancel and CancelBackfill only move a run up to a terminal status, and
// the shard owner's writes only move a run up, so whichever commits second
// changes nothing (cancel.go). DeletePlanned runs under the job's row lock,
// which the planner's transaction holds too. ApplyEvents applies what
// workers report, monotonic by rank. ChooseSuperseders writes a trigger
// type, which no rule of the state machine reads. The partition statements run under
// maintenance's advisory lock (package retention) on days no shard plans
// any more.
//
// # Trigger batches
//
// Runs of one group due at the same instant may share one trigger message
// (Planned.Batch, job_runs.batch). Which runs share it is fixed when they
// are planned, by the one statement that writes them (InsertPlanned), and
// never changed: every later publish of a batch — dispatch's retry, a
// recovery or sweep (LoadShard, LoadOrphans read the batch back) — carries
// the batch's runs that are still SCHEDULED under the batch's Nats-Msg-Id,
// so the stream's duplicate window drops it like a re-published lone
// trigger. That is why a run of a batch is only ever published inside its
// batch's message, and why the first publish of a batch must carry every
// run of it (a later copy that holds a run the first lacked would be
// dropped, and that run lost).
//
// # The deferred TRIGGERED write
//
// This is the one full account; other comments point here. Dispatch does
// not record a run TRIGGERED when JetStream acks its trigger: it holds the
// mark for dispatch.Config.TriggeredDelay (the misfire threshold plus a
// second, 6 s by default: dispatch.DefaultTriggeredDelay) and then Record writes it
// only to a run still SCHEDULED (or moved by events that lacked the
// trigger's sequence, from an older worker, which gets the sequence
// added). The reason is row versions: most runs end within those seconds,
// and their worker's events carry the trigger's stream sequence and stored
// time, so ApplyEvents records the run triggered and ended in one row
// update (it coalesces stream_seq and triggered_at), and the held write
// finds nothing to do — a third of a run's row versions saved. The
// applier tells dispatch (dispatch.Dispatcher.Recorded), in its own
// process directly and in the others by a notice on stream.Recorded, and
// dispatch then drops the mark unsent.
//
// Meanwhile a published run reads SCHEDULED. That is safe because
// everything acting on SCHEDULED runs allows for a published one:
//
//   - recovery and the sweep (LoadShard, LoadOrphans) re-publish it under
//     the same Nats-Msg-Id, which the trigger stream's duplicate window
//     (2 min) drops;
//   - editing or disabling a job deletes only its runs not yet due
//     (DeletePlanned), never one that may be out already;
//   - a cancel (Cancel, CancelBackfill) ends it CANCELLED and the API
//     sends the kill that stops it if it is out;
//   - a fire_once question (ChooseSuperseders) counts a missed SCHEDULED
//     run as newer: it was published, or will be.
//
// A stopping dispatcher writes every mark it holds before the scheduler
// releases its leases, which fence those writes; a crashed one writes
// nothing, and the run's next shard owner re-publishes it (dropped as a
// duplicate). scheduler/pause_test.go proves the fencing by SIGSTOP-ing a
// real scheduler past its lease and auditing every row and publish.
package runs
