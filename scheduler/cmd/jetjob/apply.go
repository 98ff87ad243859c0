package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
	"github.com/jetjob/jetjob/scheduler/internal/jobfile"
)

// maxJobsFile bounds a jobs file read into memory (a job's params are at
// most 64 KiB; this holds hundreds of such jobs).
const maxJobsFile = 64 << 20

func (a *app) applyCmd() *cobra.Command {
	var (
		file          string
		dryRun, prune bool
	)
	cmd := &cobra.Command{
		Use:   "apply -f jobs.yaml [--dry-run] [--prune]",
		Short: "Make the cluster's jobs what a YAML jobs file says (see export)",
		Long: `Read a jobs file (as "jetjob export" writes it), compare it with the
cluster's jobs by group + name, print the plan, then apply it:

  + group/name                  created
  ~ group/name  field: old → new  updated (one line per changed field)
  - group/name                  deleted (only with --prune)

The file is checked strictly before anything is sent: an unknown field, a
value of the wrong type, a job defined twice or a child that exists neither
in the file nor in the cluster is an error naming the line and the field.
Groups declared under groups: that the cluster lacks are created (which
needs an admin); of existing groups only the limits are changed
(max_running, rate_limit: "~ group"; a declared group without them has
none), never the title, handlers or pause. Jobs are created first,
without their children, then updated, then linked to their children, then
(--prune) deleted: --prune deletes only jobs of the groups the file mentions.
Calendars (documents of kind: Calendar) are created or replaced by name
before the jobs that name them ("+ calendar", "~ calendar"); never pruned.
Workflows (documents of kind: Workflow after the jobs, as export writes
them) are applied last, created or replaced by group and name ("+ workflow",
"~ workflow" in the plan); they are never pruned. Alert channels and rules
(kind: AlertChannel, AlertRule) follow, channels first, created or updated
by group and name ("+ channel", "~ rule"); a channel's credentials come from
the environment variables its target_env and secret_env name (unset: the
stored ones stay). They are never pruned.

Each update sends the job's version read when planning: if someone changed
the job in between, the server refuses it (409), apply reports the conflict,
goes on with the other jobs and exits with status 1; run it again to see the
new plan. Applying the same file twice changes nothing the second time.

Exit status: 0 when applied or nothing to do, 1 on an invalid file, a
conflict or an API error, 2 on a misused command line.`,
		Example: `  jetjob export --group billing > billing.yaml
  jetjob apply -f billing.yaml --dry-run
  jetjob apply -f billing.yaml --prune`,
		Args: needArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if strings.TrimSpace(file) == "" {
				return usagef("missing required flag -f (the jobs file, - for stdin)")
			}
			name, data, err := a.readJobsFile(file)
			if err != nil {
				return err
			}
			data, alertsIn, err := splitAlerts(name, data)
			if err != nil {
				return err
			}
			data, calsIn, err := splitCalendars(name, data)
			if err != nil {
				return err
			}
			jobsDoc, wfs, err := splitWorkflows(name, data)
			if err != nil {
				return err
			}
			if jobsDoc == nil {
				jobsDoc = fmt.Appendf(nil, "apiVersion: %s\nkind: %s\n", jobfile.APIVersion, jobfile.Kind)
			}
			f, err := jobfile.Parse(name, jobsDoc)
			if err != nil {
				return err
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			cchanges, err := planCalendars(cmd.Context(), c, calsIn)
			if err != nil {
				return err
			}
			plan, err := planApply(cmd.Context(), c, name, f, prune)
			if err != nil {
				return err
			}
			wchanges, err := planWorkflows(cmd.Context(), c, wfs)
			if err != nil {
				return err
			}
			achanges, err := planAlerts(cmd.Context(), c, alertsIn)
			if err != nil {
				return err
			}
			empty := plan.Empty() && !slices.ContainsFunc(wchanges, func(w workflowChange) bool { return w.Action != "unchanged" }) &&
				!slices.ContainsFunc(achanges, func(a alertChange) bool { return a.Action != "unchanged" }) &&
				!slices.ContainsFunc(cchanges, func(c calendarChange) bool { return c.Action != "unchanged" })
			doc := any(plan)
			if len(wfs) > 0 || len(achanges) > 0 || len(cchanges) > 0 {
				doc = struct {
					*jobfile.Plan
					Calendars []calendarChange `json:"calendars,omitempty"`
					Workflows []workflowChange `json:"workflows,omitempty"`
					Alerts    []alertChange    `json:"alerts,omitempty"`
				}{plan, cchanges, wchanges, achanges}
			}
			if a.output == outputJSON {
				if dryRun || empty {
					return writeJSON(a.stdout, doc)
				}
			} else {
				if err := writeCalendarPlan(a.stdout, cchanges); err != nil {
					return err
				}
				if err := writeWorkflowPlan(a.stdout, wchanges); err != nil {
					return err
				}
				if err := writeAlertPlan(a.stdout, achanges); err != nil {
					return err
				}
				if err := plan.Write(a.stdout); err != nil {
					return err
				}
			}
			if dryRun || empty {
				return nil
			}
			out := a.stdout
			if a.output == outputJSON {
				out = a.stderr
			}
			// Calendars first: the jobs and workflows name them.
			if err := executeCalendars(cmd.Context(), c, out, cchanges); err != nil {
				return err
			}
			if !plan.Empty() {
				if err := a.executePlan(cmd.Context(), c, plan); err != nil {
					return err
				}
			}
			if err := executeWorkflows(cmd.Context(), c, out, wchanges); err != nil {
				return err
			}
			return executeAlerts(cmd.Context(), c, out, achanges)
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "the jobs file (- for stdin) (required)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print the plan, change nothing")
	cmd.Flags().BoolVar(&prune, "prune", false, "delete the jobs of the file's groups that the file does not name")
	return cmd
}

// readJobsFile reads the file named by -f, or stdin for "-".
func (a *app) readJobsFile(path string) (name string, data []byte, err error) {
	var r io.Reader = a.stdin
	name = "<stdin>"
	if path != "-" {
		fh, err := os.Open(path)
		if err != nil {
			return "", nil, fmt.Errorf("reading -f: %w", err)
		}
		defer fh.Close()
		r, name = fh, path
	}
	data, err = io.ReadAll(io.LimitReader(r, maxJobsFile+1))
	if err != nil {
		return "", nil, fmt.Errorf("reading %s: %w", name, err)
	}
	if len(data) > maxJobsFile {
		return "", nil, fmt.Errorf("reading %s: larger than %d MiB", name, maxJobsFile>>20)
	}
	return name, data, nil
}

// writePlanLines prints the plan lines of the objects a file holds beside
// its jobs (calendars, workflows, alert channels and rules) in one form:
// "+ KIND KEY" for a create, "~ KIND KEY" for an update, nothing for an
// unchanged one. line gives a change's action, kind and key.
func writePlanLines[C any](w io.Writer, changes []C, line func(C) (action, kind, key string)) error {
	var b strings.Builder
	for _, ch := range changes {
		action, kind, key := line(ch)
		switch action {
		case "create":
			fmt.Fprintf(&b, "+ %s %s\n", kind, cell(key))
		case "update":
			fmt.Fprintf(&b, "~ %s %s\n", kind, cell(key))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// planApply reads the cluster's groups and jobs and plans the file.
func planApply(ctx context.Context, c *client.Client, name string, f *jobfile.File, prune bool) (*jobfile.Plan, error) {
	gl, err := c.ListGroups(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading groups: %w", err)
	}
	jobs, err := allJobs(ctx, c, "")
	if err != nil {
		return nil, err
	}
	return jobfile.MakePlan(name, f, gl.Groups, jobs, prune)
}

// errConflicts is returned when some updates met a concurrent change.
var errConflicts = errors.New("some jobs were changed by someone else since the plan and were not updated: run apply again to see the new plan")

// executePlan applies a plan: groups, creates (without children), updates,
// the children of the created jobs, deletes. A conflict (409) is reported
// and the other jobs go on; any other API error stops the apply there.
func (a *app) executePlan(ctx context.Context, c *client.Client, plan *jobfile.Plan) error {
	out := a.stdout
	if a.output == outputJSON {
		out = a.stderr // stdout carries the one JSON document
	}
	for _, g := range plan.NewGroups {
		if _, err := c.CreateGroup(ctx, g); err != nil {
			return fmt.Errorf("creating group %s: %w", g.Name, err)
		}
		fmt.Fprintf(out, "created group %s\n", g.Name)
	}
	for _, g := range plan.GroupChanges {
		if _, err := c.SetGroupLimits(ctx, g.Name, g.Limits); err != nil {
			return fmt.Errorf("updating group %s: %w", g.Name, err)
		}
		fmt.Fprintf(out, "updated group %s\n", g.Name)
	}
	ids := maps.Clone(plan.IDs) // plus the jobs created below
	if ids == nil {
		ids = map[jobfile.Key]int64{}
	}
	resolve := func(j *jobfile.Job) ([]int64, error) {
		var out []int64
		for _, k := range j.Children {
			id, ok := ids[k]
			if !ok {
				return nil, fmt.Errorf("job %s: child %s was not created", j.Key(), k)
			}
			out = append(out, id)
		}
		return out, nil
	}
	// created is a new job whose children are linked once every job exists.
	type created struct {
		job  *apiv1.Job
		file *jobfile.Job
	}
	var (
		conflicts []string
		linkLater []created
		counts    = map[jobfile.Action]int{}
	)
	for _, ch := range plan.Changes {
		if ch.Action != jobfile.Create {
			continue
		}
		spec := jobfile.Normalize(ch.Job.Spec)
		job, err := c.CreateJob(ctx, spec)
		if err != nil {
			return fmt.Errorf("creating job %s: %w", ch.Key, err)
		}
		ids[ch.Key] = job.ID
		counts[jobfile.Create]++
		fmt.Fprintf(out, "created %s (id %d)\n", safeKey(ch.Key), job.ID)
		if len(ch.Job.Children) > 0 {
			linkLater = append(linkLater, created{job: job, file: ch.Job})
		}
	}
	for _, ch := range plan.Changes {
		if ch.Action != jobfile.Update {
			continue
		}
		spec := jobfile.Normalize(ch.Job.Spec)
		children, err := resolve(ch.Job)
		if err != nil {
			return err
		}
		// The children the file cannot name go back as they are: the
		// server keeps an unchanged link (see package refs).
		spec.ChildJobIDs, spec.Version = append(children, ch.Keep...), ch.Version
		job, err := c.UpdateJob(ctx, ch.ID, spec)
		if now, ok := versionConflict(err); ok {
			conflicts = append(conflicts, ch.Key.String())
			fmt.Fprintf(a.stderr, "conflict: %s was changed by someone else since the plan (version %d, now %d): not updated\n",
				safeKey(ch.Key), ch.Version, now)
			continue
		}
		if err != nil {
			return fmt.Errorf("updating job %s: %w", ch.Key, err)
		}
		counts[jobfile.Update]++
		fmt.Fprintf(out, "updated %s (version %d → %d)\n", safeKey(ch.Key), ch.Version, job.Version)
	}
	for _, l := range linkLater {
		key := l.file.Key()
		spec := jobfile.Normalize(l.file.Spec)
		children, err := resolve(l.file)
		if err != nil {
			return err
		}
		spec.ChildJobIDs, spec.Version = children, l.job.Version
		if _, err := c.UpdateJob(ctx, l.job.ID, spec); err != nil {
			return fmt.Errorf("linking job %s to its children: %w", key, err)
		}
		fmt.Fprintf(out, "linked %s to %d child job(s)\n", safeKey(key), len(children))
	}
	for _, ch := range plan.Changes {
		if ch.Action != jobfile.Delete {
			continue
		}
		if err := c.DeleteJob(ctx, ch.ID); err != nil {
			return fmt.Errorf("deleting job %s: %w", ch.Key, err)
		}
		counts[jobfile.Delete]++
		fmt.Fprintf(out, "deleted %s\n", safeKey(ch.Key))
	}
	fmt.Fprintf(out, "Applied: %d created, %d updated, %d deleted.\n", counts[jobfile.Create], counts[jobfile.Update], counts[jobfile.Delete])
	if a.output == outputJSON {
		if err := writeJSON(a.stdout, plan); err != nil {
			return err
		}
	}
	if len(conflicts) > 0 {
		return fmt.Errorf("%w (%s)", errConflicts, strings.Join(conflicts, ", "))
	}
	return nil
}

// safeKey is a job's key fit for a terminal line.
func safeKey(k jobfile.Key) string { return cell(k.String()) }
