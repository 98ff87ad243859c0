package xxljob

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/shared/wire"
)

// xxl-job keeps one xxl_job_log row per trigger: when the admin triggered
// it (trigger_time, a DATETIME in the admin JVM's zone, the zone PickZone
// checks), whether the trigger reached an executor (trigger_code) and,
// once the executor called back, the result (handle_code, handle_time,
// handle_msg). `--history DAYS` brings the rows of the last DAYS days over
// as finished runs of the imported jobs, so that run history and the
// dashboard's daily statistics do not start empty.

// Codes of xxl_job_log, as xxl-job's ReturnT and its timeout handling
// write them.
const (
	codeNone    = 0   // not triggered yet / no result yet
	codeOK      = 200 // success
	codeTimeout = 502 // the executor's timeout killed the handler
)

// LogRow is one row of xxl_job_log, with the columns the history import
// uses; NULL text reads as "", a NULL time as "".
type LogRow struct {
	ID, JobID     int64
	Address       string // executor_address
	Param         string // executor_param
	ShardingParam string // executor_sharding_param, "i/n" in a broadcast
	// TriggerTime and HandleTime are "2006-01-02 15:04:05" in the admin's
	// zone ("" when NULL).
	TriggerTime, HandleTime string
	TriggerCode, HandleCode int
	TriggerMsg, HandleMsg   string
}

// ErrNoLog says the database has no xxl_job_log table (a copy of only the
// job tables): there is no history to import.
var ErrNoLog = errors.New("no xxl_job_log table: no history to import")

// logPage is how many log rows ReadHistory reads per query.
const logPage = 1000

// ReadHistory reads the xxl_job_log rows triggered at or after since
// (interpreted in loc, the admin's zone), ordered by id, and hands them to
// page a page at a time; page's error stops the read.
func ReadHistory(ctx context.Context, db *sql.DB, since time.Time, loc *time.Location, page func([]LogRow) error) error {
	cols, _, err := readColumns(ctx, db)
	if err != nil {
		return err
	}
	const tl = "xxl_job_log"
	if cols[tl] == nil {
		return ErrNoLog
	}
	// DATE_FORMAT keeps the admin's wall clock as stored, whatever zone
	// the connection has.
	timeOf := func(col string) string {
		if !cols.has(tl, col) {
			return "''"
		}
		return "COALESCE(DATE_FORMAT(`" + col + "`, '%Y-%m-%d %H:%i:%s'), '')"
	}
	q := `SELECT id, job_id, ` + cols.text(tl, "executor_address") + `, ` + cols.text(tl, "executor_param") + `, ` +
		cols.text(tl, "executor_sharding_param") + `, ` + timeOf("trigger_time") + `, ` + timeOf("handle_time") + `, ` +
		cols.number(tl, "trigger_code") + `, ` + cols.number(tl, "handle_code") + `, ` +
		cols.text(tl, "trigger_msg") + `, ` + cols.text(tl, "handle_msg") + `
		FROM xxl_job_log WHERE trigger_time >= ? AND id > ? ORDER BY id LIMIT ` + strconv.Itoa(logPage)
	from := since.In(loc).Format(time.DateTime)
	var after int64
	for {
		rows, err := db.QueryContext(ctx, q, from, after)
		if err != nil {
			return fmt.Errorf("read xxl_job_log: %w", err)
		}
		var got []LogRow
		for rows.Next() {
			var l LogRow
			if err := rows.Scan(&l.ID, &l.JobID, &l.Address, &l.Param, &l.ShardingParam, &l.TriggerTime, &l.HandleTime,
				&l.TriggerCode, &l.HandleCode, &l.TriggerMsg, &l.HandleMsg); err != nil {
				rows.Close()
				return fmt.Errorf("read xxl_job_log: %w", err)
			}
			got = append(got, l)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("read xxl_job_log: %w", err)
		}
		if len(got) == 0 {
			return nil
		}
		if err := page(got); err != nil {
			return err
		}
		if len(got) < logPage {
			return nil
		}
		after = got[len(got)-1].ID
	}
}

// Reasons MapLog gives for a row it does not import.
const (
	SkipNotTriggered = "never triggered (trigger code 0)"
	SkipRunning      = "no result yet (running in xxl-job, or its result was lost)"
	SkipBadTime      = "trigger time missing, unreadable or in the future"
)

