// Package wfengine runs workflows on the path of a fire (docs/workflows.md,
// "How it runs"): package workflow decides, this package reads and writes
// what the decisions are about.
//
//   - A workflow's fire is a run of its jobs row (kind workflow). Dispatch
//     does not publish it: Start, in the transaction that moves the run out
//     of SCHEDULED (fenced by the shard's lease for a planned fire),
//     applies the overlap policy against the workflow's other runs and
//     creates the workflow run, whose id is that run's, and its root node
//     runs.
//   - Node runs are ordinary runs (trigger type workflow) keyed by
//     (workflow run, node, attempt, item) in workflow_node_runs: a second
//     insert of a key is a no-op.
//   - Advance runs in the results applier's transaction that records node
//     runs' final ends: it locks each workflow run's row, folds the ends
//     into the run's state (a JSON column), calls workflow.Advance, creates
//     the node runs to start (their params rendered from the templates
//     now) and ends the run when every node has settled. A replayed or
//     redelivered event finds its run already final and never reaches
//     here; a crash before commit leaves the event to be applied again.
//   - The operations (Cancel, Retry, MarkSucceeded, Skip) and the timeout
//     sweep take the same locks and call the same step.
//
// Locks are taken in one order everywhere: the workflows row (a
// workflow's definition), then its runs' rows by id, then job_runs rows.
// The applier holds the rows of the runs it applies before it gets here;
// a cover_early start that cancels a SCHEDULED node run of an older run
// can meet it in a deadlock, which PostgreSQL breaks and both retry.
package wfengine
