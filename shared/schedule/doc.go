// Package schedule parses job schedules and computes their fire times. The
// scheduler's planner uses it to decide when a job runs next; the API uses it
// to validate user input (every error wraps ErrInvalid, an HTTP 400) and to
// preview the next fire times. Both must agree to the second, so all of the
// rules live here.
//
// # Types
//
//   - cron: a robfig/cron/v3 expression, either 6 fields with seconds
//     ("*/15 * * * * *") or the classic 5 fields ("0 9 * * 1-5", seconds = 0),
//     or a descriptor (@yearly, @monthly, @weekly, @daily, @hourly,
//     @every 10s). Fields are matched against the wall clock of the job's IANA
//     time zone (UTC when none is given); fire times are returned in UTC. A
//     TZ= or CRON_TZ= prefix is refused: the zone belongs in the timezone
//     field, where the API validates it and the planner finds it.
//   - quartz: a Quartz cron expression as Java's Quartz and xxl-job store
//     it, 6 or 7 fields "sec min hour day-of-month month day-of-week [year]"
//     with ? L W LW # and day-of-week 1-7 where 1 is Sunday
//     ("0 15 10 ? * 6L" is the last Friday of each month at 10:15). It is
//     read on the job zone's wall clock with the same DST rule as cron. Where
//     jetjob departs from Quartz (* read like ? in the day fields; a clear
//     error when both day fields name days) is described in quartz.go.
//     QuartzToCron converts the expressions that cron can say too.
//   - fix_rate: fires every interval, measured from the previous fire.
//   - fix_delay: fires an interval after the previous run ended; the planner
//     passes that end to Next, so Next is simply after+interval.
//   - once: fires at one RFC 3339 instant.
//   - none: never fires by itself (manual or API triggers only).
//
// Intervals (fix_rate, fix_delay, @every) are Go durations ("30s", "1m30s")
// or, for fix_rate and fix_delay, a bare number of seconds ("30"); they must
// lie between 1s and 366 days. A shorter interval would flood the
// dispatcher, a longer one is almost certainly a typo.
//
// @every is a constant delay independent of wall clocks and time zones: the
// next fire is the previous one plus the delay. As in robfig/cron, the delay
// is truncated to whole seconds ("@every 1.5s" fires every second) and fire
// times fall on whole seconds.
//
// # Daylight saving time
//
// One rule decides every cron and quartz fire time: a scheduled wall-clock time fires at
// the first instant at which the zone's clock reads that time or later. It
// settles both transitions without special cases, shown here for
// America/New_York:
//
//   - Spring forward (02:00 EST becomes 03:00 EDT): a time inside the skipped
//     hour, such as 02:30, fires at the first valid instant after the gap,
//     03:00 EDT. A daily 02:30 job therefore still runs that day, and all
//     skipped times collapse into that one fire: "0 */15 * * * *" fires at
//     01:45 EST, 03:00 EDT, 03:15 EDT.
//   - Fall back (02:00 EDT becomes 01:00 EST): a repeated time fires once, at
//     its first occurrence. "0 30 1 * * *" fires at 01:30 EDT only, and no
//     cron expression fires during the second pass through 01:00-01:59 EST,
//     hourly and sub-hourly ones included: "0 */15 * * * *" fires at
//     01:45 EDT and next at 02:00 EST, @hourly at 01:00 EDT and next at
//     02:00 EST. Use @every or fix_rate when the cadence must follow elapsed
//     time rather than the wall clock.
//
// robfig/cron/v3 (v3.0.1) on its own does neither: it never fires a time
// inside a spring-forward gap, and it fires a repeated time twice. So the
// package matches cron fields on a wall clock that has no transitions and
// maps the result to an instant itself (wallclock.go).
//
// # Time zones
//
// The time zone must be an IANA name such as "Europe/Berlin"; "" means UTC.
// "Local" is refused because it would make fire times depend on the machine
// that computes them. The zone database is embedded (time/tzdata) as a
// fallback, so minimal containers without /usr/share/zoneinfo still load
// zones. The zone is validated for every type but only cron and quartz use
// it: the other types count elapsed time or name an absolute instant.
package schedule
