package api

import (
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/store"
	"github.com/jetjob/jetjob/shared/wire"
)

// maxStatsDays bounds a report's range: days not rolled up are computed
// from job_runs, and a year is more than retention keeps anyway.
const maxStatsDays = 366

// stats serves the daily report. Without from/to it covers the last seven
// days, today included.
func (s *Server) stats(w http.ResponseWriter, r *http.Request) error {
	if err := onlyParams(r, "from", "to", "job", "group"); err != nil {
		return err
	}
	q := r.URL.Query()
	today := store.DayStart(s.now())
	to, err := queryDay(q.Get("to"), "to", today)
	if err != nil {
		return err
	}
	from, err := queryDay(q.Get("from"), "from", to.AddDate(0, 0, -6))
	if err != nil {
		return err
	}
	if from.After(to) {
		return invalidf("from %s is after to %s", from.Format(time.DateOnly), to.Format(time.DateOnly))
	}
	if days := int(to.Sub(from).Hours()/24) + 1; days > maxStatsDays {
		return invalidf("from %s to %s is %d days: at most %d per request", from.Format(time.DateOnly), to.Format(time.DateOnly), days, maxStatsDays)
	}
	f := store.StatsFilter{From: from, To: to, Group: q.Get("group"), Groups: readable(r)}
	if v := q.Get("job"); v != "" {
		var ok bool
		if f.JobID, ok = decimal(v); !ok || f.JobID <= 0 {
			return invalidf("job=%q: want a positive job id", v)
		}
	}
	if f.Group != "" && !wire.ValidName(f.Group) {
		return invalidf("group=%q is not a valid group name", f.Group)
	}
	rows, err := s.store.Stats(r.Context(), f)
	if err != nil {
		return err
	}
	out := apiv1.Stats{From: from.Format(time.DateOnly), To: to.Format(time.DateOnly), Rows: make([]apiv1.StatsRow, 0, len(rows))}
	for _, d := range rows {
		src := "rollup"
		if d.Live {
			src = "live"
		}
		out.Rows = append(out.Rows, apiv1.StatsRow{Day: d.Day.Format(time.DateOnly), JobID: d.JobID, Group: d.Group,
			Status: d.Status, Runs: d.Runs, TimedRuns: d.TimedRuns, P50MS: d.P50MS, P95MS: d.P95MS, P99MS: d.P99MS,
			MaxMS: d.MaxMS, Source: src})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// queryDay parses a YYYY-MM-DD parameter (a UTC day); def when empty.
func queryDay(v, name string, def time.Time) (time.Time, error) {
	if v == "" {
		return def, nil
	}
	d, err := time.Parse(time.DateOnly, v)
	if err != nil {
		return time.Time{}, invalidf("%s=%q: want a day as YYYY-MM-DD (UTC)", name, v)
	}
	return d, nil
}

// onlyParams refuses query parameters the endpoint does not know, so that
// a misspelt filter is an error rather than silently ignored.
func onlyParams(r *http.Request, known ...string) error {
	var unknown []string
	for k := range r.URL.Query() {
		if !slices.Contains(known, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		takes := strings.Join(known, ", ")
		if takes == "" {
			takes = "none"
		}
		return invalidf("unknown query parameter(s) %s: this endpoint takes %s", strings.Join(unknown, ", "), takes)
	}
	return nil
}
