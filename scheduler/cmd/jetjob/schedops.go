package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
)

// Schedule operations: the per-job misfire/jitter/start/end flags of
// `jobs create` and `jobs update`, and the backfill commands.

// schedOpsFlags are the job flags of schedule operations.
type schedOpsFlags struct {
	misfireThreshold, jitter time.Duration
	maxCatchup               int
	startAt, endAt           string
	start, end               *time.Time
}

func (f *schedOpsFlags) register(fl *pflag.FlagSet) {
	fl.DurationVar(&f.misfireThreshold, "misfire-threshold", 0, "how late a fire may be and still run on time (0: the scheduler's default)")
	fl.IntVar(&f.maxCatchup, "max-catchup", 0, "missed fires recorded one by one after an outage (0: the scheduler's default)")
	fl.DurationVar(&f.jitter, "jitter", 0, "delay each fire by a fixed per-fire offset in [0, jitter), e.g. 30s")
	fl.StringVar(&f.startAt, "start-at", "", "no fire before this RFC 3339 time")
	fl.StringVar(&f.endAt, "end-at", "", "no fire after this RFC 3339 time")
}

func (f *schedOpsFlags) validate(changed func(string) bool) error {
	switch {
	case f.misfireThreshold < 0:
		return usagef("--misfire-threshold %s: must not be negative", f.misfireThreshold)
	case f.maxCatchup < 0:
		return usagef("--max-catchup %d: must not be negative", f.maxCatchup)
	case f.jitter < 0:
		return usagef("--jitter %s: must not be negative", f.jitter)
	}
	var err error
	if f.start, err = optTime("--start-at", f.startAt, changed("start-at")); err != nil {
		return err
	}
	if f.end, err = optTime("--end-at", f.endAt, changed("end-at")); err != nil {
		return err
	}
	if f.start != nil && f.end != nil && !f.start.Before(*f.end) {
		return usagef("--start-at %s must be before --end-at %s", f.startAt, f.endAt)
	}
	return nil
}

func (f *schedOpsFlags) apply(changed func(string) bool, spec *apiv1.JobSpec) {
	if changed("misfire-threshold") {
		spec.MisfireThreshold = apiv1.Duration(f.misfireThreshold)
	}
	if changed("max-catchup") {
		spec.MaxCatchup = f.maxCatchup
	}
	if changed("jitter") {
		spec.Jitter = apiv1.Duration(f.jitter)
	}
	if changed("start-at") {
		spec.StartAt = f.start
	}
	if changed("end-at") {
		spec.EndAt = f.end
	}
}

// optTime reads an RFC 3339 flag; empty clears it (nil).
func optTime(flag, v string, given bool) (*time.Time, error) {
	v = strings.TrimSpace(v)
	if !given || v == "" {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return nil, usagef("%s %q: want an RFC 3339 time like 2026-05-01T09:30:00Z", flag, v)
	}
	return &t, nil
}

// schedOpsDetail adds a job's schedule operation rows to `jobs get`.
func schedOpsDetail(k *kv, j *apiv1.Job) {
	if j.MisfireThreshold != 0 {
		k.add("Misfire threshold", fmtDuration(time.Duration(j.MisfireThreshold)))
	}
	if j.MaxCatchup != 0 {
		k.add("Max catch-up", strconv.Itoa(j.MaxCatchup))
	}
	if j.Jitter != 0 {
		k.add("Jitter", fmtDuration(time.Duration(j.Jitter)))
	}
	if j.StartAt != nil {
		k.add("Start at", fmtTimePtr(j.StartAt))
	}
	if j.EndAt != nil {
		k.add("End at", fmtTimePtr(j.EndAt))
	}
	if j.PausedAt != nil {
		k.add("Paused", fmt.Sprintf("%s by %s: %s", fmtTimePtr(j.PausedAt), j.PausedBy, j.PausedNote))
	}
}

// enabledCell is a job's ENABLED column: "no: <note>" when it was
// disabled with a note.
func enabledCell(j *apiv1.Job) string {
	if !j.Enabled && j.PausedNote != "" {
		return "no: " + cell(j.PausedNote)
	}
	return yesNo(j.Enabled)
}

// jobsBackfillCmd is `jobs backfill ID --from T --to T [--max N]`.
func (a *app) jobsBackfillCmd() *cobra.Command {
	return a.backfillCmd("job", (*client.Client).Backfill)
}

