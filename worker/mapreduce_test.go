package worker

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/jetjob/jetjob/shared/wire"
)

// Job.Map takes a list of 1 to MaxMapItems elements of at most
// MaxMapBytes as JSON, from a run that is no part, reduce or sharded run;
// what it refuses leaves the map as it was.
func TestJobMapBounds(t *testing.T) {
	t.Parallel()
	j := &Job{ShardTotal: 1, mapped: &outputBox{}}
	if err := j.Map([]int{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	if got := string(j.mapped.get()); got != "[1,2,3]" {
		t.Fatalf("mapped %s, want [1,2,3]", got)
	}
	if err := j.Map(make([]int, MaxMapItems)); err != nil {
		t.Errorf("%d items: %v", MaxMapItems, err)
	}
	for name, tc := range map[string]struct {
		items any
		want  string
	}{
		"too many":      {make([]int, MaxMapItems+1), "want 1 to 10000"},
		"empty":         {[]string{}, "want 1 to 10000"},
		"nil slice":     {[]string(nil), "not a JSON array"},
		"no list":       {map[string]int{"a": 1}, "not a JSON array"},
		"a string":      {"abc", "not a JSON array"},
		"too big":       {[]string{strings.Repeat("x", MaxMapBytes)}, "at most 262144"},
		"not encodable": {[]any{func() {}}, "unsupported type"},
	} {
		j.mapped.set([]byte("[9]"))
		err := j.Map(tc.items)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", name, err, tc.want)
		}
		if got := string(j.mapped.get()); got != "[9]" {
			t.Errorf("%s: refused, but the map is now %s", name, got)
		}
	}
	for name, j := range map[string]*Job{
		"a part":        {ShardTotal: 4, mapped: &outputBox{}, item: json.RawMessage(`1`), mapFire: 9},
		"a reduce run":  {ShardTotal: 1, mapped: &outputBox{}, mapFire: 9},
		"a sharded run": {ShardTotal: 4, mapped: &outputBox{}},
		"no worker's":   {ShardTotal: 1},
	} {
		if err := j.Map([]int{1}); err == nil {
			t.Errorf("%s: Map accepted", name)
		}
	}
}

// A part reads its item; any other run is told it is no part.
func TestJobItem(t *testing.T) {
	t.Parallel()
	var v struct{ File string }
	part := &Job{item: json.RawMessage(`{"File":"a.png"}`), mapFire: 3}
	if !part.IsMapPart() || part.Item(&v) != nil || v.File != "a.png" || part.MapFire() != 3 {
		t.Errorf("part: IsMapPart %v, item %+v, fire %d", part.IsMapPart(), v, part.MapFire())
	}
	var n int
	if err := part.Item(&n); err == nil {
		t.Error("an object item decoded into an int")
	}
	plain := &Job{}
	if plain.IsMapPart() || !errors.Is(plain.Item(&v), ErrNotMapPart) {
		t.Errorf("plain run: IsMapPart %v, Item %v", plain.IsMapPart(), plain.Item(&v))
	}
}

// The finished event carries the map only for a SUCCEEDED run, with its
// secrets masked, and asks for a reduce when the handler has one.
func TestMappedEvent(t *testing.T) {
	t.Parallel()
	r := &run{reduces: true}
	r.mapped.set([]byte(`["a","s3cret"]`))
	r.secrets = newRunSecrets(nil, map[string]string{"pw": "s3cret"})
	ev := wire.Event{Status: wire.StatusSucceeded}
	r.mappedEvent(&ev)
	if string(ev.Map) != `["a","****"]` || !ev.Reduce {
		t.Errorf("succeeded: map %s, reduce %v", ev.Map, ev.Reduce)
	}
	ev = wire.Event{Status: wire.StatusFailed}
	r.mappedEvent(&ev)
	if ev.Map != nil || ev.Reduce {
		t.Errorf("failed run's event carries map %s", ev.Map)
	}
}
