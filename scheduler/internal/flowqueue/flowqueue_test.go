package flowqueue

import (
	"testing"
	"time"

	"github.com/jetjob/jetjob/shared/wire"
)

func TestOrder(t *testing.T) {
	ws := []Waiter{{Run: 5, At: 100}, {Run: 4, At: 100}, {Run: 9, At: 50, P: -1}, {Run: 7, At: 300, P: 10}, {Run: 2, At: 200}}
	Order(ws)
	var got []int64
	for _, w := range ws {
		got = append(got, w.Run)
	}
	want := []int64{7, 4, 5, 2, 9}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("order %v, want %v (priority desc, fire time, run id)", got, want)
		}
	}
}

func TestRateAt(t *testing.T) {
	now := time.UnixMilli(1_000_000).UTC()
	ms := func(v int64) time.Time { return time.UnixMilli(v).UTC() }
	r := wire.Rate{Count: 10, PeriodMS: 1000} // one start per 100 ms, ten at once
	for _, c := range []struct {
		name  string
		rate  wire.Rate
		tat   int64
		avail int
		next  time.Time
	}{
		{"no limit", wire.Rate{}, 0, 0, now},
		{"never used", r, 0, 10, now},
		{"tat in the past", r, 900_000, 10, now},
		{"three taken just now", r, 1_000_300, 7, now},
		{"all taken", r, 1_001_000, 0, ms(1_000_100)},
		{"reserved ahead", r, 1_001_550, 0, ms(1_000_650)},
		{"one per minute, just taken", wire.Rate{Count: 1, PeriodMS: 60_000}, 1_060_000, 0, ms(1_060_000)},
	} {
		got := RateAt(c.rate, c.tat, now)
		if got.Available != c.avail || !got.NextFreeAt.Equal(c.next) {
			t.Errorf("%s: %+v, want available %d next %v", c.name, got, c.avail, c.next)
		}
	}
}

func TestKeys(t *testing.T) {
	if k := GroupSlotsKey("billing"); k != "group.billing_slots" {
		t.Errorf("slots key %q", k)
	}
	if k := GroupRateKey("billing"); k != "rate.group.billing" {
		t.Errorf("rate key %q", k)
	}
}
