// Package workflow is what a workflow is and how one of its runs advances,
// without I/O: the graph of nodes and edges, its validation, and Advance,
// a pure function from what is known of a run's nodes to what happens
// next. The results applier calls it in the transaction that records a
// node's end, so that advancing the graph is exactly as durable, and as
// exactly-once, as the end it follows from (docs/workflows.md).
//
// # The model
//
// A workflow's nodes each run a job. An edge a → b carries a condition:
// success (the default), failure or always. A node's join is all (the
// default) or any:
//
//   - An edge is met when its source settled the way it asks: success by
//     a node that succeeded (or was bypassed: disabled, or skipped by an
//     operator), failure by a node that failed, always by a node that
//     settled in any way, skipped included (a clean-up step runs whatever
//     happened before it).
//   - An edge is dead when its source settled another way, or was
//     cancelled: it can never be met.
//   - A node with join all starts when every incoming edge is met and is
//     skipped as soon as one is dead; with join any it starts when one is
//     met and is skipped when all are dead. A node with no incoming edge
//     starts with the run.
//
// A node skipped because of its inputs is recorded SKIPPED with the edge
// that was dead, and its own edges are then evaluated as those of a
// skipped node. A disabled node is recorded SKIPPED too, but passes
// through: its edges behave as if it succeeded.
//
// A run ends when every node has settled: CANCELLED if a node was
// cancelled, FAILED if a node failed that no failure edge leaves (the
// failure was not handled), SUCCEEDED otherwise.
//
// # Operations
//
// Retry re-runs what failed, was cancelled, or was skipped because of
// either, keeping what succeeded and its outputs. MarkSucceeded and Bypass
// settle a node by hand (an operator unblocking a run), and re-open what
// was skipped because of how it had settled before. Cancel settles every
// node still pending and names the running ones to kill. Each returns the
// new state; Advance then says what starts.
package workflow
