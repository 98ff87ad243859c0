package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
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
// the -o json document, and the source of the table and of the --report
// Markdown file. Every row of the xxl-job database is in it: mapped,
// changed meaning (with what changed), or not imported (with why).
type importReport struct {
	DryRun bool `json:"dry_run"`
	// Database and Generation say what was read: the xxl-job database and
	// its schema generation (2.0–2.2, 2.3–2.4 or 3.x).
	Database   string           `json:"database"`
	Generation string           `json:"generation"`
	Timezone   string           `json:"timezone"`
	Zone       xxljob.ZoneCheck `json:"zone_check"`
	Enable     bool             `json:"enable"`
	Groups     []importGroupRow `json:"groups"`
	Jobs       []importJobRow   `json:"jobs"`
	Users      []importUserRow  `json:"users,omitempty"`
	// History is what --history did (nil without it).
	History *importHistoryReport `json:"history,omitempty"`
	Counts  map[string]int       `json:"counts"`
	// Error is why the import stopped before the end ("" if it did not):
	// the rows without an action were not tried.
	Error string `json:"error,omitempty"`
}

type importGroupRow struct {
	OldID   int64    `json:"old_id"`
	AppName string   `json:"app_name"`
	Group   string   `json:"group"`
	Action  string   `json:"action"`
	Notes   []string `json:"notes,omitempty"`
}

