package xxljob

import (
	"strings"
	"testing"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// The mapping fixes of issue #30, each a case that failed before it.

// A schedule xxl-job could not have fired is not imported, with the reason:
// a FIX_RATE over jetjob's 366 days (which the API refused half-way through
// an import), an expression Quartz refuses (both day fields *: xxl-job's
// admin never fired it), one whose years are past.
func TestScheduleRowsXXLJobNeverFired(t *testing.T) {
	now := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	for conf, want := range map[[2]string]string{
		{"FIX_RATE", "63072000"}:          "at most 366 days",
		{"CRON", "0 0 0 * * *"}:           "Support for specifying both a day-of-week AND a day-of-month parameter is not implemented",
		{"CRON", "0 0 0 ? * ?"}:           "Support for specifying both a day-of-week AND a day-of-month parameter is not implemented",
		{"CRON", "0 0 0 1 1 ? 1999"}:      "never fires again",
		{"CRON", "0 0 0 31 2 ?"}:          "never fires",
		{"CRON", "0 0 0 1 1 ? 2020-2025"}: "never fires again",
		{"CRON", "0/60 * * * * ?"}:        "Increment > 60 : 60",
	} {
		j := bean(5, "x")
		j.ScheduleType, j.ScheduleConf = conf[0], conf[1]
		jp := mustMap(t, []Job{j}, Options{Now: now}).Jobs[0]
		if jp.OK() || !strings.Contains(strings.Join(jp.Problems, "\n"), want) {
			t.Errorf("%s %q: problems %q, want one saying %q", conf[0], conf[1], jp.Problems, want)
		}
	}
	j := bean(5, "x")
	j.ScheduleType, j.ScheduleConf = "CRON", "0 0 0 1 1 ? 2030"
	if jp := mustMap(t, []Job{j}, Options{Now: now}).Jobs[0]; !jp.OK() {
		t.Errorf("a year still to come: %q", jp.Problems)
	}
}

// A trimmed handler name says so; a job records where it came from; a job
// with its own schedule_timezone keeps it.
func TestHandlerTrimSourceOwnZone(t *testing.T) {
	j := bean(8, "New York open")
	j.Handler = "  marketOpenHandler "
	j.ScheduleType, j.ScheduleConf, j.ScheduleTimezone = "CRON", "0 30 9 ? * MON-FRI", "America/New_York"
	jp := mustMap(t, []Job{j}, Options{Timezone: "Asia/Shanghai"}).Jobs[0]
	if !jp.OK() || jp.Spec.Handler != "marketOpenHandler" {
		t.Fatalf("%+v", jp)
	}
	if notes := strings.Join(jp.Changed, "\n"); !strings.Contains(notes, `executor handler "  marketOpenHandler " trimmed to "marketOpenHandler"`) {
		t.Errorf("no note of the trim: %s", notes)
	}
	if jp.Spec.Source != "xxl-job xxl_job#8" {
		t.Errorf("source %q", jp.Spec.Source)
	}
	if jp.Spec.Timezone != "America/New_York" {
		t.Errorf("zone %q, want the job's own America/New_York", jp.Spec.Timezone)
	}
	j.ScheduleTimezone = "Mars/Olympus"
	if jp := mustMap(t, []Job{j}, Options{}).Jobs[0]; jp.OK() {
		t.Error("an unknown schedule_timezone was accepted")
	}
}

// GLUE_PYTHON of an admin older than 3.x gets a note: it may have run
// under python there.
func TestPythonNoteBefore3(t *testing.T) {
	j := bean(3, "py")
	j.GlueType, j.GlueSource, j.Handler = "GLUE_PYTHON", "print(1)", ""
	p, err := Map(&Dump{Database: "d", Generation: Gen20, Groups: []Group{{ID: 1, AppName: "app"}}, Jobs: []Job{j}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if notes := strings.Join(p.Jobs[0].Changed, "\n"); !strings.Contains(notes, "GLUE_PYTHON runs python3") {
		t.Errorf("2.0–2.2 GLUE_PYTHON: no note: %s", notes)
	}
	if notes := strings.Join(mustMap(t, []Job{j}, Options{}).Jobs[0].Changed, "\n"); strings.Contains(notes, "GLUE_PYTHON runs python3") {
		t.Errorf("3.x GLUE_PYTHON: a needless note: %s", notes)
	}
}

// A re-import matched by source follows a changed group prefix or
// description: Diff names the move and the rename, Apply makes them.
func TestReimportMovesAndRenames(t *testing.T) {
	cur := apiv1.Job{ID: 9, Version: 2, JobSpec: apiv1.JobSpec{Group: "old-app", Name: "a-1", Source: "xxl-job d#1",
		Handler: "h", ScheduleType: "none", MisfirePolicy: "skip", RouteStrategy: "first", BlockStrategy: "serial"}}
	want := cur.JobSpec
	want.Group, want.Name = "new-app", "b-1"
	if d := Diff(cur, want, false); strings.Join(d, ",") != "group,name" {
		t.Errorf("Diff = %v, want [group name]", d)
	}
	if s := Apply(cur, want, false); s.Group != "new-app" || s.Name != "b-1" || s.Source != "xxl-job d#1" {
		t.Errorf("Apply = %+v", s)
	}
}

// dumpWithNext is a dump of one running CRON job whose next fire xxl-job
// stored as at.
func dumpWithNext(expr string, at time.Time) *Dump {
	return &Dump{Jobs: []Job{{ID: 2, ScheduleType: "CRON", ScheduleConf: expr, TriggerStatus: 1, TriggerNextTime: at.UnixMilli()}}}
}

// The zone is checked against xxl-job's stored next fires: a wrong one
// (UTC by default) is refused naming the zones that fit, auto picks one,
// and without evidence the given zone is taken unchecked.
func TestPickZone(t *testing.T) {
	now := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	shanghai := dumpWithNext("0 0 2 * * ?", time.Date(2030, 1, 1, 18, 0, 0, 0, time.UTC)) // 02:00 +08:00
	if _, err := PickZone(shanghai, "", now); err == nil ||
		!strings.Contains(err.Error(), "the default zone, UTC, does not fit") || !strings.Contains(err.Error(), "Asia/Shanghai") {
		t.Errorf("default UTC against Shanghai evidence: %v", err)
	}
	if _, err := PickZone(shanghai, "Europe/Berlin", now); err == nil || !strings.Contains(err.Error(), "--tz Europe/Berlin does not fit") {
		t.Errorf("--tz Europe/Berlin against Shanghai evidence: %v", err)
	}
	zc, err := PickZone(shanghai, "Asia/Shanghai", now)
	if err != nil || zc.Zone != "Asia/Shanghai" || zc.Evidence != 1 {
		t.Errorf("--tz Asia/Shanghai: %+v, %v", zc, err)
	}
	zc, err = PickZone(shanghai, ZoneAuto, now)
	if err != nil || zc.Zone != "Asia/Shanghai" {
		t.Errorf("--tz auto: %+v, %v", zc, err)
	}
	// Hourly fires fit every whole-hour zone: auto cannot tell them apart.
	if _, err := PickZone(dumpWithNext("0 0 * * * ?", time.Date(2030, 1, 1, 18, 0, 0, 0, time.UTC)), ZoneAuto, now); err == nil ||
		!strings.Contains(err.Error(), "different offsets") {
		t.Errorf("--tz auto on hourly evidence: %v", err)
	}
	if _, err := PickZone(&Dump{}, ZoneAuto, now); err == nil || !strings.Contains(err.Error(), "no running CRON job") {
		t.Errorf("--tz auto without evidence: %v", err)
	}
	if zc, err := PickZone(&Dump{}, "", now); err != nil || zc.Zone != "UTC" || !strings.Contains(zc.Note, "not checked") {
		t.Errorf("default without evidence: %+v, %v", zc, err)
	}
	// A stopped job (trigger_next_time 0) or one with its own zone is no
	// evidence.
	own := dumpWithNext("0 0 2 * * ?", time.Date(2030, 1, 1, 18, 0, 0, 0, time.UTC))
	own.Jobs[0].ScheduleTimezone = "Asia/Shanghai"
	if zc, err := PickZone(own, "", now); err != nil || zc.Evidence != 0 {
		t.Errorf("a job with its own zone counted as evidence: %+v, %v", zc, err)
	}
}
