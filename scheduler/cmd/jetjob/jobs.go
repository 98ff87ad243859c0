package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
	"github.com/jetjob/jetjob/scheduler/internal/labels"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func (a *app) jobsCmd() *cobra.Command {
	return parent(&cobra.Command{
		Use:     "jobs",
		Aliases: []string{"job"},
		Short:   "Create, update, list, inspect, enable, disable, delete and trigger jobs",
	},
		a.jobsCreateCmd(),
		a.jobsUpdateCmd(),
		a.jobsListCmd(),
		a.jobsGetCmd(),
		a.jobsSwitchCmd(true),
		a.jobsSwitchCmd(false),
		a.jobsDeleteCmd(),
		a.jobsTriggerCmd(),
		a.jobsNextCmd(),
		a.jobsHistoryCmd(),
		a.jobsBackfillCmd(),
		a.jobsBackfillsCmd(),
		a.jobsBackfillOpCmd(false),
		a.jobsBackfillOpCmd(true),
		a.jobsBulkCmd(),
	)
}

func (a *app) jobsCreateCmd() *cobra.Command {
	var f jobFlags
	cmd := &cobra.Command{
		Use:   "create --group G --name N --handler H [schedule flag] [flags]",
		Short: "Create a job",
		Long: `Create a job. At most one schedule flag may be given:

  --cron EXPR      cron expression (seconds field optional, "@every 10s" too), see --tz
  --quartz EXPR    Quartz cron as xxl-job writes it ("0 15 10 ? * 6L"), see --tz
  --every DUR      fixed rate: a fire every DUR (fix_rate)
  --delay DUR      fixed delay: DUR after the previous run finished (fix_delay)
  --at TIME        once, at an RFC 3339 time

Without one the job has no schedule and runs only when triggered.`,
		Example: `  jetjob jobs create --group billing --name invoices --handler shell \
      --params '{"command":"make","args":["invoices"]}' --cron '0 0 2 * * *' --tz Europe/Paris
  jetjob jobs create --group ops --name cleanup --handler shell \
      --params 'find /tmp -mtime +7 -delete' --every 1h`,
		Args: needArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var missing []string
			for _, r := range []struct{ name, val string }{{"group", f.group}, {"name", f.name}, {"handler", f.handler}} {
				if strings.TrimSpace(r.val) == "" {
					missing = append(missing, "--"+r.name)
				}
			}
			if len(missing) > 0 {
				return usagef("missing required flag %s", strings.Join(missing, ", "))
			}
			if err := f.validate(cmd, a.stdin); err != nil {
				return err
			}
			spec := apiv1.JobSpec{ScheduleType: "none"}
			f.apply(cmd, &spec)
			return show(a, cmd, func(c *client.Client, ctx context.Context) (*apiv1.Job, error) {
				return c.CreateJob(ctx, spec)
			}, detail(jobDetail))
		},
	}
	f.register(cmd.Flags())
	for _, name := range []string{"group", "name", "handler"} {
		cmd.Flags().Lookup(name).Usage += " (required)"
	}
	return cmd
}

