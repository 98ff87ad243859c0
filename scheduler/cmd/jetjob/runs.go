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
	return parent(&cobra.Command{
		Use:     "runs",
		Aliases: []string{"run"},
		Short:   "List and inspect the runs of jobs",
	}, a.runsListCmd(), a.runsGetCmd(), a.runsLogsCmd(), a.runsKillCmd(), a.runsDeleteCmd())
}

func (a *app) runsListCmd() *cobra.Command {
	var (
		jobArg, from, to string
		opts             client.SearchRunsOptions
	)
	cmd := &cobra.Command{
		Use:   "list [--job ID] [--group G] [--status S,...] [--trigger-type T,...] [--from TIME] [--to TIME]",
		Short: "Search runs, newest first by scheduled time",
		Long: `Search runs, newest first by scheduled time. Filters combine; --status and
--trigger-type take several values (repeated or comma separated); --from and
--to bound the scheduled time (RFC 3339, --from inclusive). Pass the printed
--cursor to read the next page.`,
		Args: needArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := optID("job", jobArg, &opts.JobID); err != nil {
				return err
			}
			for _, p := range []struct {
				flag, v string
				dst     *time.Time
			}{{"--from", from, &opts.From}, {"--to", to, &opts.To}} {
				if p.v == "" {
					continue
				}
				t, err := time.Parse(time.RFC3339Nano, p.v)
				if err != nil {
					return usagef("%s %q: want an RFC 3339 time such as 2026-11-22T00:00:00Z", p.flag, p.v)
				}
				*p.dst = t
			}
			if opts.Limit < 0 {
				return usagef("--limit %d: must not be negative", opts.Limit)
			}
			return show(a, cmd, func(c *client.Client, ctx context.Context) (*apiv1.RunList, error) {
				return c.SearchRuns(ctx, opts)
			}, func(w io.Writer, list *apiv1.RunList) error {
				t := newTable(w, "ID", "JOB", "TRIGGER", "STATUS", "SCHEDULED", "STARTED", "DURATION", "WORKER", "MESSAGE")
				for _, r := range list.Runs {
					t.row(strconv.FormatInt(r.ID, 10), strconv.FormatInt(r.JobID, 10), r.TriggerType, r.Status,
						fmtTime(r.ScheduledAt), fmtTimePtr(r.StartedAt), runDuration(&r), r.WorkerID,
						truncate(cell(r.Message), messageWidth))
				}
				if err := t.flush(); err != nil {
					return err
				}
				if list.Cursor != "" {
					fmt.Fprintf(a.stderr, "more runs: pass --cursor %s for the next page\n", list.Cursor)
				}
				return nil
			})
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&jobArg, "job", "", "only runs of this job id")
	fs.StringVar(&opts.Group, "group", "", "only runs of this group")
	fs.StringSliceVar(&opts.Statuses, "status", nil, "only runs in these statuses (SUCCEEDED, FAILED, ...)")
	fs.StringSliceVar(&opts.TriggerTypes, "trigger-type", nil, "only runs of these trigger types (schedule, misfire, manual, retry, parent, backfill, workflow, import)")
	fs.StringVar(&from, "from", "", "only runs scheduled at or after this time (RFC 3339)")
	fs.StringVar(&to, "to", "", "only runs scheduled before this time (RFC 3339)")
	fs.IntVar(&opts.Limit, "limit", 0, "page size, up to 1000 (server default 50 when 0)")
	fs.StringVar(&opts.Cursor, "cursor", "", "read the page after this cursor (printed with the previous page)")
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
	k.add("Attempt", strconv.Itoa(r.Attempt+1)) // counted from 1; the API's attempt is 0 for a first run
	retryOf := "-"
	if r.RetryOf != nil {
		retryOf = strconv.FormatInt(*r.RetryOf, 10)
	}
	k.add("Retry of", retryOf)
	switch {
	case r.ShardTotal > 1 && r.MapFire != nil:
		k.add("Shard", fmt.Sprintf("%d/%d (map/reduce part; its handler's shard index %d)", r.ShardIndex+1, r.ShardTotal, r.ShardIndex))
	case r.ShardTotal > 1:
		k.add("Shard", fmt.Sprintf("%d/%d (broadcast part; its handler's shard index %d)", r.ShardIndex+1, r.ShardTotal, r.ShardIndex))
	default:
		k.add("Shard", "- (not a broadcast)")
	}
	if f := r.MapFire; f != nil {
		k.add("Map fire", mapFireText(r.ID, *f, r.ShardTotal))
	}
	k.add("Worker", r.WorkerID)
	if r.Priority != nil {
		k.add("Priority", strconv.Itoa(*r.Priority)+" (the run's own)")
	}
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

// mapFireText says what a run of a map/reduce fire is to the run that
// mapped, fire (docs/flow-control.md, "Map/reduce").
func mapFireText(id, fire int64, shardTotal int) string {
	switch {
	case fire == id:
		return "this run (it mapped its items into parts)"
	case shardTotal > 0:
		return strconv.FormatInt(fire, 10) + " (a part of what it mapped)"
	}
	return strconv.FormatInt(fire, 10) + " (reduces the outputs of what it mapped)"
}

func (a *app) runsGetCmd() *cobra.Command {
	return a.runCmd("get ID", "Show every field of a run", (*client.Client).GetRun)
}

func (a *app) runsKillCmd() *cobra.Command {
	return a.runCmd("kill ID", "Stop a run wherever it runs; it ends CANCELLED", (*client.Client).KillRun)
}

// runsDeleteCmd is `jetjob runs delete ID...`: one run through DELETE
// /runs/{id}, several through the bulk endpoint (one request, each run
// checked and audited as alone). A run refused (not ended, of a workflow
// run, not the caller's) is reported and the command fails, after the
// others are deleted.
func (a *app) runsDeleteCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "delete ID...",
		Short: "Delete ended runs with their log lines (up to 500 at once)",
		Long: `Delete ended runs with their log lines. A run not ended yet is refused (kill it
first), and so is a run of a workflow run (its node runs, and the workflow's
own run): a workflow run's record needs them. Each deletion is audited
(run.delete). The daily statistics of days already rolled up keep counting a
deleted run; today's (computed live) no longer do.`,
		Example: `  jetjob runs delete 4711
  jetjob runs delete 4711 4712 4715`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("missing argument ID")
			}
			if len(args) > maxBulkRuns {
				return usagef("%d runs: at most %d at once", len(args), maxBulkRuns)
			}
			ids := make([]int64, 0, len(args))
			for _, arg := range args {
				id, err := parseID("run", arg)
				if err != nil {
					return err
				}
				ids = append(ids, id)
			}
			if len(ids) == 1 {
				return a.done(cmd, func(c *client.Client, ctx context.Context) error { return c.DeleteRun(ctx, ids[0]) },
					"run %d deleted", ids[0])
			}
			var failed int
			err := show(a, cmd, func(c *client.Client, ctx context.Context) (*apiv1.RunsBulkResult, error) {
				res, err := c.BulkRuns(ctx, apiv1.BulkDelete, ids)
				if err == nil {
					failed = res.Failed
				}
				return res, err
			}, func(w io.Writer, res *apiv1.RunsBulkResult) error {
				t := newTable(w, "RUN", "RESULT")
				for _, it := range res.Results {
					result := "deleted"
					if it.Error != "" {
						result = "refused: " + it.Error
					}
					t.row(strconv.FormatInt(it.ID, 10), result)
				}
				t.row("", fmt.Sprintf("%d of %d deleted", res.Done, res.Done+res.Failed))
				return t.flush()
			})
			if err == nil && failed > 0 {
				return fmt.Errorf("%d of %d runs not deleted", failed, len(ids))
			}
			return err
		},
	}
}

// maxBulkRuns is the API's bound on the runs of one bulk request.
const maxBulkRuns = 500

// runCmd is a command that takes a run id, calls the API and shows the run.
func (a *app) runCmd(use, short string, call func(*client.Client, context.Context, int64) (*apiv1.Run, error)) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  needArgs("ID"),
		RunE:  showID(a, "run", call, detail(runDetail)),
	}
}
