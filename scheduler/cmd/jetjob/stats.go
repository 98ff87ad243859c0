package main

import (
	"context"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
)

func (a *app) statsCmd() *cobra.Command {
	var (
		jobArg string
		opts   client.StatsOptions
	)
	cmd := &cobra.Command{
		Use:   "stats [--from DAY] [--to DAY] [--job ID] [--group G]",
		Short: "The daily report: runs per day, job and status, with durations",
		Long: `The daily report: runs per UTC day (of their scheduled time), job and status,
with duration percentiles in milliseconds (of runs with a start and an end).
Finished days come from the rollup, which is kept after retention drops the
runs themselves; today (and any day not rolled up yet) is computed live
(SOURCE column). Days are YYYY-MM-DD; the default is the last seven days.`,
		Args: needArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := optID("job", jobArg, &opts.JobID); err != nil {
				return err
			}
			return show(a, cmd, func(c *client.Client, ctx context.Context) (*apiv1.Stats, error) {
				return c.Stats(ctx, opts)
			}, func(w io.Writer, st *apiv1.Stats) error {
				t := newTable(w, "DAY", "JOB", "GROUP", "STATUS", "RUNS", "P50 MS", "P95 MS", "P99 MS", "MAX MS", "SOURCE")
				for _, r := range st.Rows {
					t.row(r.Day, strconv.FormatInt(r.JobID, 10), r.Group, r.Status, strconv.FormatInt(r.Runs, 10),
						fmtMS(r.P50MS), fmtMS(r.P95MS), fmtMS(r.P99MS), fmtMS(r.MaxMS), r.Source)
				}
				return t.flush()
			})
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&opts.From, "from", "", "first day, YYYY-MM-DD (UTC)")
	fs.StringVar(&opts.To, "to", "", "last day, YYYY-MM-DD (UTC), default today")
	fs.StringVar(&jobArg, "job", "", "only this job id")
	fs.StringVar(&opts.Group, "group", "", "only this group")
	return cmd
}

// fmtMS writes a duration in milliseconds, "-" when there is none.
func fmtMS(v *float64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatFloat(*v, 'f', 0, 64)
}
