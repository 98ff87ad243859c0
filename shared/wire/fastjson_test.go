package wire

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// The fast trigger decoder must agree with encoding/json on everything it
// accepts, and accept what EncodeTrigger writes in the common case.
func TestDecodeTriggerFastAgreesWithEncodingJSON(t *testing.T) {
	base := Trigger{V: Version, RunID: 123456789, JobID: 42, Group: "billing", Handler: "sync",
		TriggerType: TriggerSchedule, ScheduledAt: time.Date(2026, 11, 23, 5, 45, 8, 0, time.UTC),
		MisfirePolicy: "fire_once", MisfireThresholdMS: 5000, BlockStrategy: "serial"}
	cases := []struct {
		name string
		edit func(*Trigger)
		fast bool // EncodeTrigger's output takes the fast path
	}{
		{"plain", func(*Trigger) {}, true},
		{"all fields", func(t *Trigger) {
			t.Params, t.Attempt, t.ShardIndex, t.ShardTotal, t.TimeoutMS = "x=1", 3, 2, 5, 60000
			t.TriggerType, t.BlockStrategy, t.MaxConcurrency, t.Secrets = TriggerRetry, "concurrent", 4, true
		}, true},
		{"milliseconds", func(t *Trigger) { t.ScheduledAt = t.ScheduledAt.Add(123 * time.Millisecond) }, true},
		{"nanoseconds", func(t *Trigger) { t.ScheduledAt = t.ScheduledAt.Add(123456789) }, true},
		{"leap day", func(t *Trigger) { t.ScheduledAt = time.Date(2028, 2, 29, 23, 59, 59, 0, time.UTC) }, true},
		{"epoch", func(t *Trigger) { t.ScheduledAt = time.Unix(0, 0).UTC() }, true},
		{"far future", func(t *Trigger) { t.ScheduledAt = time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC) }, true},
		{"zoned time", func(t *Trigger) { t.ScheduledAt = t.ScheduledAt.In(time.FixedZone("X", 3600)) }, false},
		{"params with quotes", func(t *Trigger) { t.Params = `{"a":1}` }, false},
		{"params with newline", func(t *Trigger) { t.Params = "a\nb" }, false},
		{"non-ASCII params", func(t *Trigger) { t.Params = "grüße" }, false},
		{"html escaped", func(t *Trigger) { t.Params = "<a&b>" }, false},
		{"largest run id", func(t *Trigger) { t.RunID = 1<<63 - 1 }, false},
	}
	for _, c := range cases {
		tr := base
		c.edit(&tr)
		data, err := EncodeTrigger(&tr)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var fast Trigger
		if ok := decodeTriggerFast(data, &fast); ok != c.fast {
			t.Errorf("%s: fast path taken %v, want %v (%s)", c.name, ok, c.fast, data)
		} else if ok {
			var slow Trigger
			if err := json.Unmarshal(data, &slow); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if !reflect.DeepEqual(fast, slow) || !fast.ScheduledAt.Equal(tr.ScheduledAt) {
				t.Errorf("%s: fast %+v, encoding/json %+v", c.name, fast, slow)
			}
		}
		got, err := DecodeTrigger(data)
		if err != nil || got.RunID != tr.RunID || got.Params != tr.Params || !got.ScheduledAt.Equal(tr.ScheduledAt) {
			t.Errorf("%s: DecodeTrigger: %+v, %v", c.name, got, err)
		}
	}
	// Shapes only another producer would write: left to encoding/json.
	for _, data := range []string{
		`{ "v":1}`, `{"v":1 }`, `{"v":null}`, `{"v":1.0}`, `{"v":-1}`, `{"v":01}`, `{"v":"1"}`,
		`{"unknown":1}`, `{"scheduled_at":"2026-11-23T05:45:08+01:00"}`, `{"scheduled_at":"2026-02-30T00:00:00Z"}`,
		`{"scheduled_at":"2026-11-23T24:00:00Z"}`, `{"scheduled_at":"2026-11-23T05:45:08.Z"}`,
		`{"scheduled_at":"1969-12-31T23:59:59Z"}`, `{"v":1}x`, `{"v":1,}`, `{"group":"a\u0000"}`, `[]`, ``,
	} {
		var tr Trigger
		if decodeTriggerFast([]byte(data), &tr) {
			t.Errorf("fast path took %s", data)
		}
	}
}

