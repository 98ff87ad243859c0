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

// workersCmd lists by itself: the listing is all there is to ask about
// workers, so "jetjob workers" should not answer with its help. "list"
// stays for scripts that name it.
func (a *app) workersCmd() *cobra.Command {
	var group string
	list := func(cmd *cobra.Command, _ []string) error {
		return show(a, cmd, func(c *client.Client, ctx context.Context) (*apiv1.WorkerList, error) {
			return c.ListWorkers(ctx, group)
		}, writeWorkers)
	}
	const long = `List each group's capacity and backlog, then the live workers by group and id.

The first table puts a group's live workers and run slots beside the triggers
waiting for them in JetStream, sampled by the scheduler every few seconds:
  PENDING         triggers no worker has taken yet
  OLDEST PENDING  how long the oldest of them has waited; past the misfire
                  threshold (5s by default) triggers reach workers late
  IN FLIGHT       triggers taken and not finished (running, held by a block
                  strategy, or on a dead worker awaiting redelivery)
  REDELIVERED     of those, the ones delivered more than once`
	cmd := &cobra.Command{
		Use:     "workers [--group G]",
		Aliases: []string{"worker"},
		Short:   "List each group's backlog and the live workers",
		Long:    long,
		Args:    needArgs(),
		RunE:    list,
	}
	cmd.Flags().StringVar(&group, "group", "", "only this group")
	ls := &cobra.Command{
		Use:   "list [--group G]",
		Short: "The same as jetjob workers",
		Long:  long,
		Args:  needArgs(),
		RunE:  list,
	}
	ls.Flags().StringVar(&group, "group", "", "only this group")
	cmd.AddCommand(ls)
	return cmd
}

// writeWorkers prints the groups' backlog, a blank line, then the workers.
func writeWorkers(w io.Writer, l *apiv1.WorkerList) error {
	g := newTable(w, "GROUP", "WORKERS", "SLOTS", "RUNNING", "PENDING", "OLDEST PENDING", "IN FLIGHT", "REDELIVERED", "SAMPLED")
	for _, b := range l.Groups {
		g.row(b.Group, strconv.Itoa(b.LiveWorkers), strconv.Itoa(b.Slots), strconv.Itoa(b.Running),
			strconv.FormatInt(b.Pending, 10), fmtAge(b.OldestPendingSeconds),
			strconv.FormatInt(b.InFlight, 10), strconv.FormatInt(b.Redelivered, 10), ago(b.SampledAt))
	}
	if err := g.flush(); err != nil {
		return err
	}
	if _, err := fmt.Fprintln(w); err != nil {
		return err
	}
	t := newTable(w, "GROUP", "ID", "HOST", "PID", "VERSION", "HANDLERS", "RUNNING", "LAST BEAT")
	for _, wk := range l.Workers {
		t.row(wk.Group, wk.ID, wk.Host, strconv.Itoa(wk.PID), wk.Version, fmt.Sprint(wk.Handlers),
			fmt.Sprintf("%d/%d", len(wk.Running), wk.Capacity), ago(&wk.BeatAt))
	}
	return t.flush()
}

// fmtAge writes a wait in seconds to a tenth of a second; none is "-".
func fmtAge(secs float64) string {
	if secs <= 0 {
		return "-"
	}
	return time.Duration(secs * float64(time.Second)).Round(100 * time.Millisecond).String()
}

// ago writes how long ago t was, to the second; unknown is "-".
func ago(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return max(time.Since(*t), 0).Round(time.Second).String() + " ago"
}
