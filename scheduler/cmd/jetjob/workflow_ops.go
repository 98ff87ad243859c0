package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
)

// The operations on workflows beyond their definitions and one run's
// nodes (workflows.go): re-running a whole run; pausing, resuming and
// backfilling a workflow (its schedule is its jobs row's: the same
// operations as a job's, through the workflow's endpoints).

// workflowsRerunCmd is `workflows rerun RUN_ID`.
func (a *app) workflowsRerunCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "rerun RUN_ID",
		Short: "Run a workflow again with the params of one of its runs (a new run; the old one stays)",
		Long: `Start a new run of the workflow of RUN_ID with that run's params, as a manual
trigger: the workflow's overlap policy applies, every node runs again, and the
new run's message names the run it re-runs. The old run is left as it is. To
run only the failed nodes of an ended run again, use "workflows retry".`,
		Args: needArgs("RUN_ID"),
		RunE: onID("workflow run", func(cmd *cobra.Command, id int64) error {
			return show(a, cmd, func(c *client.Client, ctx context.Context) (*apiv1.Run, error) {
				return c.RerunWorkflowRun(ctx, id)
			}, func(w io.Writer, r *apiv1.Run) error {
				_, err := fmt.Fprintf(w, "workflow run %d started, re-running %d: jetjob workflows run %d\n", r.ID, id, r.ID)
				return err
			})
		}),
	}
}

// workflowsSwitchCmd is `workflows pause ID [--note N]` or `workflows
// resume ID [--catch-up none|policy]`.
func (a *app) workflowsSwitchCmd(resume bool) *cobra.Command {
	sw := scheduleSwitch[apiv1.Workflow]{
		kind: "workflow", on: "resume", off: "pause", onDone: "resumed", offDone: "paused",
		onShort:     "Resume a paused workflow's schedule",
		offShort:    "Pause a workflow's schedule (runs started or queued go on)",
		catchUpHelp: "fires missed while paused: policy (replay by the misfire policy, the default) or none (resume from now)",
		noteHelp:    "why the workflow is paused (shown by workflows get until it is resumed)",
		enable:      (*client.Client).ResumeWorkflow,
		disable:     (*client.Client).PauseWorkflow,
		line:        func(wf *apiv1.Workflow) (int64, string, *time.Time) { return wf.ID, wf.Name, wf.NextFireAt },
	}
	return sw.cmd(a, resume)
}
