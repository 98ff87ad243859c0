package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

func (a *app) runsLogsCmd() *cobra.Command {
	var (
		follow bool
		from   uint64
		limit  int
	)
	cmd := &cobra.Command{
		Use:   "logs RUN_ID",
		Short: "Print a run's log lines; --follow tails them until the run ends",
		Args:  needArgs("RUN_ID"),
		RunE: onID("run", func(cmd *cobra.Command, id int64) error {
			if limit < 0 {
				return usagef("--limit %d: must not be negative", limit)
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			print := func(l apiv1.LogLine) error { return a.printLogLine(l) }
			if follow {
				return c.FollowRunLogs(cmd.Context(), id, from, print)
			}
			for {
				page, err := c.RunLogs(cmd.Context(), id, from, limit)
				if err != nil {
					return err
				}
				for _, l := range page.Lines {
					if err := print(l); err != nil {
						return err
					}
				}
				if len(page.Lines) == 0 || page.Next == from {
					return nil
				}
				from = page.Next
			}
		}),
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing lines as they arrive, until the run has ended")
	cmd.Flags().Uint64Var(&from, "from", 0, "start at this cursor (a line's cursor + 1 reads on after it)")
	cmd.Flags().IntVar(&limit, "limit", 1000, "lines per request")
	return cmd
}

// printLogLine prints one line: time, level and message, or the JSON
// document with -o json (one per line, for tools).
func (a *app) printLogLine(l apiv1.LogLine) error {
	if a.output == outputJSON {
		b, err := json.Marshal(l)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(a.stdout, "%s\n", b)
		return err
	}
	_, err := fmt.Fprintf(a.stdout, "%s %-5s %s\n", fmtTime(l.At), l.Level, cell(l.Msg))
	return err
}
