package console

import (
	"fmt"
	"html/template"
	"strconv"
	"strings"
	"time"

	"github.com/jetjob/jetjob/scheduler/internal/i18n"
)

// funcs are the templates' helpers.
var funcs = template.FuncMap{
	"when":      when,
	"whenIn":    whenIn,
	"whenShort": whenShort,
	"ago":       ago,
	"dur":       dur,
	"ms":        ms,
	"statusCl":  statusClass,
	"join":      strings.Join,
	"hasPrefix": strings.HasPrefix,
	"pct":       pct,
	"deref":     func(p *time.Time) time.Time { return *p },
	"lower":     strings.ToLower,
	"upper":     strings.ToUpper,
	"rfc3339":   rfc3339,
	"logTime":   logTime,
	"dict":      dict,
	"attemptNo": attemptNo,
	"shardOf":   shardOf,
	"elapsed":   elapsed,
	"period":    durationText,
	"thousands": thousands,
	"inc":       func(i int) int { return i + 1 },
}

// thousands writes n with a comma between thousands: 1,234.
func thousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// elapsed is the time since t, to the second: "42s", "3m 07s",
// "1h 02m 09s". console.js counts on in the same form.
func elapsed(t *time.Time) string {
	if t == nil {
		return "—"
	}
	s := int(max(time.Since(*t), 0) / time.Second)
	switch {
	case s >= 3600:
		return fmt.Sprintf("%dh %02dm %02ds", s/3600, s/60%60, s%60)
	case s >= 60:
		return fmt.Sprintf("%dm %02ds", s/60, s%60)
	}
	return fmt.Sprintf("%ds", s)
}

// attemptNo is a run's attempt as people count: the API's attempt is 0
// for the first run of a fire, which the console shows as attempt 1.
func attemptNo(attempt int) int { return attempt + 1 }

// shardOf is a run's sharding-broadcast part as people count, "2/4" for
// part index 1 of 4, or "—" for a run that carries no part (total 0).
func shardOf(index, total int) string {
	if total <= 0 {
		return "—"
	}
	return fmt.Sprintf("%d/%d", index+1, total)
}

// when formats an instant for a table: UTC, seconds, no zone noise.
func when(t any) string {
	switch t := t.(type) {
	case time.Time:
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05")
	case *time.Time:
		if t == nil || t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05")
	}
	return fmt.Sprint(t)
}

// whenShort is when to the minute, for a list's narrow column (the
// seconds are in its title).
func whenShort(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04")
}

// whenIn formats t in zone (an IANA name), with its offset.
func whenIn(zone string, t time.Time) string {
	loc, err := time.LoadLocation(zone)
	if err != nil || zone == "" {
		loc = time.UTC
	}
	return t.In(loc).Format("2006-01-02 15:04:05 MST")
}

// ago is a short "3m ago" / "in 5s" relative to now, in English; the
// templates' ago is agoIn their language.
func ago(t time.Time) string { return agoIn(i18n.English, t) }

// agoIn is ago in l ("3m前").
func agoIn(l i18n.Lang, t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	d := time.Since(t)
	if d < 0 {
		return l.T("in %s", short(-d))
	}
	return l.T("%s ago", short(d))
}

func short(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// dur is the time between two instants of a run ("—" while open).
func dur(from, to *time.Time) string {
	if from == nil || to == nil {
		return "—"
	}
	d := to.Sub(*from)
	if d < time.Second {
		return fmt.Sprintf("%d ms", d.Milliseconds())
	}
	return d.Round(10 * time.Millisecond).String()
}

// ms formats an optional millisecond figure.
func ms(v *float64) string {
	if v == nil {
		return "—"
	}
	if *v >= 10000 {
		return fmt.Sprintf("%.1f s", *v/1000)
	}
	return fmt.Sprintf("%.0f ms", *v)
}

// pct formats an optional ratio in [0, 1] as a percentage.
func pct(v *float64) string {
	if v == nil {
		return "—"
	}
	return fmt.Sprintf("%.1f %%", *v*100)
}

// statusClass is the CSS class of a run status badge.
func statusClass(s string) string {
	switch s {
	case "SUCCEEDED":
		return "st-ok"
	case "FAILED", "TIMED_OUT", "LOST":
		return "st-bad"
	case "RUNNING", "TRIGGERED":
		return "st-run"
	case "CANCELLED", "DISCARDED", "SKIPPED", "EXPIRED":
		return "st-off"
	}
	return "st-wait"
}

// rfc3339 is an optional instant for a <time datetime> attribute.
func rfc3339(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// logTime formats a log line's time: UTC with milliseconds, the form
// console.js writes the lines it appends in.
func logTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.000") }

// dict builds a map from key, value pairs: how a page hands a partial
// template more than one value.
func dict(kv ...any) (map[string]any, error) {
	if len(kv)%2 != 0 {
		return nil, fmt.Errorf("dict: %d arguments, want key, value pairs", len(kv))
	}
	m := make(map[string]any, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		k, ok := kv[i].(string)
		if !ok {
			return nil, fmt.Errorf("dict: key %v is not a string", kv[i])
		}
		m[k] = kv[i+1]
	}
	return m, nil
}
