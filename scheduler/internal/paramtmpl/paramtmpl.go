// Package paramtmpl renders a job's params as a template over the fire
// they are for (a job with params_template on): a daily job that loads
// "yesterday's" partition names its day in its params, and each fire —
// scheduled, caught up, backfilled, triggered — gets its own day, rendered
// once when its run is written and stored on the run.
//
// Templates are Go text/template with a small, fixed set of functions:
//
//	{{ .ScheduledAt | date "2006-01-02" }}              the fire's day in the job's zone
//	{{ .ScheduledAt | add "-24h" | date "2006-01-02" }} a duration earlier or later
//	{{ .ScheduledAt | addDays -1 | date "20060102" }}   calendar days (DST-safe)
//	{{ .ScheduledAt | unix }}                           Unix seconds
//	{{ .JobID }}
//
// .ScheduledAt is the run's scheduled time in the job's time zone. A
// workflow's node params are templates of their own (package workflow).
package paramtmpl

import (
	"bytes"
	"errors"
	"fmt"
	"text/template"
	"time"

	"github.com/jetjob/jetjob/shared/wire"
)

// ErrInvalid marks a template refused when a job is written (HTTP 400).
var ErrInvalid = errors.New("invalid params template")

// Data is what a template sees.
type Data struct {
	ScheduledAt time.Time
	JobID       int64
}

var funcs = template.FuncMap{
	"date": func(layout string, t time.Time) string { return t.Format(layout) },
	"add": func(d string, t time.Time) (time.Time, error) {
		v, err := time.ParseDuration(d)
		if err != nil {
			return t, fmt.Errorf("add %q: want a duration such as -24h or 90m", d)
		}
		return t.Add(v), nil
	},
	"addDays": func(n int, t time.Time) time.Time { return t.AddDate(0, 0, n) },
	"unix":    func(t time.Time) int64 { return t.Unix() },
}

// Template is a parsed params template.
type Template struct {
	t   *template.Template
	loc *time.Location
}

// Parse parses params as a template rendered in zone (an IANA name; ""
// is UTC). The error names the problem; a template is also tried once,
// so that a mistake that only shows when it runs (an unknown field, a bad
// duration) is refused when the job is written, not at its first fire.
func Parse(params, zone string) (*Template, error) {
	loc := time.UTC
	if zone != "" && zone != "UTC" {
		var err error
		if loc, err = time.LoadLocation(zone); err != nil {
			return nil, fmt.Errorf("%w: time zone %q: %v", ErrInvalid, zone, err)
		}
	}
	t, err := template.New("params").Funcs(funcs).Option("missingkey=error").Parse(params)
	if err != nil {
		return nil, fmt.Errorf("%w: %v (known: .ScheduledAt, .JobID; functions date, add, addDays, unix)", ErrInvalid, err)
	}
	tp := &Template{t: t, loc: loc}
	if _, err := tp.Render(Data{ScheduledAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), JobID: 1}); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return tp, nil
}

// Render fills the template for one fire: d.ScheduledAt is shown in the
// template's zone. The result is bounded like any params.
func (tp *Template) Render(d Data) (string, error) {
	d.ScheduledAt = d.ScheduledAt.In(tp.loc)
	var b bytes.Buffer
	if err := tp.t.Execute(&bounded{w: &b, n: wire.MaxParamsBytes}, d); err != nil {
		return "", fmt.Errorf("params template: %w", err)
	}
	return b.String(), nil
}

// Render parses and renders in one go: for the places that render one
// fire of a job (a manual trigger, a backfill's run).
func Render(params, zone string, d Data) (string, error) {
	tp, err := Parse(params, zone)
	if err != nil {
		return "", err
	}
	return tp.Render(d)
}

// bounded fails a write past n bytes.
type bounded struct {
	w *bytes.Buffer
	n int
}

func (b *bounded) Write(p []byte) (int, error) {
	if b.w.Len()+len(p) > b.n {
		return 0, fmt.Errorf("rendered params are longer than %d bytes", b.n)
	}
	return b.w.Write(p)
}
