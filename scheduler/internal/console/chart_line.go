package console

import (
	"fmt"
	"strconv"
	"strings"
)

// lineChart is a chart of one or more series over the same days, drawn
// on the server like barChart: each series a polyline, with the y axis
// labelled at 0, half and the top, and a date every week on the x axis.
// A day a series has no value for breaks its line (a polyline per run of
// days with values), so a day without runs is not drawn as 0 ms.
type lineChart struct {
	Width, Height           int
	Left, Top, PlotW, PlotH int
	Bottom                  int
	YTicks, XTicks          []tick
	Lines                   []line
	// Unit is what the y axis counts ("%", "ms"), for the legend.
	Unit string
}

// line is one series: its name and class (the stroke colour) and its
// polylines' points ("x,y x,y …"), with a dot per value for its tooltip.
type line struct {
	Name, Class string
	Paths       []string
	Dots        []dot
}

type dot struct {
	X, Y  int
	Title string
}

// series is one line's values by day; nil where there is none.
type series struct {
	Name, Class string
	Values      []*float64
}

// newLineChart draws series over days (oldest first). top is the y axis'
// top: a fixed 100 for a percentage, else 0 to take the largest value.
func newLineChart(days []string, ss []series, unit string, top float64) lineChart {
	const width, height = 720, 140
	const left, topPad, bottom = 52, 8, 22
	c := lineChart{Width: left + width + 24, Height: topPad + height + bottom, Left: left, Top: topPad,
		PlotW: width, PlotH: height, Bottom: topPad + height, Unit: unit}
	if top == 0 {
		for _, s := range ss {
			for _, v := range s.Values {
				if v != nil && *v > top {
					top = *v
				}
			}
		}
	}
	if top == 0 || len(days) == 0 {
		return c // nothing to draw
	}
	y := func(v float64) int { return topPad + height - int(v/top*float64(height)) }
	for _, v := range []float64{0, top / 2, top} {
		c.YTicks = append(c.YTicks, tick{X: left - 6, Y: y(v), Label: axisLabel(v, unit)})
	}
	step := float64(width) / float64(max(len(days)-1, 1))
	x := func(i int) int { return left + int(float64(i)*step) }
	if len(days) == 1 {
		x = func(int) int { return left + width/2 }
	}
	for i, d := range days {
		if (len(days)-1-i)%7 == 0 {
			label := d
			if len(label) == len("2006-01-02") {
				label = label[5:]
			}
			c.XTicks = append(c.XTicks, tick{X: x(i), Y: topPad + height + 15, Label: label})
		}
	}
	for _, s := range ss {
		l := line{Name: s.Name, Class: s.Class}
		var pts []string
		flush := func() {
			if len(pts) > 0 {
				l.Paths = append(l.Paths, strings.Join(pts, " "))
				pts = nil
			}
		}
		for i, v := range s.Values {
			if v == nil {
				flush()
				continue
			}
			px, py := x(i), y(*v)
			pts = append(pts, strconv.Itoa(px)+","+strconv.Itoa(py))
			l.Dots = append(l.Dots, dot{X: px, Y: py, Title: fmt.Sprintf("%s %s: %s", days[i], s.Name, axisLabel(*v, unit))})
		}
		flush()
		c.Lines = append(c.Lines, l)
	}
	return c
}

// axisLabel writes a value with its unit, rounded for an axis.
func axisLabel(v float64, unit string) string {
	switch {
	case unit == "%":
		return strconv.FormatFloat(v, 'f', 0, 64) + "%"
	case unit == "ms" && v >= 10000:
		return strconv.FormatFloat(v/1000, 'f', 0, 64) + " s"
	case unit == "ms" && v >= 1000:
		return strconv.FormatFloat(v/1000, 'f', 1, 64) + " s"
	case unit == "ms":
		return strconv.FormatFloat(v, 'f', 0, 64) + " ms"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}
