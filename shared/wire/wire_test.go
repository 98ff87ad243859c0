package wire

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func validTrigger() *Trigger {
	return &Trigger{RunID: 7, JobID: 3, Group: "billing", Handler: "invoice", TriggerType: TriggerSchedule,
		ScheduledAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func TestTriggerRoundTrip(t *testing.T) {
	data, err := EncodeTrigger(validTrigger())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"v":1`) {
		t.Fatalf("encoded trigger lacks the version: %s", data)
	}
	got, err := DecodeTrigger(data)
	if err != nil {
		t.Fatal(err)
	}
	if got.RunID != 7 || got.Group != "billing" || !got.ScheduledAt.Equal(validTrigger().ScheduledAt) {
		t.Fatalf("round trip changed the trigger: %+v", got)
	}
}

func TestDecodeTriggerRejectsBadInput(t *testing.T) {
	cases := map[string]struct {
		json string
		want string
	}{
		"not json":        {`{"v":1,`, "malformed JSON"},
		"future version":  {`{"v":2,"run_id":1}`, "unsupported message version 2"},
		"no run id":       {`{"v":1,"job_id":1,"group":"g","handler":"h","trigger_type":"schedule","scheduled_at":"2026-01-01T00:00:00Z"}`, "run_id must be positive"},
		"bad group":       {`{"v":1,"run_id":1,"job_id":1,"group":"a.b","handler":"h","trigger_type":"schedule","scheduled_at":"2026-01-01T00:00:00Z"}`, `group "a.b"`},
		"bad type":        {`{"v":1,"run_id":1,"job_id":1,"group":"g","handler":"h","trigger_type":"cron","scheduled_at":"2026-01-01T00:00:00Z"}`, `unknown trigger_type "cron"`},
		"imported run":    {`{"v":1,"run_id":1,"job_id":1,"group":"g","handler":"h","trigger_type":"import","scheduled_at":"2026-01-01T00:00:00Z"}`, `unknown trigger_type "import"`},
		"shard overflow":  {`{"v":1,"run_id":1,"job_id":1,"group":"g","handler":"h","trigger_type":"schedule","scheduled_at":"2026-01-01T00:00:00Z","shard_index":3,"shard_total":3}`, "shard 3/3"},
		"negative cap":    {`{"v":1,"run_id":1,"job_id":1,"group":"g","handler":"h","trigger_type":"schedule","scheduled_at":"2026-01-01T00:00:00Z","max_concurrency":-1}`, "max_concurrency -1 is out of range"},
		"no scheduled at": {`{"v":1,"run_id":1,"job_id":1,"group":"g","handler":"h","trigger_type":"schedule"}`, "scheduled_at is required"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := DecodeTrigger([]byte(c.json))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one mentioning %q", err, c.want)
			}
		})
	}
	if _, err := DecodeTrigger([]byte(`{"v":9}`)); !errors.Is(err, ErrVersion) {
		t.Fatalf("future version: %v does not wrap ErrVersion", err)
	}
	big := validTrigger()
	big.Params = strings.Repeat("x", MaxParamsBytes+1)
	if _, err := EncodeTrigger(big); err == nil || !strings.Contains(err.Error(), "params are") {
		t.Fatalf("oversize params encoded: %v", err)
	}
}

func TestEventsValidation(t *testing.T) {
	at := time.Now()
	ok := Event{Kind: EventFinished, RunID: 1, JobID: 2, Status: StatusSucceeded, At: at}
	data, err := EncodeEvents(ok)
	if err != nil {
		t.Fatal(err)
	}
	if evs, err := DecodeEvents(data); err != nil || len(evs) != 1 || evs[0].Status != StatusSucceeded {
		t.Fatalf("decode: %v %+v", err, evs)
	}
	bad := []Event{
		{Kind: EventFinished, RunID: 1, JobID: 2, Status: StatusRunning, At: at},
		{Kind: EventStarted, RunID: 1, JobID: 2, Status: StatusFailed, At: at},
		{Kind: "paused", RunID: 1, JobID: 2, Status: StatusRunning, At: at},
		{Kind: EventStarted, RunID: 0, JobID: 2, Status: StatusRunning, At: at},
	}
	for _, e := range bad {
		if _, err := EncodeEvents(e); err == nil {
			t.Errorf("invalid event %+v encoded", e)
		}
	}
	for _, raw := range []string{`{"v":1,"events":[]}`, `{"v":0,"events":[{}]}`, `[1,2]`} {
		if _, err := DecodeEvents([]byte(raw)); err == nil {
			t.Errorf("DecodeEvents(%s) accepted", raw)
		}
	}
}

func TestStatusRankIsMonotonic(t *testing.T) {
	if !(StatusScheduled.Rank() < StatusTriggered.Rank() && StatusTriggered.Rank() < StatusRunning.Rank() &&
		StatusRunning.Rank() < StatusSucceeded.Rank()) {
		t.Fatal("ranks out of order")
	}
	for _, s := range []Status{StatusSucceeded, StatusFailed, StatusTimedOut, StatusCancelled, StatusSkipped, StatusDiscarded, StatusExpired, StatusLost} {
		if !s.Terminal() {
			t.Errorf("%s is not terminal", s)
		}
	}
	if _, err := ParseStatus("DONE"); err == nil {
		t.Error("unknown status parsed")
	}
}

func TestTruncateMessage(t *testing.T) {
	short := "fine"
	if TruncateMessage(short) != short {
		t.Fatal("short message changed")
	}
	long := strings.Repeat("é", MaxMessageBytes) // 2 bytes each
	got := TruncateMessage(long)
	if len(got) > MaxMessageBytes || !strings.HasSuffix(got, "[truncated]") || !utf8.ValidString(got) {
		t.Fatalf("truncated to %d bytes, valid UTF-8 %t, suffix %q", len(got), utf8.ValidString(got), got[len(got)-20:])
	}
}

// A script job's trigger carries its script through the encoder (which
// leaves the fast path for it) and back, newlines and all; a script of a
// language no worker runs, or of version 0, is refused.
func TestTriggerScript(t *testing.T) {
	tr := &Trigger{RunID: 1, JobID: 2, Group: "ops", Handler: "script", TriggerType: TriggerManual,
		ScheduledAt: time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC),
		Script:      &Script{Language: "python3", Version: 4, Source: "import sys\nprint(sys.argv[1])\n"}}
	data, err := EncodeTrigger(tr)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Count(data, []byte("\n")) != 0 {
		t.Fatalf("an encoded trigger holds a raw newline (a batch splits on them): %s", data)
	}
	got, err := DecodeTrigger(data)
	if err != nil {
		t.Fatal(err)
	}
	if got.Script == nil || *got.Script != *tr.Script {
		t.Fatalf("decoded script %+v, want %+v", got.Script, tr.Script)
	}
	for _, bad := range []Script{{Language: "ruby", Version: 1}, {Language: "bash", Version: 0}} {
		tr.Script = &bad
		if _, err := EncodeTrigger(tr); err == nil || !strings.Contains(err.Error(), "script") {
			t.Errorf("script %+v: %v, want refused", bad, err)
		}
	}
}
