package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/spf13/cobra"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
	"github.com/jetjob/jetjob/scheduler/internal/jobfile"
	"github.com/jetjob/jetjob/shared/wire"
)

// exportPage is the page size export and apply read jobs with (the API's
// largest), so a big cluster takes few requests.
const exportPage = 1000

func (a *app) exportCmd() *cobra.Command {
	var group string
	cmd := &cobra.Command{
		Use:   "export [--group G] > jobs.yaml",
		Short: "Write the jobs (and their groups) as a YAML file to keep in git",
		Long: `Write the jobs the caller can read as a YAML jobs file on standard output,
to keep in git and bring back with "jetjob apply -f".

Jobs are named by group + name, children by "group/name", never by id (ids
differ between clusters). A child the caller cannot read (another group's)
is not named: a comment on its parent counts it, and apply keeps it. Fields that hold their default are left out, and
the file is sorted (groups by name, jobs by group then name), so exporting
an unchanged cluster twice gives the same bytes. The groups (every group
the caller can read, or just --group) are declared under groups: with their
title and command_handlers. Calendars follow, one YAML document each (kind:
Calendar; with --group, the group's and the global ones). Secrets are never
written: jobs name them, and the target cluster needs them created first.
Workflows follow, one YAML document each
(kind: Workflow), their nodes naming jobs by group/name, then alert channels
(kind: AlertChannel) and rules (kind: AlertRule). A channel's URL (but an
email channel's addresses) and signing secret are never written: target_env
and secret_env name environment variables apply reads them from
(docs/alerts.md). The file is always YAML; --output does not apply.`,
		Example: `  jetjob export > jobs.yaml
  jetjob export --group billing > billing.yaml`,
		Args: needArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("group") && !wire.ValidName(group) {
				return usagef("--group %q: want a group name (1-64 of [A-Za-z0-9_-])", group)
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			data, err := exportJobs(cmd.Context(), c, group)
			if err != nil {
				return err
			}
			if data, err = exportCalendars(cmd.Context(), c, group, data); err != nil {
				return err
			}
			if data, err = exportWorkflows(cmd.Context(), c, group, data); err != nil {
				return err
			}
			if data, err = exportAlerts(cmd.Context(), c, group, data); err != nil {
				return err
			}
			_, err = a.stdout.Write(data)
			return err
		},
	}
	cmd.Flags().StringVar(&group, "group", "", "only the jobs of this group")
	return cmd
}

// exportJobs reads the groups and jobs (of one group when group is set)
// and encodes them as a jobs file.
func exportJobs(ctx context.Context, c *client.Client, group string) ([]byte, error) {
	gl, err := c.ListGroups(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading groups: %w", err)
	}
	groups := gl.Groups
	if group != "" {
		groups = nil
		for _, g := range gl.Groups {
			if g.Name == group {
				groups = append(groups, g)
			}
		}
		if len(groups) == 0 {
			return nil, fmt.Errorf("--group %s: no such group (or not readable)", group)
		}
	}
	jobs, err := allJobs(ctx, c, group)
	if err != nil {
		return nil, err
	}
	names := make(map[int64]jobfile.Key, len(jobs))
	for _, j := range jobs {
		names[j.ID] = jobfile.Key{Group: j.Group, Name: j.Name}
	}
	unnamed := map[int64]bool{}
	for _, j := range jobs {
		for _, id := range j.ChildJobIDs {
			if _, ok := names[id]; ok || unnamed[id] {
				continue
			}
			child, err := c.GetJob(ctx, id) // a child in another group
			var ae *client.APIError
			switch {
			case errors.As(err, &ae) && ae.StatusCode == http.StatusNotFound:
				// Not readable by the caller, or deleted: the file counts
				// it without naming it, and apply keeps it.
				unnamed[id] = true
				continue
			case err != nil:
				return nil, fmt.Errorf("job %s/%s: reading its child job %d: %w", j.Group, j.Name, id, err)
			}
			names[id] = jobfile.Key{Group: child.Group, Name: child.Name}
		}
	}
	f, err := jobfile.Export(groups, jobs, names)
	if err != nil {
		return nil, err
	}
	return f.Encode()
}

// allJobs reads every page of the jobs (of one group when group is set).
func allJobs(ctx context.Context, c *client.Client, group string) ([]apiv1.Job, error) {
	js, err := c.ListAllJobs(ctx, client.ListJobsOptions{Group: group, Limit: exportPage})
	if err != nil {
		return nil, fmt.Errorf("reading jobs: %w", err)
	}
	return js, nil
}
