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
			t.TriggerType = TriggerRetry
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