// FuzzDecodeTriggerFast: whatever the fast path accepts, encoding/json
// accepts too, with the same result.
func FuzzDecodeTriggerFast(f *testing.F) {
	tr := Trigger{V: Version, RunID: 7, JobID: 9, Group: "g", Handler: "h", TriggerType: TriggerManual,
		ScheduledAt: time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC), Params: "p", TimeoutMS: 10}
	data, _ := EncodeTrigger(&tr)
	f.Add(data)
	f.Add([]byte(`{"v":1,"scheduled_at":"2026-11-23T05:45:08.5Z"}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var fast Trigger
		if !decodeTriggerFast(data, &fast) {
			return
		}
		var slow Trigger
		if err := json.Unmarshal(data, &slow); err != nil {
			t.Fatalf("fast path took %q, encoding/json refuses it: %v", data, err)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q: fast %+v, encoding/json %+v", data, fast, slow)
		}
	})
}

func TestDecodeEventsFastAgreesWithEncodingJSON(t *testing.T) {
	at := time.Date(2026, 11, 23, 5, 45, 8, 123456789, time.UTC)
	started := Event{Kind: EventStarted, RunID: 1, JobID: 2, WorkerID: "w1", Status: StatusRunning, At: at,
		ScheduledAt: at.Truncate(time.Second), TriggerSeq: 99, TriggeredAt: at.Add(-time.Millisecond)}
	finished := Event{Kind: EventFinished, RunID: 1, JobID: 2, WorkerID: "w1", Status: StatusSucceeded, At: at.Add(time.Millisecond)}
	failed := finished
	failed.Status, failed.Message = StatusFailed, `boom: "quoted"`
	for _, c := range []struct {
		name string
		evs  []Event
		fast bool
	}{
		{"started and finished", []Event{started, finished}, true},
		{"one", []Event{finished}, true},
		{"message needing escapes", []Event{started, failed}, false},
	} {
		data, err := EncodeEvents(c.evs...)
		if err != nil {
			t.Fatal(err)
		}
		var fast Events
		if ok := decodeEventsFast(data, &fast); ok != c.fast {
			t.Errorf("%s: fast path taken %v, want %v (%s)", c.name, ok, c.fast, data)
		} else if ok {
			var slow Events
			if err := json.Unmarshal(data, &slow); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(fast, slow) {
				t.Errorf("%s: fast %+v, encoding/json %+v", c.name, fast, slow)
			}
		}
		got, err := DecodeEvents(data)
		if err != nil || len(got) != len(c.evs) || got[len(got)-1].Message != c.evs[len(c.evs)-1].Message ||
			!got[0].At.Equal(c.evs[0].At) || got[0].TriggerSeq != c.evs[0].TriggerSeq {
			t.Errorf("%s: DecodeEvents: %+v, %v", c.name, got, err)
		}
	}
}

// FuzzDecodeEventsFast: whatever the fast path accepts, encoding/json
// accepts too, with the same result.
func FuzzDecodeEventsFast(f *testing.F) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	data, _ := EncodeEvents(Event{Kind: EventStarted, RunID: 1, JobID: 2, WorkerID: "w", Status: StatusRunning, At: at,
		ScheduledAt: at, TriggerSeq: 3, TriggeredAt: at})
	f.Add(data)
	f.Add([]byte(`{"v":1,"events":[]}`))
	f.Add([]byte(`{"v":1,"events":[{}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var fast Events
		if !decodeEventsFast(data, &fast) {
			return
		}
		var slow Events
		if err := json.Unmarshal(data, &slow); err != nil {
			t.Fatalf("fast path took %q, encoding/json refuses it: %v", data, err)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q: fast %+v, encoding/json %+v", data, fast, slow)
		}
	})
}

// The fast encoders write exactly what json.Marshal writes, or decline.
func TestEncodeFastMatchesJSONMarshal(t *testing.T) {
	at := time.Date(2026, 11, 23, 5, 45, 8, 120000000, time.UTC)
	triggers := []Trigger{
		{V: Version, RunID: 1, JobID: 2, Group: "g", Handler: "h", TriggerType: TriggerSchedule, ScheduledAt: at},
		{V: Version, RunID: 1, JobID: 2, Group: "g", Handler: "h", Params: "x", TriggerType: TriggerRetry, ScheduledAt: at,
			Attempt: 2, ShardIndex: 1, ShardTotal: 3, TimeoutMS: 5, MisfirePolicy: "skip", MisfireThresholdMS: 5000, BlockStrategy: "serial"},
		{V: Version, RunID: 1, JobID: 2, Group: "g", Handler: "h", Params: `{"a":"<b>"}`, TriggerType: TriggerManual, ScheduledAt: at},
		{V: Version, RunID: 1, JobID: 2, Group: "g", Handler: "h", TriggerType: TriggerManual, ScheduledAt: at.In(time.FixedZone("X", 3600))},
	}
	for i, tr := range triggers {
		want, _ := json.Marshal(&tr)
		if got, ok := encodeTriggerFast(&tr); ok && string(got) != string(want) {
			t.Errorf("trigger %d: fast %s, json.Marshal %s", i, got, want)
		} else if !ok && i < 2 {
			t.Errorf("trigger %d: fast path declined %s", i, want)
		}
	}
	evs := []Event{
		{Kind: EventStarted, RunID: 1, JobID: 2, WorkerID: "w", Status: StatusRunning, At: at, ScheduledAt: at, TriggerSeq: 7, TriggeredAt: at},
		{Kind: EventFinished, RunID: 1, JobID: 2, Status: StatusSucceeded, At: at.Add(time.Nanosecond)},
	}
	want, _ := json.Marshal(Events{V: Version, Events: evs})
	if got, ok := encodeEventsFast(evs); !ok || string(got) != string(want) {
		t.Errorf("events: fast %s (%v), json.Marshal %s", got, ok, want)
	}
	evs[1].Message = "a\tb"
	if _, ok := encodeEventsFast(evs); ok {
		t.Error("events: fast path took a message that needs escaping")
	}
}

// FuzzEncodeTriggerFast: the fast encoder writes what json.Marshal does.
func FuzzEncodeTriggerFast(f *testing.F) {
	f.Add("g", "h", "params", int64(1), int64(1764000000123456789), 0)
	f.Add("g", "h", "", int64(1<<62), int64(0), 3600)
	f.Fuzz(func(t *testing.T, group, handler, params string, run int64, nanos int64, offset int) {
		tr := Trigger{V: Version, RunID: run, JobID: run, Group: group, Handler: handler, Params: params,
			TriggerType: TriggerManual, ScheduledAt: time.Unix(0, nanos).In(time.FixedZone("", offset%86400)), TimeoutMS: nanos % 1000}
		got, ok := encodeTriggerFast(&tr)
		if !ok {
			return
		}
		want, err := json.Marshal(&tr)
		if err != nil || string(got) != string(want) {
			t.Fatalf("fast %s, json.Marshal %s (%v)", got, want, err)
		}
	})
}
