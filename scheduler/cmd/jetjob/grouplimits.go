package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
)

// groupsSetCmd is jetjob groups set GROUP --max-running N --rate-limit R:
// a group's cap and rate limit (docs/flow-control.md).
func (a *app) groupsSetCmd() *cobra.Command {
	var maxRunning int
	var rateLimit string
	cmd := &cobra.Command{
		Use:   "set GROUP [--max-running N] [--rate-limit COUNT/PERIOD]",
		Short: "Set a group's cap (runs at once across its workers) and rate limit (starts per period)",
		Long: `Set a group's limits; a flag left out keeps its value.

--max-running N: at most N runs of the group execute at once, across all its
workers (0 to 1000; 0: no cap). Runs beyond it wait at their worker, the
higher priority first, then in fire order.
--rate-limit COUNT/PERIOD: at most COUNT starts of the group's runs per
PERIOD ("100/1m", "5/1s"; "" lifts the limit).`,
		Example: `  jetjob groups set billing --max-running 5 --rate-limit 100/1m
  jetjob groups set billing --rate-limit ""`,
		Args: needArgs("GROUP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var req apiv1.GroupLimitsRequest
			if cmd.Flags().Changed("max-running") {
				req.MaxRunning = &maxRunning
			}
			if cmd.Flags().Changed("rate-limit") {
				req.RateLimit = &rateLimit
			}
			if req.MaxRunning == nil && req.RateLimit == nil {
				return usagef("nothing to set: give --max-running, --rate-limit or both")
			}
			return show(a, cmd, func(c *client.Client, ctx context.Context) (*apiv1.Group, error) {
				return c.SetGroupLimits(ctx, args[0], req)
			}, func(w io.Writer, g *apiv1.Group) error {
				var k kv
				k.add("Name", g.Name)
				k.add("Max running", capText(g.MaxRunning))
				k.add("Rate limit", orNone(g.RateLimit))
				return k.write(w)
			})
		},
	}
	cmd.Flags().IntVar(&maxRunning, "max-running", 0, "runs of the group at once across its workers (0: no cap)")
	cmd.Flags().StringVar(&rateLimit, "rate-limit", "", `starts per period, COUNT/PERIOD ("100/1m"; "": none)`)
	return cmd
}

// groupsQueueCmd is jetjob groups queue GROUP.
func (a *app) groupsQueueCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "queue GROUP",
		Short: "Show what holds and waits for a group's cap, its rate limit's state, and its runs in flight",
		Args:  needArgs("GROUP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return show(a, cmd, func(c *client.Client, ctx context.Context) (*apiv1.GroupQueue, error) {
				return c.GroupQueue(ctx, args[0])
			}, writeGroupQueue)
		},
	}
}

// writeGroupQueue prints a queue view: the limits and their use, then
// the holders, the waiters in the order they get a slot, and the runs in
// flight.
func writeGroupQueue(w io.Writer, q *apiv1.GroupQueue) error {
	var k kv
	k.add("Group", q.Group)
	if q.MaxRunning > 0 {
		k.add("Max running", fmt.Sprintf("%d of %d held, %d waiting", len(q.Running), q.MaxRunning, len(q.Waiting)))
	} else {
		k.add("Max running", fmt.Sprintf("none (%d held, %d waiting)", len(q.Running), len(q.Waiting)))
	}
	if r := q.Rate; r != nil {
		next := "now"
		if r.Available == 0 {
			next = fmtTime(r.NextFreeAt) + " (in " + r.NextFreeAt.Sub(q.At).Round(time.Millisecond).String() + ")"
		}
		k.add("Rate limit", fmt.Sprintf("%s: %d may start now; next start free %s", q.RateLimit, r.Available, next))
	} else {
		k.add("Rate limit", "none")
	}
	if q.LocksError != "" {
		k.add("Locks", "unreadable: "+q.LocksError)
	}
	if err := k.write(w); err != nil {
		return err
	}
	section := func(title string, rs []apiv1.QueuedRun, prio bool) error {
		fmt.Fprintf(w, "\n%s (%d)\n", title, len(rs))
		if len(rs) == 0 {
			return nil
		}
		cols := []string{"RUN", "JOB", "STATUS", "WORKER", "FIRE TIME"}
		if prio {
			cols = append(cols, "PRIORITY")
		}
		t := newTable(w, cols...)
		for _, r := range rs {
			job := "-"
			if r.JobID != 0 {
				job = r.JobName + " (" + strconv.FormatInt(r.JobID, 10) + ")"
			}
			row := []string{strconv.FormatInt(r.RunID, 10), job, orDash(r.Status), orDash(r.WorkerID), fmtTimePtr(r.FireAt)}
			if prio {
				row = append(row, strconv.Itoa(r.Priority))
			}
			t.row(row...)
		}
		return t.flush()
	}
	if err := section("Running (holding a slot)", q.Running, false); err != nil {
		return err
	}
	if err := section("Waiting, in the order they start", q.Waiting, true); err != nil {
		return err
	}
	title := "In flight"
	if q.InFlightMore {
		title = "In flight, the oldest 500"
	}
	return section(title, q.InFlight, false)
}

// capText is a group's cap as the CLI shows it.
func capText(n int) string {
	if n == 0 {
		return "none"
	}
	return strconv.Itoa(n)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
