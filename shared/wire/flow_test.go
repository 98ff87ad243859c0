package wire

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseRate(t *testing.T) {
	for in, want := range map[string]Rate{
		"100/1m":     {Count: 100, PeriodMS: 60000},
		"5/1s":       {Count: 5, PeriodMS: 1000},
		" 1 / 250ms": {Count: 1, PeriodMS: 250},
		"":           {},
	} {
		got, err := ParseRate(in)
		if err != nil || got != want {
			t.Errorf("ParseRate(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for in, msg := range map[string]string{
		"100":        "want COUNT/PERIOD",
		"0/1s":       "count must be",
		"x/1s":       "count must be",
		"10/soon":    "period",
		"10/1ms":     "out of range",
		"10/48h":     "out of range",
		"1000001/1s": "count must be",
	} {
		if _, err := ParseRate(in); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("ParseRate(%q) = %v; want an error saying %q", in, err, msg)
		}
	}
	if s := (Rate{Count: 3, PeriodMS: 1500}).String(); s != "3/1.5s" {
		t.Errorf("String = %q", s)
	}
}

// A trigger with flow controls goes through encoding/json both ways and
// comes back whole; one without keeps the fast path's bytes (no "flow").
func TestTriggerFlowRoundTrip(t *testing.T) {
	tr := validTrigger()
	plain, err := EncodeTrigger(tr)
	if err != nil || strings.Contains(string(plain), "flow") {
		t.Fatalf("plain trigger: %s, %v", plain, err)
	}
	tr.Flow = &Flow{Priority: 7, GroupCap: 3, Key: "customer-42", HasKey: true, KeyCap: 1,
		Rates: []Rate{{Scope: RateGroup, Count: 10, PeriodMS: 1000}, {Scope: RateKey, Count: 1, PeriodMS: 60000}}}
	data, err := EncodeTrigger(tr)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeTrigger(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Flow, tr.Flow) {
		t.Fatalf("flow = %+v, want %+v", got.Flow, tr.Flow)
	}
}

func TestTriggerFlowValidation(t *testing.T) {
	for name, c := range map[string]struct {
		flow Flow
		msg  string
	}{
		"priority":       {Flow{Priority: 101}, "priority 101 is out of range"},
		"group cap":      {Flow{GroupCap: -1}, "group_cap -1"},
		"key cap no key": {Flow{KeyCap: 2}, "key_cap needs a key"},
		"key no has_key": {Flow{Key: "a"}, "without has_key"},
		"long key":       {Flow{Key: strings.Repeat("k", 256), HasKey: true}, "more than 255"},
		"key rate":       {Flow{Rates: []Rate{{Scope: RateKey, Count: 1, PeriodMS: 1000}}}, "scope key needs a key"},
		"scope":          {Flow{Rates: []Rate{{Scope: "world", Count: 1, PeriodMS: 1000}}}, `scope "world"`},
		"twice": {Flow{Rates: []Rate{{Scope: RateJob, Count: 1, PeriodMS: 1000}, {Scope: RateJob, Count: 2, PeriodMS: 1000}}},
			"two rates of scope job"},
		"period": {Flow{Rates: []Rate{{Scope: RateJob, Count: 1, PeriodMS: int64(25 * time.Hour / time.Millisecond)}}}, "period 25h0m0s"},
	} {
		tr := validTrigger()
		tr.V = Version
		tr.Flow = &c.flow
		if err := tr.Validate(); err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: Validate = %v; want %q", name, err, c.msg)
		}
	}
}
