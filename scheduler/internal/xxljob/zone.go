package xxljob

import (
	"fmt"
	"strings"
	"time"

	"github.com/jetjob/jetjob/shared/schedule"
)

// xxl-job fires a CRON job in its admin JVM's time zone, which its database
// does not name; a zone given wrong moves every cron by hours. But for
// every running job it stores trigger_next_time, the next fire as the
// admin computed it (epoch ms): a zone in which that instant is a fire of
// the job's expression fits, one in which it is not is wrong. PickZone
// checks the zone the import is given against that evidence, or picks
// one (--tz auto).

// ZoneAuto asks PickZone to pick the zone from the evidence.
const ZoneAuto = "auto"

// candidateZones are the zones --tz auto tries, in order of preference
// when several fit the evidence equally (Asia/Shanghai before the other
// +08:00 zones: xxl-job's users are mostly there).
var candidateZones = []string{
	"UTC", "Asia/Shanghai", "Asia/Hong_Kong", "Asia/Taipei", "Asia/Singapore", "Asia/Tokyo",
	"Asia/Seoul", "Asia/Kolkata", "Asia/Jakarta", "Asia/Bangkok", "Asia/Ho_Chi_Minh", "Asia/Dubai",
	"Europe/London", "Europe/Berlin", "Europe/Paris", "Europe/Moscow", "America/New_York",
	"America/Chicago", "America/Denver", "America/Los_Angeles", "America/Sao_Paulo", "Australia/Sydney",
}

// ZoneCheck is what PickZone found: the zone the import uses and why.
type ZoneCheck struct {
	// Zone is the zone the jobs without one of their own fire in.
	Zone string `json:"zone"`
	// Evidence is how many running CRON jobs had a next fire to check.
	Evidence int `json:"evidence"`
	// Fits lists the candidate zones every checked next fire agrees with.
	Fits []string `json:"fits,omitempty"`
	// Note says in a sentence what was checked.
	Note string `json:"note"`
}

// zoneEvidence is a running CRON job's stored next fire.
type zoneEvidence struct {
	id   int64
	expr string
	next time.Time
}

func evidenceOf(d *Dump) []zoneEvidence {
	var ev []zoneEvidence
	for _, j := range d.Jobs {
		if j.ScheduleType != "CRON" || j.TriggerStatus != 1 || j.TriggerNextTime <= 0 || strings.TrimSpace(j.ScheduleTimezone) != "" {
			continue
		}
		expr := strings.TrimSpace(j.ScheduleConf)
		if _, err := schedule.Parse("quartz", expr, "UTC"); err != nil {
			continue // reported on the job's row
		}
		ev = append(ev, zoneEvidence{id: j.ID, expr: expr, next: time.UnixMilli(j.TriggerNextTime)})
	}
	return ev
}

// disagreement names the first evidence that zone contradicts, "" when
// every stored next fire is a fire of its expression in zone.
func disagreement(ev []zoneEvidence, zone string) string {
	for _, e := range ev {
		s, err := schedule.Parse("quartz", e.expr, zone)
		if err != nil {
			return fmt.Sprintf("job %d: %v", e.id, err)
		}
		loc, _ := time.LoadLocation(zone)
		if n, ok := s.Next(e.next.Add(-time.Second)); !ok || !n.Equal(e.next) {
			return fmt.Sprintf("job %d's next fire as xxl-job stored it, %s (%s in %s), is not a fire of %q there",
				e.id, e.next.UTC().Format(time.RFC3339), e.next.In(loc).Format("15:04:05"), zone, e.expr)
		}
	}
	return ""
}

// PickZone checks tz ("" for the default, UTC; ZoneAuto to pick) against
// the next fires xxl-job stored for its running CRON jobs. A given or
// default zone they contradict is an error naming the zones that fit;
// with ZoneAuto the first candidate that fits is taken, provided every
// zone that fits has the same offset now (else the evidence cannot tell
// them apart and the error asks for --tz).
func PickZone(d *Dump, tz string, now time.Time) (ZoneCheck, error) {
	ev := evidenceOf(d)
	var fits []string
	for _, z := range candidateZones {
		if disagreement(ev, z) == "" {
			fits = append(fits, z)
		}
	}
	zc := ZoneCheck{Evidence: len(ev), Fits: fits}
	switch {
	case tz == ZoneAuto && len(ev) == 0:
		return zc, fmt.Errorf("--tz auto: no running CRON job has a next fire time to tell xxl-job's zone by: give --tz ZONE")
	case tz == ZoneAuto && len(fits) == 0:
		return zc, fmt.Errorf("--tz auto: no zone jetjob tries fits the next fire times xxl-job stored: give --tz ZONE (xxl-job's admin JVM zone)")
	case tz == ZoneAuto:
		_, off0 := now.In(mustZone(fits[0])).Zone()
		for _, z := range fits[1:] {
			if _, off := now.In(mustZone(z)).Zone(); off != off0 {
				return zc, fmt.Errorf("--tz auto: the next fire times xxl-job stored fit zones of different offsets (%s): give --tz ZONE",
					strings.Join(fits, ", "))
			}
		}
		zc.Zone = fits[0]
		zc.Note = fmt.Sprintf("picked: the next fires xxl-job stored for %d running CRON jobs fit %s", len(ev), strings.Join(fits, ", "))
		return zc, nil
	}
	given := tz != ""
	if !given {
		tz = "UTC"
	}
	zc.Zone = tz
	if len(ev) == 0 {
		zc.Note = fmt.Sprintf("%s not checked: no running CRON job has a next fire time to check it by", tz)
		return zc, nil
	}
	if why := disagreement(ev, tz); why != "" {
		flag := "--tz " + tz
		if !given {
			flag = "the default zone, UTC,"
		}
		hint := "give --tz with xxl-job's admin JVM zone"
		if len(fits) > 0 {
			hint = fmt.Sprintf("zones that fit: %s; give --tz ZONE, or --tz auto", strings.Join(fits, ", "))
		}
		return zc, fmt.Errorf("%s does not fit xxl-job's own next fire times: %s. Every cron would fire at another hour than in xxl-job: %s",
			flag, why, hint)
	}
	zc.Note = fmt.Sprintf("%s checked: the next fires xxl-job stored for %d running CRON jobs are fires there", tz, len(ev))
	return zc, nil
}

func mustZone(name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		return time.UTC
	}
	return loc
}
