package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/shared/wire"
)

// triggerFlags are the flags of a trigger, of a job or of a workflow.
type triggerFlags struct {
	params, at, delay, key string
	force                  bool
	priority               int
}

func (f *triggerFlags) add(cmd *cobra.Command, paramsHelp string) {
	cmd.Flags().StringVar(&f.params, "params", "", paramsHelp)
	cmd.Flags().StringVar(&f.at, "at", "", "run once at this time (RFC 3339, e.g. 2026-12-01T02:00:00+08:00) instead of now")
	cmd.Flags().StringVar(&f.delay, "delay", "", "run once after this long (e.g. 90s, 2h30m) instead of now")
	cmd.Flags().StringVar(&f.key, "idempotency-key", "", "a trigger repeated with this key within 24 hours returns the first one's run instead of making another")
	cmd.Flags().BoolVar(&f.force, "force", false, "run even while the group is paused or draining")
}

// addPriority adds --priority, a job trigger's own.
func (f *triggerFlags) addPriority(cmd *cobra.Command) {
	cmd.Flags().IntVar(&f.priority, "priority", 0, "this run's priority instead of the job's, -100 to 100 (higher first at a group or key cap)")
}

// request is the API request the flags ask for.
func (f *triggerFlags) request(cmd *cobra.Command) (apiv1.TriggerRequest, error) {
	req := apiv1.TriggerRequest{Delay: f.delay, IdempotencyKey: f.key, Force: f.force}
	if cmd.Flags().Changed("params") {
		req.Params = &f.params
	}
	if cmd.Flags().Changed("priority") {
		if f.priority < wire.PriorityMin || f.priority > wire.PriorityMax {
			return req, usagef("--priority %d: want %d to %d", f.priority, wire.PriorityMin, wire.PriorityMax)
		}
		req.Priority = &f.priority
	}
	if f.at != "" {
		at, err := time.Parse(time.RFC3339, f.at)
		if err != nil {
			return req, usagef("--at %q: want an RFC 3339 time such as 2026-12-01T02:00:00Z", f.at)
		}
		req.At = &at
	}
	return req, nil
}