// backfillCmd is `<kind>s backfill ID --from T --to T [--max N]` of a job
// or a workflow (whose schedule is its jobs row's), calling backfill.
func (a *app) backfillCmd(kind string, backfill func(*client.Client, context.Context, int64, apiv1.BackfillRequest) (*apiv1.Backfill, error)) *cobra.Command {
	var from, to string
	var maxFires int
	cmd := &cobra.Command{
		Use:   "backfill ID --from T --to T [--max N]",
		Short: "Run every fire of a " + kind + "'s schedule in [from, to) as one cancellable operation",
		Long: `Run every fire of a ` + kind + `'s schedule in [from, to) (trigger type backfill), a few
at a time. Fires that already have a run are not run again. Follow it with
"jobs backfill-get OP", stop it with "jobs backfill-cancel OP".`,
		Args: needArgs("ID"),
		RunE: onID(kind, func(cmd *cobra.Command, id int64) error {
			f, err := optTime("--from", from, true)
			if err != nil {
				return err
			}
			t, err := optTime("--to", to, true)
			if err != nil {
				return err
			}
			switch {
			case f == nil || t == nil:
				return usagef("--from and --to are required")
			case !f.Before(*t):
				return usagef("--from %s must be before --to %s", from, to)
			case maxFires < 0:
				return usagef("--max %d: must not be negative", maxFires)
			}
			return show(a, cmd, func(c *client.Client, ctx context.Context) (*apiv1.Backfill, error) {
				return backfill(c, ctx, id, apiv1.BackfillRequest{From: *f, To: *t, Max: maxFires})
			}, detail(backfillDetail))
		}),
	}
	cmd.Flags().StringVar(&from, "from", "", "start of the range (RFC 3339, inclusive)")
	cmd.Flags().StringVar(&to, "to", "", "end of the range (RFC 3339, exclusive)")
	cmd.Flags().IntVar(&maxFires, "max", 0, "refuse a range holding more fires than this (0: the server's cap, 10000)")
	return cmd
}

// jobsBackfillsCmd is `jobs backfills ID`: a job's operations.
func (a *app) jobsBackfillsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "backfills ID",
		Short: "List a job's backfills, newest first",
		Args:  needArgs("ID"),
		RunE: showID(a, "job", (*client.Client).ListBackfills, func(w io.Writer, list *apiv1.BackfillList) error {
			t := newTable(w, "OP", "FROM", "TO", "PLANNED", "TRIGGERED", "EXISTING", "DONE", "STATE")
			for _, b := range list.Backfills {
				t.row(strconv.FormatInt(b.ID, 10), fmtTime(b.From), fmtTime(b.To), strconv.Itoa(b.Planned),
					strconv.Itoa(b.Triggered), strconv.Itoa(b.Existing), strconv.Itoa(b.Done), b.State)
			}
			return t.flush()
		}),
	}
}

// jobsBackfillOpCmd is `jobs backfill-get OP` or `jobs backfill-cancel OP`.
func (a *app) jobsBackfillOpCmd(cancel bool) *cobra.Command {
	use, short, call := "backfill-get", "Show a backfill", (*client.Client).GetBackfill
	if cancel {
		use, short, call = "backfill-cancel", "Cancel a backfill: fires not yet run are not run", (*client.Client).CancelBackfill
	}
	return &cobra.Command{
		Use:   use + " OP",
		Short: short,
		Args:  needArgs("OP"),
		RunE:  showID(a, "backfill", call, detail(backfillDetail)),
	}
}

func backfillDetail(b *apiv1.Backfill) *kv {
	var k kv
	k.add("Backfill", strconv.FormatInt(b.ID, 10))
	k.add("Job", strconv.FormatInt(b.JobID, 10))
	k.add("Range", fmtTime(b.From)+" .. "+fmtTime(b.To))
	k.add("Planned", strconv.Itoa(b.Planned))
	k.add("Triggered", strconv.Itoa(b.Triggered))
	k.add("Existing", strconv.Itoa(b.Existing))
	k.add("Done", strconv.Itoa(b.Done))
	k.add("State", b.State)
	k.add("Created", fmtTime(b.CreatedAt)+" by "+b.CreatedBy)
	return &k
}
