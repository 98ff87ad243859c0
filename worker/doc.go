// Package worker is jetjob's worker SDK: a user's service registers handlers
// by name and runs them when the scheduler triggers a run of a job.
//
//	keys, err := trigsign.NewVerifier(schedulersPublicKey) // docs/operations.md, "Trigger signing"
//	w, err := worker.New(worker.Config{NATS: nc, Group: "billing", TriggerKeys: keys})
//	w.Handle("invoice", func(ctx context.Context, job *worker.Job) error {
//		job.Logger.Info("sending invoices", zap.String("params", job.Params))
//		return send(ctx, job.Params)
//	})
//	err = w.Run(ctx) // until ctx is cancelled, then a graceful stop
//
// A worker needs NATS only. It pulls triggers from three durable consumers
// on JETJOB_TRIGGERS: its group's shared queue, workers-<group>, which every
// worker of the group shares so that each trigger reaches exactly one of
// them; its own, worker-<group>-<id>, for the triggers a routing strategy
// sends to it by name; and its group's trigger batches, batches-<group>,
// messages that each carry several runs due at the same instant (one
// message costs the broker less than many), each run executed as if it had
// come alone. Each has Concurrency run slots, counted in runs, and a worker
// asks for no more triggers than it has free slots (a batch's runs beyond
// them wait for a slot here; a late trigger is judged without one, and
// waits for one if it is to run). It reports what happened on
// JETJOB_EVENTS, puts its heartbeat into JETJOB_WORKERS, holds job locks
// in JETJOB_LOCKS and watches JETJOB_KILLS (docs/protocol.md, "The
// worker's side, step by step"; docs/architecture.md, "The path of a
// fire"). It runs only triggers signed by a scheduler key it accepts
// (Config.TriggerKeys; verify.go).
//
// # Delivery guarantees
//
// A trigger is acknowledged only after the run's finished event has been
// acknowledged by JetStream, and in-progress acks are sent while the run
// lasts. A worker that dies mid-run therefore never loses a result: the
// trigger is redelivered. Run events travel in batches, each message with
// its own Nats-Msg-Id, events-<group>-<worker id>-<worker start, Unix
// ns>-<n>, so a retried publish of a batch is stored once; a second copy of
// an event (a redelivered trigger reported again) is harmless, because the
// scheduler applies events idempotently and by status rank
// (docs/protocol.md, "Headers").
//
// At most one execution of a run (one attempt of a fire) reaches a handler.
// Inside one process a run never executes twice: a delivery of a run that
// is still running here (a redelivery after a missed in-progress ack, or a
// re-published trigger) joins the running execution and is acknowledged
// with it; a delivery of a run that finished here recently is acknowledged
// without running again. Across processes the started event is the run's
// start claim: it is stored before the handler is called, and a worker that
// gets a redelivered trigger asks the schedulers whether the run had started
// (request/reply on jetjob.sched.started, started.go). A run that started
// on a worker that died ends LOST, naming that worker, and the job's retry
// policy decides whether a new attempt runs; a trigger that never started
// runs normally. Handlers see the attempt and the delivery in Job.Attempt
// and Job.Delivery.
//
// # Results
//
// A handler's returned error decides the result: nil is SUCCEEDED, an error
// FAILED with its text, a panic FAILED with the panic value. A run still going
// when its timeout expires is TIMED_OUT whatever the handler returns then: the
// timeout is part of the job's contract. A handler that ignores its cancelled
// context is waited for AbandonGrace and then abandoned: its result is
// reported without it and its goroutine is left behind (counted in Stats).
// An abandoned handler no longer holds a run slot: a few stuck handlers would
// otherwise stop the worker for good. A killed run (a kill request from the
// API, or block strategy cover_early) ends CANCELLED, and one that block
// strategy discard_later turns away ends DISCARDED.
//
// A trigger naming a handler this worker does not have ends FAILED with the
// reason and no started event, since no handler ever started. A malformed or
// invalid trigger ends FAILED when its run and job ids can be read, and is
// terminated (never redelivered) in every case.
//
// # Late triggers
//
// A trigger can reach a worker long after its fire time: workers were down
// and the stream replays the backlog, or a scheduler re-published the run
// late after a failover or a NATS outage. Just before a trigger would run,
// its lateness (now minus its scheduled time) is compared with the job's
// misfire threshold carried in the trigger (0 disables the check). Past it,
// the job's misfire policy applies:
//
//   - skip: schedule and misfire triggers are not run; the run ends EXPIRED
//     with the lateness in its message, no started event, and the trigger
//     is acknowledged (counted in Stats.ExpiredTotal). Manual, retry and
//     parent triggers always run: someone asked for them explicitly.
//   - fire_all (or no policy): every trigger runs.
//   - fire_once: only the newest missed fire of the job runs. The worker
//     asks the schedulers (request/reply on jetjob.sched.supersede) whether
//     a newer fire of the job, itself past the threshold and not SKIPPED,
//     exists; if so the trigger ends EXPIRED naming the newer run. Without
//     an answer it runs.
//
// # Stopping
//
// When Run's context is cancelled the worker stops fetching, lets running
// handlers finish for ShutdownGrace, then cancels their contexts. Runs that
// finish in time are reported and acknowledged as usual. A handler that
// returns nil after the shutdown cancelled it keeps its success (its work
// is done); one that returns an error then, or does not return, was
// interrupted by us, not failed by itself: its run ends LOST ("its worker
// stopped while it ran"), since its attempt started and must not start
// again, and the job's retry policy decides what follows. Triggers that had
// not started (waiting for their job's lock or, in a trigger batch, for a
// slot, or arriving on a pull request still open) are handed back (NAKed)
// for another worker, delayed only until this worker's open pull requests
// have expired; a batch goes back once its runs here have ended, and the
// worker that gets it runs only those that had not (the start check).
// Until its runs have ended and the job locks they left are freed (handed
// to the next waiter, or deleted), a stopping worker still answers other
// workers' questions about its runs, but no routing question: no trigger
// is sent its way.
package worker
