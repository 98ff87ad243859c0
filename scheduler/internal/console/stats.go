package console

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/shared/wire"
)

// The statistics page: the daily report (GET /api/v1/stats) over a range
// of days, as charts (runs by status, success rate, durations) and a table
// per group. The report holds percentiles per day, job and status, not
// the runs: a day's p50 here is the runs-weighted mean of its jobs' p50s,
// and its p99 the highest of their p99s (a bound, never an understatement),
// which the page says.

// statsDays is the range the page shows without one chosen.
const statsDays = 30

type statsPage struct {
	Group, From, To string
	Groups          []string
	Runs            barChart
	Success         lineChart
	Durations       lineChart
	PerGroup        []statsSummary
}

// statsSummary is a group's (or a day's) runs over the range.
type statsSummary struct {
	Group                   string
	Runs, Succeeded, Failed int64
	// Rate is Succeeded over the runs that ended succeeded or failed, in
	// [0, 1]; nil when none did.
	Rate *float64
	// P50 and P99 (ms) as the page's doc comment says; nil without timed runs.
	P50, P99 *float64
	p50sum   float64
	timed    int64
}

func (s *statsSummary) add(r apiv1.StatsRow) {
	s.Runs += r.Runs
	switch {
	case r.Status == string(wire.StatusSucceeded):
		s.Succeeded += r.Runs
	case slices.Contains(wire.FailedStatuses, wire.Status(r.Status)):
		s.Failed += r.Runs
	}
	if r.TimedRuns > 0 && r.P50MS != nil {
		s.p50sum += *r.P50MS * float64(r.TimedRuns)
		s.timed += r.TimedRuns
	}
	if r.P99MS != nil && (s.P99 == nil || *r.P99MS > *s.P99) {
		v := *r.P99MS
		s.P99 = &v
	}
}

// done computes the summary's rate and p50 once every row is added.
func (s *statsSummary) done() {
	if n := s.Succeeded + s.Failed; n > 0 {
		v := float64(s.Succeeded) / float64(n)
		s.Rate = &v
	}
	if s.timed > 0 {
		v := s.p50sum / float64(s.timed)
		s.P50 = &v
	}
}

func (c *Console) stats(w http.ResponseWriter, r *http.Request) error {
	u, err := c.me(r)
	if err != nil {
		return err
	}
	in := r.URL.Query()
	today := time.Now().UTC()
	data := statsPage{Group: in.Get("group"), From: in.Get("from"), To: in.Get("to")}
	if data.To == "" {
		data.To = today.Format(time.DateOnly)
	}
	if data.From == "" {
		to, err := time.Parse(time.DateOnly, data.To)
		if err != nil {
			to = today
		}
		data.From = to.AddDate(0, 0, -(statsDays - 1)).Format(time.DateOnly)
	}
	q := url.Values{"from": {data.From}, "to": {data.To}}
	if data.Group != "" {
		q.Set("group", data.Group)
	}
	var st apiv1.Stats
	if _, err := c.call(r, http.MethodGet, "/api/v1/stats", q, nil, &st); err != nil {
		return err // a bad range or another group: the API's words
	}
	if data.Groups, err = c.groupNames(r); err != nil {
		return err
	}
	data.fill(st)
	return c.render(w, r, http.StatusOK, "stats", page{Title: c.lang(r, u).T("Statistics"), User: u, Data: data})
}

// fill draws the report's charts and sums it up per group.
func (p *statsPage) fill(st apiv1.Stats) {
	from, err1 := time.Parse(time.DateOnly, st.From)
	to, err2 := time.Parse(time.DateOnly, st.To)
	if err1 != nil || err2 != nil {
		return
	}
	var days []string
	for d := from; !d.After(to); d = d.AddDate(0, 0, 1) {
		days = append(days, d.Format(time.DateOnly))
	}
	byDay := map[string]*statsSummary{}
	counts := map[string]map[string]int64{}
	byGroup := map[string]*statsSummary{}
	for _, row := range st.Rows {
		if byDay[row.Day] == nil {
			byDay[row.Day], counts[row.Day] = &statsSummary{}, map[string]int64{}
		}
		byDay[row.Day].add(row)
		counts[row.Day][row.Status] += row.Runs
		if byGroup[row.Group] == nil {
			byGroup[row.Group] = &statsSummary{Group: row.Group}
		}
		byGroup[row.Group].add(row)
	}
	dc := make([]apiv1.DayCounts, len(days))
	rate, p50, p99 := make([]*float64, len(days)), make([]*float64, len(days)), make([]*float64, len(days))
	for i, d := range days {
		dc[i] = apiv1.DayCounts{Day: d, ByStatus: counts[d]}
		if s := byDay[d]; s != nil {
			s.done()
			p50[i], p99[i] = s.P50, s.P99
			if s.Rate != nil {
				v := 100 * *s.Rate
				rate[i] = &v
			}
		}
	}
	p.Runs = dayChart(dc)
	p.Success = newLineChart(days, []series{{Name: "success rate", Class: "ok", Values: rate}}, "%", 100)
	p.Durations = newLineChart(days, []series{{Name: "p50", Class: "p50", Values: p50}, {Name: "p99", Class: "p99", Values: p99}}, "ms", 0)
	for _, s := range byGroup {
		s.done()
		p.PerGroup = append(p.PerGroup, *s)
	}
	slices.SortFunc(p.PerGroup, func(a, b statsSummary) int { return strings.Compare(a.Group, b.Group) })
}
