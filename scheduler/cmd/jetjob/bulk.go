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
	var req apiv1.BulkRequest
	cmd := &cobra.Command{
		Use:   "bulk enable|disable|trigger -l SELECTOR",
		Short: "Enable, disable or trigger every job a label selector picks (each checked and audited as if alone)",
		Example: `  jetjob jobs bulk disable -l env=prod,team=billing --note "db migration"
  jetjob jobs bulk trigger -l team=billing --group billing --max 20`,
		Args: needArgs("ACTION"),
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
	fl.StringVar(&req.Group, "group", "", "only the jobs of this group")
	fl.StringVar(&req.Note, "note", "", "with disable: why (kept as the jobs' paused note)")
	fl.IntVar(&req.Max, "max", 0, "refuse if the selector picks more jobs than this (server default 100, at most 1000)")
	return cmd
}
