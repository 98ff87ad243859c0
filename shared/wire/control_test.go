package wire

import (
	"strings"
	"testing"
	"time"
)

// Control messages arrive from other processes: malformed ones are refused
// with an error that names the problem.
func TestControlMessagesValidated(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	good := SupersedeQuery{RunID: 1, JobID: 2, ScheduledAt: at, Cutoff: at.Add(time.Second)}
	for _, c := range []struct {
		data, want string
	}{
		{`{"v":1,"op":"ping"}`, ""},
		{`{"v":1,"op":"idle_beat","job_id":4}`, ""},
		{`{"v":1,"op":"idle_beat"}`, "positive job_id"},
		{`{"v":1,"op":"run_active","run_id":9}`, ""},
		{`{"v":1,"op":"run_active","job_id":4}`, "positive run_id"},
		{`{"v":1,"op":"run_active","job_id":4,"run_id":9,"lock":"job.4_part2"}`, ""},
		{`{"v":1,"op":"run_active","job_id":4,"run_id":9,"lock":"job.4.>"}`, "lock \"job.4.>\" is not a job lock key"},
		{`{"v":1,"op":"reboot"}`, "unknown op"},
		{`{"v":2,"op":"ping"}`, "unsupported message version"},
		{`{"v":1,`, "malformed JSON"},
	} {
		var req ControlRequest
		err := DecodeControl([]byte(c.data), &req)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: error %v, want %q", c.data, err, c.want)
		}
	}
	for _, c := range []struct {
		name string
		qs   []SupersedeQuery
		want string
	}{
		{"one query", []SupersedeQuery{good}, ""},
		{"none", nil, "0 queries"},
		{"too many", make([]SupersedeQuery, MaxSupersedeQueries+1), "257 queries"},
		{"no run", []SupersedeQuery{{JobID: 2, ScheduledAt: at, Cutoff: at}}, "must be positive"},
		{"no cutoff", []SupersedeQuery{{RunID: 1, JobID: 2, ScheduledAt: at}}, "cutoff are required"},
	} {
		_, err := EncodeControl(&SupersedeRequest{Queries: c.qs})
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
	data, err := EncodeControl(&SupersedeRequest{Queries: []SupersedeQuery{good}})
	if err != nil {
		t.Fatal(err)
	}
	var back SupersedeRequest
	if err := DecodeControl(data, &back); err != nil || len(back.Queries) != 1 || !back.Queries[0].Cutoff.Equal(good.Cutoff) {
		t.Errorf("round trip: %v %+v", err, back)
	}
}

// A recorded notice names its scheduler and at least one positive run id;
// anything else is refused, and a good one survives the round trip.
func TestRecordedNoticeValidated(t *testing.T) {
	for _, c := range []struct {
		data, want string
	}{
		{`{"v":1,"scheduler":"s1","runs":[4,5]}`, ""},
		{`{"v":1,"scheduler":"","runs":[4]}`, "scheduler must be 1-255 characters"},
		{`{"v":1,"scheduler":"s1","runs":[]}`, "1-256000 runs, got 0"},
		{`{"v":1,"scheduler":"s1","runs":[4,0]}`, "run id 0 must be positive"},
		{`{"v":2,"scheduler":"s1","runs":[4]}`, "unsupported message version"},
		{`{"v":1,"scheduler":"s1","runs":["4"]}`, "malformed JSON"},
	} {
		var n RecordedNotice
		err := DecodeControl([]byte(c.data), &n)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: error %v, want %q", c.data, err, c.want)
		}
	}
	data, err := EncodeControl(&RecordedNotice{Scheduler: "s1", Runs: []int64{7, 8}})
	if err != nil {
		t.Fatal(err)
	}
	var back RecordedNotice
	if err := DecodeControl(data, &back); err != nil || back.Scheduler != "s1" || len(back.Runs) != 2 || back.Runs[1] != 8 {
		t.Errorf("round trip: %v %+v", err, back)
	}
	if _, err := EncodeControl(&RecordedNotice{Scheduler: "s1"}); err == nil {
		t.Error("a notice of no runs was encoded")
	}
}
