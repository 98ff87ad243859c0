package console

import (
	"fmt"
	"slices"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// Charts are SVG drawn on the server: a page needs no chart library and
// shows its figures without scripts. The template draws the shapes; this
// file computes them.

// barChart is a stacked bar chart: one bar per day, one segment per
// status.
type barChart struct {
	// Width and Height are the whole drawing's (the viewBox); the bars
	// stand in the plot area right of the y axis' labels and above the
	// x axis' dates: Left, Top, PlotW and PlotH.
	Width, Height           int
	Left, Top, PlotW, PlotH int
	Bottom                  int // the plot area's bottom edge (Top + PlotH)
	YTicks                  []tick
	XTicks                  []tick
	Bars                    []bar
	// Max is the tallest bar's total (the y axis' top).
	Max int64
	// Legend lists the statuses drawn, in stacking order.
	Legend []legendEntry
}

type bar struct {
	X, W     int
	Label    string // the day
	Total    int64
	Segments []segment
}

type segment struct {
	Y, H   int
	Class  string // statusClass of the status: the fill colour
	Status string
	Runs   int64
	Title  string // the tooltip
}

// tick is an axis label: a y tick at height Y, an x tick (a date) under
// the bar centred at X.
type tick struct {
	X, Y  int
	Label string
}

type legendEntry struct {
	Status, Class string
}

// stackOrder puts failures at the bottom of a bar, where they are seen.
var stackOrder = []string{"FAILED", "TIMED_OUT", "LOST", "SUCCEEDED", "CANCELLED", "DISCARDED", "SKIPPED", "EXPIRED",
	"RUNNING", "TRIGGERED", "SCHEDULED"}

// dayChart draws days (oldest first) as stacked bars.
func dayChart(days []apiv1.DayCounts) barChart {
	const width, height, gap = 720, 160, 2
	const left, top, bottom = 44, 8, 22 // room for the axes' labels
	c := barChart{Width: left + width + 8, Height: top + height + bottom, Left: left, Top: top,
		PlotW: width, PlotH: height, Bottom: top + height}
	seen := map[string]bool{}
	for _, d := range days {
		var total int64
		for s, n := range d.ByStatus {
			total += n
			if n > 0 {
				seen[s] = true
			}
		}
		c.Max = max(c.Max, total)
	}
	for _, s := range stackOrder {
		if seen[s] {
			c.Legend = append(c.Legend, legendEntry{Status: s, Class: statusClass(s)})
		}
	}
	for s := range seen {
		if !slices.Contains(stackOrder, s) {
			c.Legend = append(c.Legend, legendEntry{Status: s, Class: statusClass(s)})
		}
	}
	if c.Max == 0 {
		return c // no runs: no chart
	}
	// The y axis: 0, half and the tallest day.
	for _, v := range []int64{0, c.Max / 2, c.Max} {
		if v == c.Max/2 && (v == 0 || v == c.Max) {
			continue
		}
		c.YTicks = append(c.YTicks, tick{X: left - 6, Y: top + height - int(float64(v)/float64(c.Max)*float64(height)),
			Label: fmt.Sprint(v)})
	}
	bw := width / len(days)
	for i, d := range days {
		b := bar{X: left + i*bw + gap/2, W: max(bw-gap, 1), Label: d.Day}
		// The x axis: a date every week, counted back from the newest day.
		if (len(days)-1-i)%7 == 0 {
			label := d.Day
			if len(label) == len("2006-01-02") {
				label = label[5:] // MM-DD: the year is this month's
			}
			c.XTicks = append(c.XTicks, tick{X: b.X + b.W/2, Y: top + height + 15, Label: label})
		}
		y := top + height
		for _, l := range c.Legend {
			n := d.ByStatus[l.Status]
			if n == 0 {
				continue
			}
			b.Total += n
			h := int(float64(n) / float64(c.Max) * float64(height))
			h = max(h, 1)
			y -= h
			b.Segments = append(b.Segments, segment{Y: y, H: h, Class: l.Class, Status: l.Status, Runs: n,
				Title: fmt.Sprintf("%s: %d %s", d.Day, n, l.Status)})
		}
		c.Bars = append(c.Bars, b)
	}
	return c
}
