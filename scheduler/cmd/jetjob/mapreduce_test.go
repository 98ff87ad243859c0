package main

import (
	"strings"
	"testing"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// runs get names a map/reduce run's place in its fire: the root, a part
// (no broadcast part) and the reduce run; a plain run says nothing of it.
func TestRunDetailMapFire(t *testing.T) {
	t.Parallel()
	fire := int64(40)
	for _, tc := range []struct {
		run  apiv1.Run
		want []string
	}{
		{apiv1.Run{ID: 40, MapFire: &fire}, []string{"Map fire:   this run (it mapped its items into parts)"}},
		{apiv1.Run{ID: 41, MapFire: &fire, ShardIndex: 2, ShardTotal: 5}, []string{"3/5 (map/reduce part; its handler's shard index 2)",
			"Map fire:   40 (a part of what it mapped)"}},
		{apiv1.Run{ID: 47, MapFire: &fire}, []string{"Map fire:   40 (reduces the outputs of what it mapped)"}},
		{apiv1.Run{ID: 48}, nil},
	} {
		var b strings.Builder
		if err := runDetail(&tc.run).write(&b); err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("run %d:\n%s\nwant %q", tc.run.ID, b.String(), w)
			}
		}
		if tc.want == nil && strings.Contains(b.String(), "Map fire") {
			t.Errorf("run %d of no map says:\n%s", tc.run.ID, b.String())
		}
	}
}
