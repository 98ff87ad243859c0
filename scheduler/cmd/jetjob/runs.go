package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
	"github.com/spf13/cobra"
)

func (a *app) runsCmd() *cobra.Command {
	cmd := parent(&cobra.Command{
		Use:     "runs",
		Aliases: []string{"run"},
		Short:   "List and inspect the runs of jobs",
	})
	cmd.AddCommand(a.runsListCmd(), a.runsGetCmd(), a.runsLogsCmd(), a.runsKillCmd())
	return cmd
}

func (a *app) runsListCmd() *cobra.Command {
	var (
		jobArg string
		opts   client.ListRunsOptions
	)
	cmd := &cobra.Command{
		Use:   "list --job ID",
		Short: "List the runs of a job, newest first",
		Args:  needArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if jobArg == "" {
				return usagef("missing required flag --job")
			}
			jobID, err := parseID("job", jobArg)
			if err != nil {
				return err
			}
			if opts.Limit < 0 {
				return usagef("--limit %d: must not be negative", opts.Limit)
			}
			if opts.Before < 0 {
				return usagef("--before %d: must not be negative", opts.Before)
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			list, err := c.ListRuns(cmd.Context(), jobID, opts)
			if err != nil {
				return err
			}
			return a.emit(list, func(w io.Writer) error {
				t := newTable(w, "ID", "JOB", "TRIGGER", "STATUS", "SCHEDULED", "STARTED", "DURATION", "WORKER", "MESSAGE")
				for _, r := range list.Runs {
					t.row(strconv.FormatInt(r.ID, 10), strconv.FormatInt(r.JobID, 10), r.TriggerType, r.Status,
						fmtTime(r.ScheduledAt), fmtTimePtr(r.StartedAt), runDuration(&r), r.WorkerID,
						truncate(cell(r.Message), messageWidth))
				}
				if err := t.flush(); err != nil {
					return err
				}
				if list.Next != 0 {
					fmt.Fprintf(a.stderr, "more runs: pass --before %d for the next page\n", list.Next)
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&jobArg, "job", "", "job id (required)")
	cmd.Flags().IntVar(&opts.Limit, "limit", 0, "page size (server default when 0)")
	cmd.Flags().Int64Var(&opts.Before, "before", 0, "list runs older than this run id (the next page)")
	return cmd
}

// runDuration is finished - started, or "-" while either is unknown.
func runDuration(r *apiv1.Run) string {
	if r.StartedAt == nil || r.FinishedAt == nil {
		return "-"
	}
	return r.FinishedAt.Sub(*r.StartedAt).Round(time.Millisecond).String()
}

func runDetail(r *apiv1.Run) *kv {
	var k kv
	k.add("ID", strconv.FormatInt(r.ID, 10))
	k.add("Job", strconv.FormatInt(r.JobID, 10))
	k.add("Group", r.Group)
	k.add("Trigger", r.TriggerType)
	k.add("Status", r.Status)
	k.add("Attempt", strconv.Itoa(r.Attempt))
	retryOf := "-"
	if r.RetryOf != nil {
		retryOf = strconv.FormatInt(*r.RetryOf, 10)
	}
	k.add("Retry of", retryOf)
	k.add("Shard", fmt.Sprintf("%d/%d", r.ShardIndex, r.ShardTotal))
	k.add("Worker", r.WorkerID)
	k.add("Scheduled", fmtTime(r.ScheduledAt))
	k.add("Triggered", fmtTimePtr(r.TriggeredAt))
	k.add("Started", fmtTimePtr(r.StartedAt))
	k.add("Finished", fmtTimePtr(r.FinishedAt))
	k.add("Duration", runDuration(r))
	seq := "-"
	if r.StreamSeq != nil {
		seq = strconv.FormatUint(*r.StreamSeq, 10)
	}
	k.add("Stream seq", seq)
	k.add("Params", r.Params)
	k.add("Message", r.Message)
	return &k
}

func (a *app) runsGetCmd() *cobra.Command {
	return a.runCmd("get ID", "Show every field of a run", (*client.Client).GetRun)
}

func (a *app) runsKillCmd() *cobra.Command {
	return a.runCmd("kill ID", "Stop a run wherever it runs; it ends CANCELLED", (*client.Client).KillRun)
}

// runCmd is a command that takes a run id, calls the API and shows the run.
func (a *app) runCmd(use, short string, call func(*client.Client, context.Context, int64) (*apiv1.Run, error)) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  needArgs("ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseID("run", args[0])
			if err != nil {
				return err
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			run, err := call(c, cmd.Context(), id)
			if err != nil {
				return err
			}
			return a.emit(run, func(w io.Writer) error { return runDetail(run).write(w) })
		},
	}
}