func (a *app) jobsUpdateCmd() *cobra.Command {
	var (
		f       jobFlags
		version int64
	)
	cmd := &cobra.Command{
		Use:   "update ID [flags of jobs create]",
		Short: "Change some fields of a job, keeping the others",
		Long: `Change the fields of a job that the flags name (the flags of "jobs create",
plus --no-schedule), keeping every other field as it is.

The job is read, changed and written back with the version it was read at:
if someone changed it in between, nothing is written and the command fails
(exit status 1) saying so; read it again and retry. --version pins the
version the change is based on instead (e.g. the one a script read earlier).`,
		Example: `  jetjob jobs update 7 --every 1m
  jetjob jobs update 7 --cron '0 0 3 * * *' --tz Europe/Paris --description 'nightly, later'
  jetjob jobs update 7 --params-file params.json --version 4`,
		Args: needArgs("ID"),
		RunE: onID("job", func(cmd *cobra.Command, id int64) error {
			var changes int
			cmd.LocalNonPersistentFlags().VisitAll(func(fl *pflag.Flag) {
				if fl.Changed && fl.Name != "version" {
					changes++
				}
			})
			if changes == 0 {
				return usagef("nothing to change: give at least one flag of the job (see --help)")
			}
			if cmd.Flags().Changed("version") && version <= 0 {
				return usagef("--version %d: want the job's version, a positive integer", version)
			}
			if err := f.validate(cmd, a.stdin); err != nil {
				return err
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			cur, err := c.GetJob(cmd.Context(), id)
			if err != nil {
				return err
			}
			spec := cur.JobSpec
			spec.Enabled = nil // kept as it is, unless --disabled says otherwise
			f.apply(cmd, &spec)
			spec.Version = cur.Version
			if cmd.Flags().Changed("version") {
				spec.Version = version
			}
			job, err := c.UpdateJob(cmd.Context(), id, spec)
			if now, ok := versionConflict(err); ok {
				return fmt.Errorf("job %d was changed by someone else since you read it (version %d, now %d): read it again and retry",
					id, spec.Version, now)
			}
			if err != nil {
				return err
			}
			return a.emit(job, func(w io.Writer) error { return jobDetail(job).write(w) })
		}),
	}
	f.register(cmd.Flags())
	cmd.Flags().Bool("no-schedule", false, "remove the schedule: the job runs only when triggered")
	cmd.Flags().Int64Var(&version, "version", 0, "the job version the change is based on (default: the version just read)")
	return cmd
}

func (a *app) jobsListCmd() *cobra.Command {
	var (
		opts client.ListJobsOptions
		all  bool
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List jobs (one page, or every page with --all)",
		Args:  needArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Limit < 0 {
				return usagef("--limit %d: must not be negative", opts.Limit)
			}
			return show(a, cmd, func(c *client.Client, ctx context.Context) (*apiv1.JobList, error) {
				if !all {
					return c.ListJobs(ctx, opts)
				}
				js, err := c.ListAllJobs(ctx, opts)
				if err != nil {
					return nil, err
				}
				return &apiv1.JobList{Jobs: js}, nil
			}, func(w io.Writer, list *apiv1.JobList) error {
				t := newTable(w, "ID", "GROUP", "NAME", "HANDLER", "SCHEDULE", "ENABLED", "NEXT FIRE")
				for _, j := range list.Jobs {
					t.row(strconv.FormatInt(j.ID, 10), j.Group, j.Name, j.Handler, schedule(&j.JobSpec), enabledCell(&j), fmtTimePtr(j.NextFireAt))
				}
				if err := t.flush(); err != nil {
					return err
				}
				if list.Next != 0 {
					fmt.Fprintf(a.stderr, "more jobs: pass --all to list every page\n")
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&opts.Group, "group", "", "only the jobs of this group")
	cmd.Flags().StringVarP(&opts.Labels, "selector", "l", "", "only the jobs with these labels, e.g. env=prod,team=billing")
	cmd.Flags().IntVar(&opts.Limit, "limit", 0, "page size (server default when 0)")
	cmd.Flags().BoolVar(&all, "all", false, "read every page")
	return cmd
}

// schedule renders a job's schedule on one line, e.g. "cron 0 * * * * (Europe/Paris)".
func schedule(s *apiv1.JobSpec) string {
	typ := s.ScheduleType
	if typ == "" {
		typ = "none"
	}
	out := strings.TrimSpace(typ + " " + s.ScheduleExpr)
	if (typ == "cron" || typ == "quartz") && s.Timezone != "" && s.Timezone != "UTC" {
		out += " (" + s.Timezone + ")"
	}
	return out
}

func jobDetail(j *apiv1.Job) *kv {
	var k kv
	k.add("ID", strconv.FormatInt(j.ID, 10))
	k.add("Group", j.Group)
	k.add("Name", j.Name)
	k.add("Description", j.Description)
	k.add("Handler", j.Handler)
	k.add("Params", j.Params)
	if j.Script != nil {
		k.add("Script", fmt.Sprintf("%s, version %d, %d bytes (jetjob scripts show %d)", j.ScriptLanguage, j.ScriptVersion, len(*j.Script), j.ID))
	}
	k.add("Schedule", schedule(&j.JobSpec))
	for i, p := range j.Schedules {
		if i > 0 {
			k.add("Also", schedule(&apiv1.JobSpec{ScheduleType: p.Type, ScheduleExpr: p.Expr, Timezone: p.Timezone}))
		}
	}
	k.add("Time zone", j.Timezone)
	k.add("Owner", j.Owner)
	k.add("Labels", labels.Format(j.Labels))
	if len(j.ExcludeCalendars) > 0 {
		k.add("Excluded days", strings.Join(j.ExcludeCalendars, ", ")+" (calendars)")
		k.add("Included days", strings.Join(j.IncludeCalendars, ", "))
	}
	k.add("Misfire policy", j.MisfirePolicy)
	k.add("Route strategy", j.RouteStrategy)
	k.add("Block strategy", j.BlockStrategy)
	if j.MaxConcurrency > 0 {
		k.add("Max concurrency", strconv.Itoa(j.MaxConcurrency))
	}
	if j.Sharding != nil {
		k.add("Fixed shards", strconv.Itoa(j.Sharding.Total)+" parts per fire")
	}
	k.add("Timeout", fmtDuration(time.Duration(j.Timeout)))
	k.add("Max retries", strconv.Itoa(j.MaxRetries))
	k.add("Enabled", yesNo(j.Enabled))
	k.add("Shard", strconv.Itoa(j.Shard))
	k.add("Next fire", fmtTimePtr(j.NextFireAt))
	k.add("Last fire", fmtTimePtr(j.LastFireAt))
	k.add("Version", strconv.FormatInt(j.Version, 10))
	k.add("Created", fmtTime(j.CreatedAt))
	k.add("Updated", fmtTime(j.UpdatedAt))
	schedOpsDetail(&k, j)
	flowDetail(&k, j)
	return &k
}

func (a *app) jobsGetCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "get ID",
		Short: "Show a job",
		Args:  needArgs("ID"),
		RunE:  showID(a, "job", (*client.Client).GetJob, detail(jobDetail)),
	}
}

// jobsSwitchCmd is `jobs enable` or `jobs disable`.
func (a *app) jobsSwitchCmd(enable bool) *cobra.Command {
	sw := scheduleSwitch[apiv1.Job]{
		kind: "job", on: "enable", off: "disable", onDone: "enabled", offDone: "disabled",
		onShort:     "Enable a job",
		offShort:    "Disable a job (its planned fires are dropped)",
		catchUpHelp: "fires missed while disabled: policy (replay by the misfire policy, the default) or none (resume from now)",
		noteHelp:    "why the job is disabled (shown by jobs list/get until it is enabled)",
		enable:      (*client.Client).EnableJobWith,
		disable:     (*client.Client).DisableJobWith,
		line:        func(j *apiv1.Job) (int64, string, *time.Time) { return j.ID, j.Name, j.NextFireAt },
	}
	return sw.cmd(a, enable)
}

// scheduleSwitch is a command pair that turns a schedule on (with
// --catch-up) or off (with --note): jobs enable/disable and workflows
// resume/pause, which are the same operation on a jobs row through each
// kind's endpoints, so one builder serves both.
type scheduleSwitch[T any] struct {
	kind              string // "job" or "workflow", in messages
	on, off           string // the subcommand names
	onDone, offDone   string // what the printed line says happened
	onShort, offShort string
	catchUpHelp       string
	noteHelp          string
	enable            func(*client.Client, context.Context, int64, apiv1.EnableRequest) (*T, error)
	disable           func(*client.Client, context.Context, int64, apiv1.DisableRequest) (*T, error)
	line              func(*T) (id int64, name string, nextFire *time.Time)
}

// cmd builds the "on" command when on is true, else the "off" one.
func (sw scheduleSwitch[T]) cmd(a *app, on bool) *cobra.Command {
	use, short, done := sw.off, sw.offShort, sw.offDone
	if on {
		use, short, done = sw.on, sw.onShort, sw.onDone
	}
	var note, catchUp string
	cmd := &cobra.Command{
		Use:   use + " ID",
		Short: short,
		Args:  needArgs("ID"),
		RunE: onID(sw.kind, func(cmd *cobra.Command, id int64) error {
			if catchUp != "" && catchUp != "none" && catchUp != "policy" {
				return usagef("--catch-up %q: want none or policy", catchUp)
			}
			return show(a, cmd, func(c *client.Client, ctx context.Context) (*T, error) {
				if on {
					return sw.enable(c, ctx, id, apiv1.EnableRequest{CatchUp: catchUp})
				}
				return sw.disable(c, ctx, id, apiv1.DisableRequest{Note: note})
			}, func(w io.Writer, v *T) error {
				id, name, next := sw.line(v)
				if !on {
					// A disabled job fires no more: there is no next fire to show.
					_, err := fmt.Fprintf(w, "%s %d (%s) %s\n", sw.kind, id, cell(name), done)
					return err
				}
				_, err := fmt.Fprintf(w, "%s %d (%s) %s; next fire: %s\n", sw.kind, id, cell(name), done, fmtTimePtr(next))
				return err
			})
		}),
	}
	if on {
		cmd.Flags().StringVar(&catchUp, "catch-up", "", sw.catchUpHelp)
	} else {
		cmd.Flags().StringVar(&note, "note", "", sw.noteHelp)
	}
	return cmd
}

func (a *app) jobsDeleteCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "delete ID",
		Short: "Delete a job",
		Args:  needArgs("ID"),
		RunE:  doneID(a, "job", (*client.Client).DeleteJob, "deleted"),
	}
}

