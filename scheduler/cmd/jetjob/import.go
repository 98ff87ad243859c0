package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
	"github.com/jetjob/jetjob/scheduler/internal/xxljob"
)

func (a *app) importCmd() *cobra.Command {
	return parent(&cobra.Command{
		Use:   "import",
		Short: "Import groups and jobs from another scheduler",
	}, a.importXXLJobCmd())
}

// Import actions, as the table and the JSON report name them.
const (
	actCreated     = "created"
	actUpdated     = "updated"
	actUnchanged   = "unchanged"
	actExists      = "exists"
	actNotImported = "not imported"
	dryPrefix      = "would be "
)

// importReport is what `import xxl-job` did (or, with --dry-run, would do):
// the -o json document, and the source of the tables.
type importReport struct {
	DryRun   bool             `json:"dry_run"`
	Timezone string           `json:"timezone"`
	Enable   bool             `json:"enable"`
	Groups   []importGroupRow `json:"groups"`
	Jobs     []importJobRow   `json:"jobs"`
	Counts   map[string]int   `json:"counts"`
}

type importGroupRow struct {
	OldID   int64    `json:"old_id"`
	AppName string   `json:"app_name"`
	Group   string   `json:"group"`
	Action  string   `json:"action"`
	Notes   []string `json:"notes,omitempty"`
}

type importJobRow struct {
	OldID int64  `json:"old_id"`
	NewID int64  `json:"new_id,omitempty"`
	Group string `json:"group"`
	Name  string `json:"name"`
	// XXLRunning is xxl-job's trigger_status.
	XXLRunning bool     `json:"xxl_running"`
	Action     string   `json:"action"`
	Updated    []string `json:"updated,omitempty"` // fields an update changed
	Mapped     []string `json:"mapped,omitempty"`
	Changed    []string `json:"changed,omitempty"`
	Problems   []string `json:"problems,omitempty"`
}

