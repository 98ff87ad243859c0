package main

import (
	"context"
	"fmt"
	"io"

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
	use, short, done := "pause", "Pause a workflow's schedule (runs started or queued go on)", "paused"
	if resume {
		use, short, done = "resume", "Resume a paused workflow's schedule", "resumed"
	}
	var note, catchUp string
	cmd := &cobra.Command{
		Use:   use + " ID",
		Short: short,
		Args:  needArgs("ID"),
		RunE: onID("workflow", func(cmd *cobra.Command, id int64) error {
			if catchUp != "" && catchUp != "none" && catchUp != "policy" {
				return usagef("--catch-up %q: want none or policy", catchUp)
			}
			return show(a, cmd, func(c *client.Client, ctx context.Context) (*apiv1.Workflow, error) {
				if resume {
					return c.ResumeWorkflow(ctx, id, apiv1.EnableRequest{CatchUp: catchUp})
				}
				return c.PauseWorkflow(ctx, id, apiv1.DisableRequest{Note: note})
			}, func(w io.Writer, wf *apiv1.Workflow) error {
				_, err := fmt.Fprintf(w, "workflow %d (%s) %s; next fire: %s\n", wf.ID, cell(wf.Name), done, fmtTimePtr(wf.NextFireAt))
				return err
			})
		}),
	}
	if resume {
		cmd.Flags().StringVar(&catchUp, "catch-up", "", "fires missed while paused: policy (replay by the misfire policy, the default) or none (resume from now)")
	} else {
		cmd.Flags().StringVar(&note, "note", "", "why the workflow is paused (shown by workflows get until it is resumed)")
	}
	return cmd
}