type importJobRow struct {
	OldID  int64  `json:"old_id"`
	NewID  int64  `json:"new_id,omitempty"`
	Source string `json:"source"`
	Group  string `json:"group"`
	Name   string `json:"name"`
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
		dsn, prefix, tz, reportFile string
		dryRun, enable, users       bool
		history                     int
	)
	cmd := &cobra.Command{
		Use:   "xxl-job --mysql-url DSN [--group-prefix P] [--tz ZONE|auto] [--enable] [--users] [--history DAYS] [--report FILE] [--dry-run]",
		Short: "Create groups and jobs from an xxl-job admin database",
		Long: `Read xxl-job's executor groups (xxl_job_group) and jobs (xxl_job_info) from its
MySQL database and create them in jetjob: a group per executor (app_name,
after --group-prefix), a job per xxl-job job, child links by the new ids.
Every schema generation is read (2.0–2.2, 2.3–2.4, 3.x: told apart by the
columns, and said). The xxl-job database is only read.

Each job records its source, "xxl-job <database>#<id>", and a re-import finds
its jobs by it: jobs that match are left alone ("unchanged"), jobs whose
xxl-job side changed are updated (also when --group-prefix or the
description changed: the job moves or is renamed), new ones created. A table
says for each row its old and new id, what mapped, what changed meaning, and
why a job could not be imported (e.g. GLUE(Java)); those are not created,
and one that cannot be never stops the others. -o json gives the same as a
document, --report FILE as Markdown for the team. --dry-run changes nothing.

Jobs are created disabled, so that they do not fire in both schedulers while
xxl-job still runs them. Once they are stopped in xxl-job, import again with
--enable: it enables the jobs xxl-job ran (trigger_status 1) and disables the
others. xxl-job fires Quartz expressions in its admin's time zone: give it
with --tz; it is checked against the next fire times xxl-job stored (a zone
they contradict is refused, default UTC), --tz auto picks it from them.

--history DAYS also brings xxl_job_log's rows of the last DAYS days over as
finished runs of the imported jobs (trigger type import; repeated imports
add nothing), so that run history and the daily statistics do not start
empty.`,
		Example: `  jetjob import xxl-job --mysql-url 'reader:secret@tcp(xxl-db:3306)/xxl_job' --tz auto --dry-run
  jetjob import xxl-job --mysql-url 'mysql://reader:secret@xxl-db:3306/xxl_job' --group-prefix xxl- --tz Asia/Shanghai --report import.md
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
			if history < 0 || history > maxHistoryDays {
				return usagef("--history %d: want 1 to %d days (0: no history)", history, maxHistoryDays)
			}
			if tz != "" && tz != xxljob.ZoneAuto {
				if _, err := time.LoadLocation(tz); err != nil {
					return usagef("--tz %q: unknown time zone (want an IANA name like Asia/Shanghai, or auto)", tz)
				}
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			db, err := xxljob.Open(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			defer db.Close()
			dump, err := xxljob.Read(cmd.Context(), db)
			if err != nil {
				return fmt.Errorf("xxl-job database %s/%s: %w", cfg.Addr, cfg.DBName, err)
			}
			now := time.Now()
			zone, err := xxljob.PickZone(dump, tz, now)
			if err != nil {
				return fmt.Errorf("xxl-job database %s/%s (%s schema): %w", cfg.Addr, cfg.DBName, dump.Generation, err)
			}
			opts := xxljob.Options{GroupPrefix: prefix, Timezone: zone.Zone, Enable: enable, Now: now}
			plan, err := xxljob.Map(dump, opts)
			if err != nil {
				return err
			}
			rep := &importReport{DryRun: dryRun, Database: dump.Database, Generation: dump.Generation,
				Timezone: zone.Zone, Zone: zone, Enable: enable}
			runErr := importPlan(cmd.Context(), c, plan, rep, dryRun, enable)
			if runErr == nil && users {
				runErr = importUsers(cmd.Context(), c, a.used.API, dump, rep, dryRun)
			}
			if runErr == nil && history > 0 {
				runErr = importHistory(cmd.Context(), c, db, rep, history, mustLocation(zone.Zone), now, dryRun)
			}
			if runErr != nil {
				rep.Error = runErr.Error()
				if !rep.tried() {
					// Nothing was tried (the API could not be reached, the
					// credentials were refused): the error is all there is.
					return runErr
				}
			}
			if reportFile != "" {
				if err := writeFileAtomic(reportFile, rep.markdown()); err != nil {
					return fmt.Errorf("--report %s: %w", reportFile, err)
				}
			}
			if err := a.emit(rep, func(w io.Writer) error { return rep.write(w) }); err != nil {
				return err
			}
			return runErr
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&dsn, "mysql-url", "", "xxl-job's database: user:pass@tcp(host:3306)/xxl_job or mysql://user:pass@host:3306/xxl_job (required)")
	fl.StringVar(&prefix, "group-prefix", "", "put before every xxl-job app_name to make the group name")
	fl.StringVar(&tz, "tz", "", "IANA time zone xxl-job's admin ran in, where its cron expressions fire (checked against xxl-job's next fire times; default UTC), or auto to pick it from them")
	fl.BoolVar(&enable, "enable", false, "enable the jobs xxl-job runs and disable the others (default: new jobs are disabled)")
	fl.BoolVar(&users, "users", false, "also create xxl-job's users (admins as admins, the others as operators of their groups), without passwords")
	fl.IntVar(&history, "history", 0, "also import the last DAYS days of xxl_job_log as finished runs (marked import)")
	fl.StringVar(&reportFile, "report", "", "also write the report as Markdown to FILE")
	fl.BoolVar(&dryRun, "dry-run", false, "print what would be done, change nothing")
	return cmd
}

// importFatal says whether err from the API must stop the import: anything
// but the API refusing one job (a 4xx other than 401) is the same for
// every row — an unreachable API, refused credentials, a failing server.
func importFatal(err error) bool {
	var ae *client.APIError
	if !errors.As(err, &ae) {
		return true
	}
	return ae.StatusCode == http.StatusUnauthorized || ae.StatusCode >= 500 || ae.StatusCode < 400
}

// importPlan applies the plan through the API (or, dry, only compares)
// and fills rep. Groups come first, then jobs children first, so that a
// parent's child links name ids that exist. A job the API refuses is
// reported on its row and the others go on; an error that would be the
// same for every row (importFatal) stops the import, the rows so far say
// what was done, and running it again carries on from there.
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
	// Every job, found by source first (a job the import made), then by
	// group and name (one made before jobs recorded their source).
	all, err := c.ListAllJobs(ctx, client.ListJobsOptions{Limit: 500})
	if err != nil {
		return fmt.Errorf("list jetjob jobs: %w", err)
	}
	bySource := map[string]apiv1.Job{}
	byName := map[string]apiv1.Job{}
	for _, j := range all {
		if j.Source != "" {
			if _, dup := bySource[j.Source]; !dup || j.ID < bySource[j.Source].ID {
				bySource[j.Source] = j
			}
		}
		byName[j.Group+"\x00"+j.Name] = j
	}

	rows := make([]importJobRow, len(plan.Jobs))
	for i, jp := range plan.Jobs {
		rows[i] = importJobRow{OldID: jp.OldID, Source: jp.Spec.Source, Group: jp.Spec.Group, Name: jp.Spec.Name,
			XXLRunning: jp.Running, Mapped: jp.Mapped, Changed: jp.Changed, Problems: jp.Problems}
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

	// Groups.
	badGroup := map[string]string{} // group name → why it could not be created
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
				row.Action = actNotImported
				if importFatal(err) {
					rep.Groups = append(rep.Groups, row)
					return fmt.Errorf("create group %s (xxl-job group %d): %w", gp.Group.Name, gp.OldID, err)
				}
				row.Notes = append(row.Notes, "jetjob refused it: "+err.Error())
				rep.Groups = append(rep.Groups, row)
				badGroup[gp.Group.Name] = err.Error()
				continue
			}
			row.Action = actCreated
			existingGroups[gp.Group.Name] = true
		}
		rep.Groups = append(rep.Groups, row)
	}

	newID := map[int64]int64{} // old id → jetjob id
	for _, i := range plan.Order {
		jp := plan.Jobs[i]
		row := &rows[i]
		if why, bad := badGroup[jp.Spec.Group]; bad {
			row.Action, row.Problems = actNotImported, append(row.Problems, "its group could not be created: "+why)
			continue
		}
		want := jp.Spec
		for _, old := range jp.Children {
			id, ok := newID[old]
			switch {
			case ok:
			case dry:
				// The child would be created, so its id is unknown; any
				// placeholder differs from what is stored.
				id = -old
			default:
				row.Changed = append(row.Changed, fmt.Sprintf("child job %d was not imported: link dropped", old))
				continue
			}
			want.ChildJobIDs = append(want.ChildJobIDs, id)
		}
		cur, found := bySource[want.Source]
		if !found {
			cur, found = byName[want.Group+"\x00"+want.Name]
			if found && cur.Source != "" && cur.Source != want.Source {
				row.Action = actNotImported
				row.Problems = append(row.Problems, fmt.Sprintf("jetjob job %d has this group and name but came from %s: rename one of them", cur.ID, cur.Source))
				continue
			}
		}
		var err error
		switch {
		case !found && dry:
			row.Action = dryPrefix + actCreated
			continue
		case !found:
			var job *apiv1.Job
			job, err = c.CreateJob(ctx, want)
			if err == nil {
				row.Action, row.NewID = actCreated, job.ID
				err = importScriptHistory(ctx, c, job.ID, jp.ScriptHistory, row)
			}
		default:
			row.NewID = cur.ID
			row.Updated = xxljob.Diff(cur, want, enable)
			if !enable && cur.Enabled {
				row.Changed = append(row.Changed, "enabled in jetjob and left so: an import without --enable does not touch the enabled flag")
			}
			switch {
			case len(row.Updated) == 0:
				row.Action = actUnchanged
			case dry:
				row.Action = dryPrefix + actUpdated
			default:
				_, err = c.UpdateJob(ctx, cur.ID, xxljob.Apply(cur, want, enable))
				if _, ok := versionConflict(err); ok {
					err = fmt.Errorf("someone changed jetjob job %d during the import (import again): %w", cur.ID, err)
				}
				if err == nil {
					row.Action = actUpdated
				}
			}
		}
		if err != nil {
			if importFatal(err) {
				return fmt.Errorf("import xxl-job job %d as %s/%s: %w", jp.OldID, want.Group, want.Name, err)
			}
			row.Action, row.NewID = actNotImported, 0
			row.Problems = append(row.Problems, "jetjob refused it: "+err.Error())
			continue
		}
		newID[jp.OldID] = row.NewID
	}
	return nil
}

// importScriptHistory sends a GLUE job's older sources and the time of
// its current one after the job was created with that source (a job
// found again keeps the versions it has: an edit in xxl-job since is a new
// version, saved by the update). A refusal is said on the row; it does
// not undo the job.
func importScriptHistory(ctx context.Context, c *client.Client, id int64, h *apiv1.ScriptImport, row *importJobRow) error {
	if h == nil || len(h.Versions) == 0 && h.CurrentAt == nil {
		return nil
	}
	if _, err := c.ImportScript(ctx, id, *h); err != nil {
		if importFatal(err) {
			return err
		}
		row.Changed = append(row.Changed, "the script's older versions were not imported: "+err.Error())
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

// mustLocation is the zone PickZone checked (a valid name), UTC if it
// cannot be loaded.
func mustLocation(name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		return time.UTC
	}
	return loc
}
