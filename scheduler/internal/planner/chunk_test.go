package planner

import (
	"testing"
	"time"

	"github.com/jetjob/jetjob/scheduler/internal/runs"
)

// Chunks keep to one group, instant and lane (the worker a consistent_hash
// batch is bound for), in the order the fires come, close
// at the size limit and at maxBatchBytes, leave out fires that may not
// share a message, and a chunk of one is no batch.
func TestChunkBatches(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 2, 30, 0, 0, time.UTC)
	f := func(group string, sec int) runs.Fire {
		return runs.Fire{Group: group, ScheduledAt: t0.Add(time.Duration(sec) * time.Second)}
	}
	const small, big = 1500, maxBatchBytes/2 - 1 // two bigs fill a message
	fires := []runs.Fire{
		f("g", 0), f("g", 0), f("h", 0), f("g", 1), f("g", 0), // 0-4: g@0 ×3 chunk, h@0 alone, g@1 alone
		f("g", 0), f("g", 0), // 5-6: g@0 again: a new chunk (limit 3)
		f("g", 2), f("g", 2), f("g", 2), // 7-9: too big for three in one message
		f("g", 3), f("g", 3), // 10-11: the second may not share a message
		f("g", 4), f("g", 4), f("g", 4), f("g", 4), // 12-15: bound for w1, w2, w1 and the group's subject
	}
	sizes := []int{small, small, small, small, small, small, small, big, big, big, small, 0, small, small, small, small}
	lanes := make([]string, len(fires))
	lanes[12], lanes[13], lanes[14] = "w1", "w2", "w1"
	chunkBatches(fires, sizes, lanes, 3)
	got := make([]int, len(fires))
	for i, fr := range fires {
		got[i] = fr.Batch
	}
	want := []int{1, 1, 0, 0, 1, 4, 4, 5, 5, 0, 0, 0, 8, 0, 8, 0}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("batches %v, want %v", got, want)
		}
	}

	again := append([]runs.Fire(nil), fires...)
	for i := range again {
		again[i].Batch = 0
	}
	chunkBatches(again, sizes, lanes, 1)
	for i, fr := range again {
		if fr.Batch != 0 {
			t.Fatalf("limit 1: fire %d in batch %d, want none", i, fr.Batch)
		}
	}
}
