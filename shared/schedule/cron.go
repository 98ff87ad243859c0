package schedule

import (
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// cronParser accepts 6 fields (with seconds) and the classic 5 (seconds = 0),
// plus descriptors. It never sees a TZ=/CRON_TZ= prefix: parseCron refuses
// those, because the zone belongs in the job's timezone field, where the API
// can validate it and the planner finds it.
var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour |
	cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// validationStart is where Parse looks for a first match to reject
// expressions that never fire ("0 0 0 31 2 *"). robfig searches five years,
// which from 2001 includes the leap day of 2004.
var validationStart = time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)

// parseCron parses a non-empty cron expression evaluated in loc.
func parseCron(expr string, loc *time.Location) (evaluator, error) {
	upper := strings.ToUpper(expr)
	for _, prefix := range []string{"CRON_TZ=", "TZ="} {
		if strings.HasPrefix(upper, prefix) {
			return nil, invalidf(nil, "invalid cron expression %q: remove the %s prefix and set the timezone field instead", expr, prefix)
		}
	}
	if f := strings.Fields(expr); f[0] == "@every" {
		return parseEvery(expr, f[1:])
	}
	parsed, err := cronParser.Parse(expr)
	if err != nil {
		return nil, invalidf(err, "invalid cron expression %q: %v", expr, err)
	}
	if err := checkSteps(expr); err != nil {
		return nil, err
	}
	spec, ok := parsed.(*cron.SpecSchedule)
	if !ok { // only @every yields another kind, and it was handled above
		return nil, invalidf(nil, "invalid cron expression %q: unsupported form", expr)
	}
	c := &cronSchedule{fields: *spec, loc: loc}
	c.fields.Location = time.UTC // matched on the civil clock, see wallclock.go
	if _, ok := c.nextMatch(validationStart); !ok {
		return nil, invalidf(nil, "invalid cron expression %q: it never fires (no date matches its day and month fields)", expr)
	}
	return c, nil
}

// cronField is a field's name and range, for checkSteps.
type cronField struct {
	name     string
	min, max int
}

// cronFields are the six fields, seconds first; a five-field expression
// has no seconds.
var cronFields = []cronField{{"second", 0, 59}, {"minute", 0, 59}, {"hour", 0, 23},
	{"day-of-month", 1, 31}, {"month", 1, 12}, {"day-of-week", 0, 6}}

// checkSteps refuses a step larger than its field's range ("*/61" in the
// minute field). robfig accepts one, and it then matches the range's first
// value only: "0 */61 * * * *" fires hourly, not what anyone means.
// expr has already parsed, so its fields are well formed.
func checkSteps(expr string) error {
	fields := strings.Fields(expr)
	if len(fields) == 0 || strings.HasPrefix(fields[0], "@") {
		return nil
	}
	names := cronFields[len(cronFields)-len(fields):]
	for i, f := range fields {
		for _, part := range strings.Split(f, ",") {
			_, step, ok := strings.Cut(part, "/")
			if !ok {
				continue
			}
			n, err := strconv.Atoi(step)
			if fd := names[i]; err == nil && n > fd.max-fd.min {
				return invalidf(nil, "invalid cron expression %q: step /%d in the %s field is larger than its range %d-%d (it would match only once, at the range's start)",
					expr, n, fd.name, fd.min, fd.max)
			}
		}
	}
	return nil
}

// parseEvery parses "@every <duration>" itself rather than through robfig,
// which silently turns a zero, negative or sub-second delay into 1s.
func parseEvery(expr string, args []string) (evaluator, error) {
	if len(args) != 1 {
		return nil, invalidf(nil, "invalid cron expression %q: want a duration like \"@every 10s\"", expr)
	}
	d, err := time.ParseDuration(args[0])
	if err != nil {
		return nil, invalidf(err, "invalid cron expression %q: want a duration like \"@every 10s\"", expr)
	}
	if err := checkInterval(d); err != nil {
		return nil, invalidf(nil, "invalid cron expression %q: @every %s", expr, err)
	}
	return everySchedule{delay: cron.Every(d).Delay}, nil
}

// cronSchedule evaluates cron fields on the wall clock of loc.
type cronSchedule struct {
	fields cron.SpecSchedule // Location is UTC: fed civil times only
	loc    *time.Location
}

// next applies the package's DST rule to the cron fields.
func (c *cronSchedule) next(after time.Time) (time.Time, bool) {
	return nextOnWallClock(c, c.loc, after)
}

// nextMatch returns the first whole-second civil time after from that
// matches the fields. robfig gives up after about five years; a satisfiable
// expression can need longer only around the skipped leap day of 2100
// (Feb 29 from 2097 is in 2104), so the search is resumed a few times.
func (c *cronSchedule) nextMatch(from time.Time) (time.Time, bool) {
	for range 4 {
		if m := c.fields.Next(from); !m.IsZero() {
			return m, true
		}
		from = time.Date(from.Year()+5, time.December, 31, 23, 59, 59, 0, time.UTC)
	}
	return time.Time{}, false
}

// everySchedule is cron's @every: a constant delay from the previous fire,
// on whole seconds, like robfig's ConstantDelaySchedule.
type everySchedule struct{ delay time.Duration }

func (e everySchedule) next(after time.Time) (time.Time, bool) {
	return after.Truncate(time.Second).Add(e.delay).UTC(), true
}