// MapLog maps one log row to a finished run of the jetjob job jobID, its
// times read in loc, or says why the row is not imported. The run's
// started_at is the trigger time (xxl-job records no start), its
// finished_at the callback's handle time. Its message names the log row and
// keeps xxl-job's messages, HTML removed.
func MapLog(l LogRow, jobID int64, loc *time.Location, now time.Time) (apiv1.ImportedRun, string) {
	at, err := time.ParseInLocation(time.DateTime, l.TriggerTime, loc)
	if err != nil || at.After(now) {
		return apiv1.ImportedRun{}, SkipBadTime
	}
	r := apiv1.ImportedRun{JobID: jobID, ScheduledAt: at, StartedAt: &at, WorkerID: firstAddress(l.Address)}
	msg := "xxl-job log " + strconv.FormatInt(l.ID, 10)
	if p := strings.TrimSpace(l.Param); p != "" {
		msg += " (param " + p + ")"
	}
	finished := at
	if h, err := time.ParseInLocation(time.DateTime, l.HandleTime, loc); err == nil && !h.Before(at) && !h.After(now) {
		finished = h
	}
	switch {
	case l.TriggerCode == codeNone && l.HandleCode == codeNone:
		return apiv1.ImportedRun{}, SkipNotTriggered
	case l.TriggerCode != codeOK && l.TriggerCode != codeNone:
		r.Status = string(wire.StatusFailed)
		msg += ": the trigger failed (code " + strconv.Itoa(l.TriggerCode) + ")"
		if t := plainText(l.TriggerMsg); t != "" {
			msg += ": " + t
		}
		finished = at
	case l.HandleCode == codeNone:
		return apiv1.ImportedRun{}, SkipRunning
	case l.HandleCode == codeOK:
		r.Status = string(wire.StatusSucceeded)
	case l.HandleCode == codeTimeout:
		r.Status = string(wire.StatusTimedOut)
	default:
		r.Status = string(wire.StatusFailed)
		msg += ": handle code " + strconv.Itoa(l.HandleCode)
	}
	if r.Status != string(wire.StatusFailed) || l.TriggerCode == codeOK {
		if t := plainText(l.HandleMsg); t != "" {
			msg += ": " + t
		}
	}
	r.FinishedAt = &finished
	r.ShardIndex, r.ShardTotal = shardOf(l.ShardingParam)
	r.Message = wire.TruncateMessage(msg)
	return r, ""
}

// shardOf reads executor_sharding_param ("i/n"), 0/0 (no broadcast part)
// when absent or not a valid part.
func shardOf(s string) (index, total int) {
	i, n, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return 0, 0
	}
	index, err1 := strconv.Atoi(i)
	total, err2 := strconv.Atoi(n)
	if err1 != nil || err2 != nil || total <= 0 || index < 0 || index >= total {
		return 0, 0
	}
	return index, total
}

// firstAddress is the executor that ran the trigger (xxl-job lists
// several for a failover route's attempts), at most 255 bytes.
func firstAddress(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), ",")
	if len(s) > 255 {
		s = s[:255]
	}
	return s
}

var (
	htmlTag    = regexp.MustCompile(`<[^>]*>`)
	whitespace = regexp.MustCompile(`\s+`)
)

// plainText is an xxl-job log message (HTML with <br> and <span>) as one
// line of text.
func plainText(s string) string {
	s = htmlTag.ReplaceAllString(s, " ")
	s = strings.NewReplacer("&nbsp;", " ", "&lt;", "<", "&gt;", ">", "&amp;", "&", "&quot;", `"`).Replace(s)
	return strings.TrimSpace(whitespace.ReplaceAllString(s, " "))
}

// ReportDay is one row of xxl_job_log_report: the runs of a day (in the
// admin's zone) by result, without jobs.
type ReportDay struct {
	Day                        string // YYYY-MM-DD
	Running, Succeeded, Failed int64
}

// ReadReport reads the xxl_job_log_report rows of the days from since's
// day (in loc) on; none when the table does not exist.
func ReadReport(ctx context.Context, db *sql.DB, since time.Time, loc *time.Location) ([]ReportDay, error) {
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.TABLES
		WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'xxl_job_log_report'`).Scan(&n); err != nil {
		return nil, fmt.Errorf("look for xxl_job_log_report: %w", err)
	}
	if n == 0 {
		return nil, nil
	}
	rows, err := db.QueryContext(ctx, `SELECT DATE_FORMAT(trigger_day, '%Y-%m-%d'), COALESCE(running_count, 0),
		COALESCE(suc_count, 0), COALESCE(fail_count, 0) FROM xxl_job_log_report
		WHERE trigger_day >= ? ORDER BY trigger_day`, since.In(loc).Format(time.DateOnly))
	if err != nil {
		return nil, fmt.Errorf("read xxl_job_log_report: %w", err)
	}
	defer rows.Close()
	var out []ReportDay
	for rows.Next() {
		var d ReportDay
		if err := rows.Scan(&d.Day, &d.Running, &d.Succeeded, &d.Failed); err != nil {
			return nil, fmt.Errorf("read xxl_job_log_report: %w", err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read xxl_job_log_report: %w", err)
	}
	return out, nil
}