func (a *app) importXXLJobCmd() *cobra.Command {
	var (
		dsn, prefix, tz string
		dryRun, enable  bool
	)
	cmd := &cobra.Command{
		Use:   "xxl-job --mysql-url DSN [--group-prefix P] [--tz ZONE] [--enable] [--dry-run]",
		Short: "Create groups and jobs from an xxl-job admin database",
		Long: `Read xxl-job's executor groups (xxl_job_group) and jobs (xxl_job_info) from its
MySQL database and create them in jetjob: a group per executor (app_name,
after --group-prefix), a job per xxl-job job, child links by the new ids.
The xxl-job database is only read.

Each job is named after its description and its xxl-job id ("nightly-report-17"),
so the import can run again: jobs that match are left alone ("unchanged"),
jobs whose xxl-job side changed are updated, new ones created. A table says
for each job its old and new id, what mapped, what changed meaning, and why a
job could not be imported (e.g. GLUE(Java)); those are not created.
--dry-run prints the same table and changes nothing.

Jobs are created disabled, so that they do not fire in both schedulers while
xxl-job still runs them. Once they are stopped in xxl-job, import again with
--enable: it enables the jobs xxl-job ran (trigger_status 1) and disables the
others. xxl-job fires Quartz expressions in its admin's time zone: give it
with --tz (default UTC).`,
		Example: `  jetjob import xxl-job --mysql-url 'reader:secret@tcp(xxl-db:3306)/xxl_job' --dry-run
  jetjob import xxl-job --mysql-url 'mysql://reader:secret@xxl-db:3306/xxl_job' --group-prefix xxl- --tz Asia/Shanghai
  jetjob import xxl-job --mysql-url 'mysql://reader:secret@xxl-db:3306/xxl_job' --tz Asia/Shanghai --enable`,
		Args: needArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("mysql-url") {
				return usagef("missing required flag --mysql-url")
			}
			cfg, err := xxljob.ParseDSN(dsn)
			if err != nil {
				return usagef("--mysql-url: %v", err)
			}
			if err := xxljob.CheckGroupPrefix(prefix); err != nil {
				return usagef("--group-prefix: %v", err)
			}
			if tz == "" {
				tz = "UTC"
			}
			if _, err := time.LoadLocation(tz); err != nil {
				return usagef("--tz %q: unknown time zone (want an IANA name like Asia/Shanghai)", tz)
			}
			opts := xxljob.Options{GroupPrefix: prefix, Timezone: tz, Enable: enable}
			c, err := a.client()
			if err != nil {
				return err
			}
			db, err := xxljob.Open(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			dump, err := xxljob.Read(cmd.Context(), db)
			db.Close()
			if err != nil {
				return fmt.Errorf("xxl-job database %s/%s: %w", cfg.Addr, cfg.DBName, err)
			}
			plan, err := xxljob.Map(dump, opts)
			if err != nil {
				return err
			}
			rep := &importReport{DryRun: dryRun, Timezone: tz, Enable: enable}
			runErr := importPlan(cmd.Context(), c, plan, rep, dryRun, enable)
			if err := a.emit(rep, func(w io.Writer) error { return rep.write(w) }); err != nil {
				return err
			}
			return runErr
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&dsn, "mysql-url", "", "xxl-job's database: user:pass@tcp(host:3306)/xxl_job or mysql://user:pass@host:3306/xxl_job (required)")
	fl.StringVar(&prefix, "group-prefix", "", "put before every xxl-job app_name to make the group name")
	fl.StringVar(&tz, "tz", "", "IANA time zone xxl-job's admin ran in: its cron expressions fire there (default UTC)")
	fl.BoolVar(&enable, "enable", false, "enable the jobs xxl-job runs and disable the others (default: new jobs are disabled)")
	fl.BoolVar(&dryRun, "dry-run", false, "print what would be done, change nothing")
	return cmd
}

// importPlan applies the plan through the API (or, dry, only compares)
// and fills rep. Groups come first, then jobs children first, so that a
// parent's child links name ids that exist. It stops at the first API
// error: the rows so far say what was done, and running the import again
// carries on from there.
func importPlan(ctx context.Context, c *client.Client, plan *xxljob.Plan, rep *importReport, dry, enable bool) error {
	rep.Counts = map[string]int{}
	existingGroups := map[string]bool{}
	gl, err := c.ListGroups(ctx)
	if err != nil {
		return fmt.Errorf("list jetjob groups: %w", err)
	}
	for _, g := range gl.Groups {
		existingGroups[g.Name] = true
	}

	// Groups.
	for _, gp := range plan.Groups {
		row := importGroupRow{OldID: gp.OldID, AppName: gp.AppName, Group: gp.Group.Name, Notes: gp.Notes}
		switch {
		case gp.Problem != "":
			row.Action, row.Notes = actNotImported, append(row.Notes, gp.Problem)
		case existingGroups[gp.Group.Name]:
			row.Action = actExists
		case dry:
			row.Action = dryPrefix + actCreated
		default:
			if _, err := c.CreateGroup(ctx, gp.Group); err != nil {
				rep.Groups = append(rep.Groups, row)
				return fmt.Errorf("create group %s (xxl-job group %d): %w", gp.Group.Name, gp.OldID, err)
			}
			row.Action = actCreated
			existingGroups[gp.Group.Name] = true
		}
		rep.Groups = append(rep.Groups, row)
	}

	// The jobs that exist already, by group and name.
	existing := map[string]map[string]apiv1.Job{}
	for _, gp := range plan.Groups {
		if gp.Problem != "" || !existingGroups[gp.Group.Name] || existing[gp.Group.Name] != nil {
			continue
		}
		jobs, err := listGroupJobs(ctx, c, gp.Group.Name)
		if err != nil {
			return err
		}
		byName := map[string]apiv1.Job{}
		for _, j := range jobs {
			byName[j.Name] = j
		}
		existing[gp.Group.Name] = byName
	}

	rows := make([]importJobRow, len(plan.Jobs))
	for i, jp := range plan.Jobs {
		rows[i] = importJobRow{OldID: jp.OldID, Group: jp.Spec.Group, Name: jp.Spec.Name, XXLRunning: jp.Running,
			Mapped: jp.Mapped, Changed: jp.Changed, Problems: jp.Problems}
		if !jp.OK() {
			rows[i].Action = actNotImported
		}
	}
	defer func() {
		rep.Jobs = rows
		for _, r := range rows {
			if r.Action != "" {
				rep.Counts[strings.TrimPrefix(r.Action, dryPrefix)]++
			}
		}
	}()

	newID := map[int64]int64{} // old id → jetjob id
	for _, i := range plan.Order {
		jp := plan.Jobs[i]
		want := jp.Spec
		for _, old := range jp.Children {
			id, ok := newID[old]
			if !ok {
				// Only in a dry run: the child would be created, so its id
				// is unknown; any placeholder differs from what is stored.
				id = -old
			}
			want.ChildJobIDs = append(want.ChildJobIDs, id)
		}
		row := &rows[i]
		cur, found := existing[want.Group][want.Name]
		switch {
		case !found && dry:
			row.Action = dryPrefix + actCreated
			continue
		case !found:
			job, err := c.CreateJob(ctx, want)
			if err != nil {
				return fmt.Errorf("create job %s/%s (xxl-job job %d): %w", want.Group, want.Name, jp.OldID, err)
			}
			row.Action, row.NewID = actCreated, job.ID
		default:
			row.NewID = cur.ID
			row.Updated = xxljob.Diff(cur, want, enable)
			switch {
			case len(row.Updated) == 0:
				row.Action = actUnchanged
			case dry:
				row.Action = dryPrefix + actUpdated
			default:
				spec := xxljob.Apply(cur, want, enable)
				_, err := c.UpdateJob(ctx, cur.ID, spec)
				if _, ok := versionConflict(err); ok {
					return fmt.Errorf("update job %d (xxl-job job %d): someone changed it during the import: run the import again", cur.ID, jp.OldID)
				}
				if err != nil {
					return fmt.Errorf("update job %d (xxl-job job %d): %w", cur.ID, jp.OldID, err)
				}
				row.Action = actUpdated
			}
		}
		newID[jp.OldID] = row.NewID
	}
	return nil
}

// listGroupJobs reads every page of a group's jobs.
func listGroupJobs(ctx context.Context, c *client.Client, group string) ([]apiv1.Job, error) {
	js, err := c.ListAllJobs(ctx, client.ListJobsOptions{Group: group, Limit: 500})
	if err != nil {
		return nil, fmt.Errorf("list jobs of group %s: %w", group, err)
	}
	return js, nil
}

// write prints the groups table, the jobs table and a summary.
func (r *importReport) write(w io.Writer) error {
	t := newTable(w, "XXL-JOB GROUP", "GROUP", "ACTION", "NOTES")
	for _, g := range r.Groups {
		t.row(strconv.FormatInt(g.OldID, 10)+" "+g.AppName, g.Group, g.Action, strings.Join(g.Notes, "; "))
	}
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	t = newTable(w, "OLD ID", "NEW ID", "GROUP", "NAME", "XXL-JOB", "ACTION", "MAPPED", "CHANGED MEANING / NOT MAPPED")
	for _, j := range r.Jobs {
		newID := "-"
		if j.NewID != 0 {
			newID = strconv.FormatInt(j.NewID, 10)
		}
		status := "stopped"
		if j.XXLRunning {
			status = "running"
		}
		action := j.Action
		if len(j.Updated) > 0 {
			action += " (" + strings.Join(j.Updated, ", ") + ")"
		}
		notes := j.Changed
		if len(j.Problems) > 0 {
			notes = append([]string{"NOT MAPPED: " + strings.Join(j.Problems, "; ")}, notes...)
		}
		t.row(strconv.FormatInt(j.OldID, 10), newID, j.Group, j.Name, status, action,
			strings.Join(j.Mapped, "; "), strings.Join(notes, "; "))
	}
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	verb := ""
	if r.DryRun {
		verb = dryPrefix
	}
	fmt.Fprintf(w, "jobs: %d %s%s, %d %s%s, %d unchanged, %d not imported (Quartz expressions fire in %s)\n",
		r.Counts[actCreated], verb, actCreated, r.Counts[actUpdated], verb, actUpdated,
		r.Counts[actUnchanged], r.Counts[actNotImported], r.Timezone)
	switch {
	case r.DryRun:
		fmt.Fprintln(w, "dry run: nothing was changed")
	case r.Counts[actCreated]+r.Counts[actUpdated] == 0 && !r.groupsCreated():
		fmt.Fprintln(w, "nothing changed: jetjob already matches the xxl-job database")
	}
	if !r.Enable {
		fmt.Fprintln(w, "new jobs are disabled; once the jobs are stopped in xxl-job, import again with --enable")
	}
	return nil
}

func (r *importReport) groupsCreated() bool {
	for _, g := range r.Groups {
		if g.Action == actCreated {
			return true
		}
	}
	return false
}
