package main

import (
	"context"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
)

// jobsBulkCmd is `jetjob jobs bulk enable|disable|trigger -l SELECTOR`.
func (a *app) jobsBulkCmd() *cobra.Command {
	return a.bulkCmd("job", `  jetjob jobs bulk disable -l env=prod,team=billing --note "db migration"
  jetjob jobs bulk trigger -l team=billing --group billing --max 20`)
}

// workflowsBulkCmd is the same for workflows.
func (a *app) workflowsBulkCmd() *cobra.Command {
	return a.bulkCmd("workflow", `  jetjob workflows bulk disable -l team=billing --note "month-end freeze"`)
}

// bulkCmd acts on the jobs or workflows (kind) a selector picks.
func (a *app) bulkCmd(kind, example string) *cobra.Command {
	req := apiv1.BulkRequest{Kind: kind}
	cmd := &cobra.Command{
		Use:     "bulk enable|disable|trigger -l SELECTOR",
		Short:   "Enable, disable or trigger every " + kind + " a label selector picks (each checked and audited as if alone)",
		Example: example,
		Args:    needArgs("ACTION"),
		RunE: func(cmd *cobra.Command, args []string) error {
			req.Action = args[0]
			if req.Selector == "" {
				return usagef("-l/--selector is required, e.g. -l env=prod,team=billing")
			}
			return show(a, cmd, func(c *client.Client, ctx context.Context) (*apiv1.BulkResult, error) {
				return c.BulkJobs(ctx, req)
			}, func(w io.Writer, res *apiv1.BulkResult) error {
				t := newTable(w, "ID", "GROUP", "NAME", "RESULT")
				for _, it := range res.Items {
					result := "done"
					switch {
					case !it.OK:
						result = "refused: " + it.Error
					case it.RunID != 0:
						result = "run " + strconv.FormatInt(it.RunID, 10)
					}
					t.row(strconv.FormatInt(it.JobID, 10), it.Group, it.Name, result)
				}
				t.row("", "", "", strconv.Itoa(res.Done)+" of "+strconv.Itoa(res.Matched)+" done")
				return t.flush()
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&req.Selector, "selector", "l", "", "label selector: key=value pairs, comma-separated")
	fl.StringVar(&req.Group, "group", "", "only the "+kind+"s of this group")
	fl.StringVar(&req.Note, "note", "", "with disable: why (kept as the "+kind+"s' paused note)")
	fl.IntVar(&req.Max, "max", 0, "refuse if the selector picks more "+kind+"s than this (server default 100, at most 1000)")
	return cmd
}
