package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
	"github.com/jetjob/jetjob/scheduler/internal/xxljob"
)

// maxHistoryDays bounds --history: xxl-job keeps 30 days of log by
// default; ten years is more than any admin keeps.
const maxHistoryDays = 3660

// skipJobNotImported is why the log rows of a job not in jetjob are not
// imported.
const skipJobNotImported = "its job is not imported"

// importHistoryReport is what --history did: xxl_job_log rows read since
// Since, and what became of them.
type importHistoryReport struct {
	Days  int       `json:"days"`
	Since time.Time `json:"since"`
	// Read counts the log rows read; Imported the runs written (with
	// --dry-run: that would be written), Existing those already there (an
	// import repeated), TooOld those of days jetjob already rolled up and
	// dropped.
	Read     int `json:"read"`
	Imported int `json:"imported"`
	Existing int `json:"existing"`
	TooOld   int `json:"too_old"`
	// Skipped counts the rows not imported, by reason.
	Skipped map[string]int `json:"skipped,omitempty"`
	// Note says why nothing was read, if so.
	Note string `json:"note,omitempty"`
	// ReportDays counts xxl_job_log_report's finished days read; TotalsWritten
	// those written into the daily statistics (days jetjob knew nothing
	// of: older than xxl_job_log keeps), TotalsSkipped the others.
	ReportDays    int `json:"report_days"`
	TotalsWritten int `json:"totals_written"`
	TotalsSkipped int `json:"totals_skipped"`
}

// importHistory brings the xxl_job_log rows of the last days days over as
// finished runs of the imported jobs (trigger type import), times read in
// the zone the import checked. Rows of jobs not imported, rows without a
// result and rows the API refuses are counted by reason; the others go
// on. Importing again writes nothing twice.
func importHistory(ctx context.Context, c *client.Client, db *sql.DB, rep *importReport, days int, loc *time.Location, now time.Time, dry bool) error {
	h := &importHistoryReport{Days: days, Since: now.AddDate(0, 0, -days).UTC(), Skipped: map[string]int{}}
	rep.History = h
	newID := map[int64]int64{}
	for _, j := range rep.Jobs {
		switch {
		case j.NewID != 0:
			newID[j.OldID] = j.NewID
		case dry && strings.HasPrefix(j.Action, dryPrefix):
			newID[j.OldID] = -1 // would be created
		}
	}
	var batch []apiv1.ImportedRun
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		defer func() { batch = batch[:0] }()
		if dry {
			h.Imported += len(batch)
			return nil
		}
		res, err := c.ImportRuns(ctx, apiv1.RunImport{Runs: batch})
		if err == nil {
			h.Imported, h.Existing, h.TooOld = h.Imported+res.Imported, h.Existing+res.Existing, h.TooOld+res.TooOld
			return nil
		}
		if importFatal(err) {
			return fmt.Errorf("import history: %w", err)
		}
		// The API refused the batch for one of its runs: send them one by
		// one, so that the others are written and the bad one is said.
		for _, r := range batch {
			res, err := c.ImportRuns(ctx, apiv1.RunImport{Runs: []apiv1.ImportedRun{r}})
			switch {
			case err == nil:
				h.Imported, h.Existing, h.TooOld = h.Imported+res.Imported, h.Existing+res.Existing, h.TooOld+res.TooOld
			case importFatal(err):
				return fmt.Errorf("import history: %w", err)
			default:
				h.Skipped["jetjob refused it: "+err.Error()]++
			}
		}
		return nil
	}
	err := xxljob.ReadHistory(ctx, db, h.Since, loc, func(rows []xxljob.LogRow) error {
		for _, l := range rows {
			h.Read++
			id, ok := newID[l.JobID]
			if !ok {
				h.Skipped[skipJobNotImported]++
				continue
			}
			run, skip := xxljob.MapLog(l, id, loc, now)
			if skip != "" {
				h.Skipped[skip]++
				continue
			}
			batch = append(batch, run)
			if len(batch) == apiv1.MaxImportedRuns {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if errors.Is(err, xxljob.ErrNoLog) {
		h.Note = err.Error()
	} else if err != nil {
		return err
	}
	if err := flush(); err != nil {
		return err
	}
	return importReportDays(ctx, c, db, h, loc, now, dry)
}

// importReportDays writes xxl_job_log_report's finished days into the
// daily statistics, where jetjob has nothing of the day (the runs imported
// above say more, per job): the days older than xxl_job_log keeps. Its
// days are the admin's, taken as UTC days.
func importReportDays(ctx context.Context, c *client.Client, db *sql.DB, h *importHistoryReport, loc *time.Location, now time.Time, dry bool) error {
	days, err := xxljob.ReadReport(ctx, db, h.Since, loc)
	if err != nil {
		return err
	}
	today := min(now.In(loc).Format(time.DateOnly), now.UTC().Format(time.DateOnly))
	var req apiv1.StatsImport
	for _, d := range days {
		if d.Day >= today {
			continue // not over yet (here or in UTC)
		}
		h.ReportDays++
		req.Days = append(req.Days, apiv1.ImportedDay{Day: d.Day, Succeeded: d.Succeeded, Failed: d.Failed})
	}
	if len(req.Days) == 0 || dry {
		return nil
	}
	res, err := c.ImportStats(ctx, req)
	if err != nil {
		return fmt.Errorf("import xxl_job_log_report: %w", err)
	}
	h.TotalsWritten, h.TotalsSkipped = res.Written, res.Skipped
	return nil
}

// lines says what the history import did, for the table and the Markdown.
func (h *importHistoryReport) lines(dry bool) []string {
	verb := "imported"
	if dry {
		verb = "would be imported"
	}
	out := []string{fmt.Sprintf("history: %d xxl_job_log rows since %s (%d days) read; %d runs %s, %d already there, %d on days whose runs jetjob already dropped",
		h.Read, h.Since.Format(time.RFC3339), h.Days, h.Imported, verb, h.Existing, h.TooOld)}
	reasons := make([]string, 0, len(h.Skipped))
	for r := range h.Skipped {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		out = append(out, "history: "+strconv.Itoa(h.Skipped[r])+" rows not imported: "+r)
	}
	switch {
	case h.ReportDays > 0 && dry:
		out = append(out, fmt.Sprintf("history: %d finished days of xxl_job_log_report read; those jetjob has no runs of would come into the daily statistics as totals", h.ReportDays))
	case h.ReportDays > 0:
		out = append(out, fmt.Sprintf("history: %d days of xxl_job_log_report read; %d written into the daily statistics (days jetjob has no runs of: as totals, without jobs), %d skipped (the imported runs count them)",
			h.ReportDays, h.TotalsWritten, h.TotalsSkipped))
	}
	if h.Note != "" {
		out = append(out, "history: "+h.Note)
	}
	return out
}
