// Package e2e is jetjob's end-to-end suite: the real binaries in real
// containers (testcontainers-go), with faults injected by stopping, killing
// and restarting those containers. Run it with `make e2e` (it builds the
// images first, without any registry: deploy/e2e-images.sh).
//
// Every test starts its own cluster on its own Docker network: PostgreSQL,
// NATS (one node, or a three-node JetStream cluster with replicated streams),
// jetjob-scheduler and jetjob-worker containers. The containers reach each
// other by network alias (postgres, nats, nats-1..3, sched-1.., worker-1..),
// so a restarted container keeps its address (its host port changes: the
// test re-reads it). Every container and the network are removed by the
// test's cleanup, also when it fails; Ryuk (the reaper) is disabled because
// its image cannot be pulled here.
//
// A test drives jetjob only through its public HTTP API (scheduler/client)
// and checks the invariants of docs/architecture.md against what it can observe
// from outside: the job_runs table in PostgreSQL (read with pgx), the
// JetStream streams (read with nats.go) and the jobs' own output.
//
// # What proves that no fire ran twice
//
// The jobs of the suite are `shell` jobs of the drop-in worker whose first
// (often only) action is to append one line, "exec JOB SCHEDULED_AT RUN
// ATTEMPT HOST", to a file in a directory of the machine running the tests,
// bind-mounted into every worker container. The line is written by the job's
// own shell, synchronously, to a file outside the containers: it survives a
// worker killed right after it, and it does not depend on the worker
// reporting anything, on NATS or on PostgreSQL. The file is therefore the
// record of every execution that had a visible effect, and the suite checks:
//
//   - every fire time of every job in the observed window has exactly one
//     run (job_runs, attempt 0): no fire lost, none planned twice;
//   - each run ended in a status its misfire policy allows for that fire;
//   - every SUCCEEDED run has exactly one execution line, and a SKIPPED or
//     EXPIRED run none: a run reached a handler once, or (by its policy)
//     never;
//   - no two execution lines name the same (job, fire time), with one
//     exception no scheduler can avoid: a worker killed (SIGKILL) after the
//     job's effect but before its result was stored. Its trigger is
//     redelivered, by design, and runs again on another worker; a repeated
//     line is accepted only when every earlier execution of that run was on
//     a worker the test killed;
//   - no run is left non-terminal (SCHEDULED, TRIGGERED, RUNNING), and
//     every SUCCEEDED run has its start, end and worker recorded (both
//     come from the worker's events: a missing one is a lost result);
//   - JetStream agrees: JETJOB_TRIGGERS stored exactly one message per
//     published run, or per trigger batch for runs planned into one (its
//     last sequence equals the number of distinct stream sequences
//     recorded on runs, and a batch's runs share one: no trigger was
//     stored twice, which is what a lost de-duplication would look like), and at the end
//     JETJOB_TRIGGERS and JETJOB_EVENTS are empty, with nothing pending on
//     their consumers: every trigger was consumed and every result applied.
//
// Run log lines (JETJOB_LOGS) are checked separately (TestDropInWorker):
// they are asynchronous by design and a killed worker may lose its last
// lines, so they are evidence of output, not of executions.
package e2e
