package xxljob

import (
	"strings"
	"testing"
	"time"
)

// Each kind of xxl_job_log row maps to the finished run a user would
// expect, or to the reason it is left out: results by handle code, a
// failed trigger with its HTML message as text, broadcast parts, rows
// without a result, times read in the admin's zone.
func TestMapLog(t *testing.T) {
	sh, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	row := func(trig, handle int) LogRow {
		return LogRow{ID: 7, JobID: 3, Address: "http://10.0.0.7:9999/,http://10.0.0.8:9999/", Param: "days=7",
			TriggerTime: "2026-11-26 02:00:00", HandleTime: "2026-11-26 02:00:05", TriggerCode: trig, HandleCode: handle,
			TriggerMsg: `<span style="color:#00c0ef;" >调度失败</span><br>msg：address is empty`, HandleMsg: "rows: 12"}
	}
	for _, c := range []struct {
		name   string
		row    LogRow
		status string
		msg    string
	}{
		{"success", row(200, 200), "SUCCEEDED", "xxl-job log 7 (param days=7): rows: 12"},
		{"failure", row(200, 500), "FAILED", "xxl-job log 7 (param days=7): handle code 500: rows: 12"},
		{"timeout", row(200, 502), "TIMED_OUT", "xxl-job log 7 (param days=7): rows: 12"},
		{"failed trigger", row(500, 0), "FAILED", "xxl-job log 7 (param days=7): the trigger failed (code 500): 调度失败 msg：address is empty"},
	} {
		r, skip := MapLog(c.row, 42, sh, now)
		if skip != "" || r.Status != c.status || r.Message != c.msg || r.JobID != 42 {
			t.Errorf("%s: %+v (skipped: %q), want %s %q", c.name, r, skip, c.status, c.msg)
			continue
		}
		at := time.Date(2026, 11, 25, 18, 0, 0, 0, time.UTC) // 02:00 in Shanghai
		if !r.ScheduledAt.Equal(at) || !r.StartedAt.Equal(at) || r.WorkerID != "http://10.0.0.7:9999/" {
			t.Errorf("%s: scheduled %s started %s worker %q", c.name, r.ScheduledAt, r.StartedAt, r.WorkerID)
		}
		want := at.Add(5 * time.Second)
		if c.name == "failed trigger" {
			want = at
		}
		if !r.FinishedAt.Equal(want) {
			t.Errorf("%s: finished %s, want %s", c.name, r.FinishedAt, want)
		}
	}
	part := row(200, 200)
	part.ShardingParam = "1/3"
	if r, _ := MapLog(part, 1, sh, now); r.ShardIndex != 1 || r.ShardTotal != 3 {
		t.Errorf("broadcast part 1/3 read as %d/%d", r.ShardIndex, r.ShardTotal)
	}
	part.ShardingParam = "3/3"
	if r, _ := MapLog(part, 1, sh, now); r.ShardIndex != 0 || r.ShardTotal != 0 {
		t.Errorf("an invalid part 3/3 read as %d/%d, want none", r.ShardIndex, r.ShardTotal)
	}
	future := row(200, 200)
	future.TriggerTime = "2026-11-27 09:00:00" // 01:00 UTC, after now
	for name, c := range map[string]struct {
		row  LogRow
		want string
	}{
		"running":         {row(200, 0), SkipRunning},
		"never triggered": {row(0, 0), SkipNotTriggered},
		"in the future":   {future, SkipBadTime},
		"no time":         {LogRow{TriggerCode: 200, HandleCode: 200}, SkipBadTime},
	} {
		if _, skip := MapLog(c.row, 1, sh, now); skip != c.want {
			t.Errorf("%s: skipped %q, want %q", name, skip, c.want)
		}
	}
	long := row(200, 500)
	long.HandleMsg = strings.Repeat("at com.example.Deep.call(Deep.java:1)\n", 500)
	if r, _ := MapLog(long, 1, sh, now); len(r.Message) > 4096 {
		t.Errorf("a %d-byte stack trace kept as %d bytes", len(long.HandleMsg), len(r.Message))
	}
}