func (a *app) jobsTriggerCmd() *cobra.Command {
	var tf triggerFlags
	cmd := &cobra.Command{
		Use:   "trigger ID",
		Short: "Run a job now or once later (optionally with other params, idempotently)",
		Args:  needArgs("ID"),
		RunE: onID("job", func(cmd *cobra.Command, id int64) error {
			req, err := tf.request(cmd)
			if err != nil {
				return err
			}
			return show(a, cmd, func(c *client.Client, ctx context.Context) (*apiv1.Run, error) {
				return c.TriggerJobWith(ctx, id, req)
			}, detail(runDetail))
		}),
	}
	tf.add(cmd, "params for this run instead of the job's (may be empty)")
	tf.addPriority(cmd)
	return cmd
}

func (a *app) jobsNextCmd() *cobra.Command {
	var n int
	cmd := &cobra.Command{
		Use:   "next ID",
		Short: "Show the next fire times of a job, in UTC and in the job's time zone",
		Args:  needArgs("ID"),
		RunE: onID("job", func(cmd *cobra.Command, id int64) error {
			if n < 1 {
				return usagef("-n %d: must be at least 1", n)
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			next, err := c.NextFires(cmd.Context(), id, n)
			if err != nil {
				return err
			}
			if a.output == outputJSON {
				return writeJSON(a.stdout, next)
			}
			job, err := c.GetJob(cmd.Context(), id)
			if err != nil {
				return err
			}
			zone := job.Timezone
			if zone == "" {
				zone = "UTC"
			}
			loc, err := time.LoadLocation(zone)
			if err != nil {
				fmt.Fprintf(a.stderr, "warning: job time zone %q: %v; showing UTC\n", zone, err)
				loc, zone = time.UTC, "UTC"
			}
			if !job.Enabled {
				_, err := fmt.Fprintf(a.stdout, "job %d is disabled: no upcoming fire until it is enabled (schedule: %s)\n", job.ID, schedule(&job.JobSpec))
				return err
			}
			if len(next.Times) == 0 {
				_, err := fmt.Fprintf(a.stdout, "job %d has no upcoming fire (schedule: %s)\n", job.ID, schedule(&job.JobSpec))
				return err
			}
			ex := next.Excluded
			if len(ex) == 0 {
				t := newTable(a.stdout, "#", "UTC", "LOCAL ("+zone+")")
				for i, at := range next.Times {
					t.row(strconv.Itoa(i+1), fmtTime(at), at.In(loc).Format(timeLayout))
				}
				return t.flush()
			}
			t := newTable(a.stdout, "#", "UTC", "LOCAL ("+zone+")", "CALENDAR")
			for i, at := range next.Times {
				// The excluded fires before this one, marked, in time order.
				for len(ex) > 0 && ex[0].At.Before(at) {
					t.row("-", fmtTime(ex[0].At), ex[0].At.In(loc).Format(timeLayout), "excluded by "+ex[0].Calendar)
					ex = ex[1:]
				}
				t.row(strconv.Itoa(i+1), fmtTime(at), at.In(loc).Format(timeLayout), "")
			}
			return t.flush()
		}),
	}
	cmd.Flags().IntVarP(&n, "count", "n", 5, "how many fire times")
	return cmd
}
