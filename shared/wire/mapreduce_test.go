package wire

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

// A trigger without map/reduce encodes byte for byte as before (the fast
// path, no "map" key); a part's and a reduce run's triggers round-trip.
func TestTriggerMapRoundTrip(t *testing.T) {
	tr := validTrigger()
	plain, err := EncodeTrigger(tr)
	if err != nil {
		t.Fatal(err)
	}
	if fast, ok := encodeTriggerFast(tr); !ok || !bytes.Equal(fast, plain) || strings.Contains(string(plain), `"map"`) {
		t.Fatalf("plain trigger: %s (fast path %v: %s)", plain, ok, fast)
	}
	for _, m := range []*MapRun{{Fire: 41, Item: json.RawMessage(`{"id":"a-1"}`)}, {Fire: 41, Reduce: true}} {
		tr := validTrigger()
		if !m.Reduce {
			tr.ShardIndex, tr.ShardTotal = 2, 3
		}
		tr.Map = m
		data, err := EncodeTrigger(tr)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeTrigger(data)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Map, m) {
			t.Errorf("map = %+v, want %+v (%s)", got.Map, m, data)
		}
	}
}

func TestTriggerMapValidation(t *testing.T) {
	for name, tc := range map[string]struct {
		m     MapRun
		total int
		want  string
	}{
		"no fire":             {MapRun{Item: json.RawMessage(`1`)}, 2, "fire must be positive"},
		"part without item":   {MapRun{Fire: 1}, 2, "needs its item"},
		"part without total":  {MapRun{Fire: 1, Item: json.RawMessage(`1`)}, 0, "needs shard_total"},
		"reduce with item":    {MapRun{Fire: 1, Reduce: true, Item: json.RawMessage(`1`)}, 0, "has no item"},
		"reduce as a part":    {MapRun{Fire: 1, Reduce: true}, 2, "is no part"},
		"item not JSON":       {MapRun{Fire: 1, Item: json.RawMessage(`{x`)}, 2, "not JSON"},
		"item past the bound": {MapRun{Fire: 1, Item: json.RawMessage(`"` + strings.Repeat("x", MaxMapBytes) + `"`)}, 2, "more than"},
	} {
		tr := validTrigger()
		tr.V, tr.ShardTotal, tr.Map = Version, tc.total, &tc.m
		if err := tr.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", name, err, tc.want)
		}
	}
}

func TestMapItemsBounds(t *testing.T) {
	list := func(n int) json.RawMessage { return json.RawMessage("[0" + strings.Repeat(",0", n-1) + "]") }
	if items, err := MapItems(list(MaxMapItems)); err != nil || len(items) != MaxMapItems {
		t.Errorf("%d items: %d, %v", MaxMapItems, len(items), err)
	}
	for name, l := range map[string]json.RawMessage{
		"too many":   list(MaxMapItems + 1),
		"empty":      json.RawMessage(`[]`),
		"an object":  json.RawMessage(`{"a":1}`),
		"not JSON":   json.RawMessage(`[1,`),
		"null":       json.RawMessage(`null`),
		"too big":    json.RawMessage(`["` + strings.Repeat("x", MaxMapBytes) + `"]`),
		"whitespace": json.RawMessage(`  `),
	} {
		if _, err := MapItems(l); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// An event's map is checked by the decoder: on a finished SUCCEEDED event
// only, a list within the bounds; reduce only with a map.
func TestEventMapValidation(t *testing.T) {
	at := time.Date(2026, 11, 28, 1, 2, 3, 0, time.UTC)
	ok := Event{Kind: EventFinished, RunID: 1, JobID: 2, Status: StatusSucceeded, At: at, Map: json.RawMessage(`[1,"b",{"c":3}]`), Reduce: true}
	data, err := EncodeEvents(ok)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := DecodeEvents(data)
	if err != nil || string(evs[0].Map) != `[1,"b",{"c":3}]` || !evs[0].Reduce {
		t.Fatalf("decoded %+v, %v from %s", evs, err, data)
	}
	for name, mut := range map[string]func(e *Event){
		"failed":         func(e *Event) { e.Status = StatusFailed },
		"started":        func(e *Event) { e.Kind, e.Status = EventStarted, StatusRunning },
		"not a list":     func(e *Event) { e.Map = json.RawMessage(`{"a":1}`) },
		"reduce, no map": func(e *Event) { e.Map = nil },
	} {
		e := ok
		mut(&e)
		if err := e.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestMapOutputsMessages(t *testing.T) {
	at := time.Date(2026, 11, 28, 1, 2, 3, 0, time.UTC)
	req := MapOutputsRequest{RunID: 5, ScheduledAt: at, WorkerID: "w-1", From: 3}
	data, err := EncodeControl(&req)
	if err != nil {
		t.Fatal(err)
	}
	var got MapOutputsRequest
	if err := DecodeControl(data, &got); err != nil || got != req {
		t.Fatalf("request %+v (%v), want %+v", got, err, req)
	}
	for name, r := range map[string]MapOutputsRequest{
		"no run":      {ScheduledAt: at, WorkerID: "w"},
		"no time":     {RunID: 5, WorkerID: "w"},
		"bad worker":  {RunID: 5, ScheduledAt: at, WorkerID: "a.b"},
		"from beyond": {RunID: 5, ScheduledAt: at, WorkerID: "w", From: MaxMapItems},
	} {
		if _, err := EncodeControl(&r); err == nil {
			t.Errorf("request %s: accepted", name)
		}
	}
	if _, err := EncodeControl(&MapOutputsReply{Total: 1, Outputs: []json.RawMessage{json.RawMessage(`1`), json.RawMessage(`2`)}}); err == nil {
		t.Error("a reply of more outputs than parts: accepted")
	}
	if _, err := EncodeControl(&MapOutputsReply{Total: 2, Outputs: []json.RawMessage{json.RawMessage(`{x`)}}); err == nil {
		t.Error("a reply with an output that is not JSON: accepted")
	}
}
