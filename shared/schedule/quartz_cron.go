package schedule

import (
	"strconv"
	"strings"
	"time"
)

// QuartzToCron returns the cron expression (jetjob's cron type, robfig
// syntax with seconds) that fires exactly when the Quartz expression does,
// and false when cron cannot say it: an invalid expression, L, W or # in a
// day field, a year other than *, or a range that wraps around ("22-2",
// "FRI-MON"). Day-of-week numbers shift from Quartz's 1-7 (1 = Sunday) to
// cron's 0-6, names stay, and ? becomes *. An importer that keeps the
// quartz type needs none of this; it is for callers that prefer cron when
// nothing is lost.
func QuartzToCron(expr string) (string, bool) {
	expr = strings.TrimSpace(expr)
	q, err := parseQuartz(expr, time.UTC)
	if err != nil || q.wrapped || (q.dom != domAny && q.dom != domSet) || (q.dow != dowAny && q.dow != dowSet) {
		return "", false
	}
	f := strings.Fields(expr)
	if len(f) == 7 && f[6] != "*" {
		return "", false
	}
	dom := f[3]
	if dom == "?" {
		dom = "*"
	}
	out := strings.Join([]string{f[0], f[1], f[2], dom, f[4], cronWeekdays(f[5])}, " ")
	if _, err := parseCron(out, time.UTC); err != nil {
		return "", false // not expected: every accepted form has a cron spelling
	}
	return out, true
}

// cronWeekdays rewrites a valid Quartz day-of-week list without L or # for
// cron: each number n becomes n-1, names, * and steps stay.
func cronWeekdays(text string) string {
	switch strings.ToUpper(text) {
	case "?", "*":
		return "*"
	case "L": // Quartz's L alone is Saturday
		return "SAT"
	}
	parts := strings.Split(text, ",")
	for i, part := range parts {
		base, step, hasStep := strings.Cut(part, "/")
		ends := strings.Split(base, "-")
		for j, e := range ends {
			if n, err := strconv.Atoi(e); err == nil {
				ends[j] = strconv.Itoa(n - 1)
			}
		}
		parts[i] = strings.Join(ends, "-")
		if hasStep {
			parts[i] += "/" + step
		}
	}
	return strings.Join(parts, ",")
}
