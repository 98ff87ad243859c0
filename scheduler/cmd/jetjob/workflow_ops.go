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
// nodes (workflows.go): re-running a whole run.

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
