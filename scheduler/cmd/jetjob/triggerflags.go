package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// triggerFlags are the flags of a trigger, of a job or of a workflow.
type triggerFlags struct {
	params, at, delay, key string
	force                  bool
}

func (f *triggerFlags) add(cmd *cobra.Command, paramsHelp string) {
	cmd.Flags().StringVar(&f.params, "params", "", paramsHelp)
	cmd.Flags().StringVar(&f.at, "at", "", "run once at this time (RFC 3339, e.g. 2026-12-01T02:00:00+08:00) instead of now")
	cmd.Flags().StringVar(&f.delay, "delay", "", "run once after this long (e.g. 90s, 2h30m) instead of now")
	cmd.Flags().StringVar(&f.key, "idempotency-key", "", "a trigger repeated with this key within 24 hours returns the first one's run instead of making another")
	cmd.Flags().BoolVar(&f.force, "force", false, "run even while the group is paused or draining")
}

// request is the API request the flags ask for.
func (f *triggerFlags) request(cmd *cobra.Command) (apiv1.TriggerRequest, error) {
	req := apiv1.TriggerRequest{Delay: f.delay, IdempotencyKey: f.key, Force: f.force}
	if cmd.Flags().Changed("params") {
		req.Params = &f.params
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
