package retention

import (
	"slices"
	"time"

	"github.com/jetjob/jetjob/scheduler/internal/store"
)

// Which days a round acts on, decided from what it found (the day
// partitions, the days with rows in the default partition, the days the
// rollup covers) without touching the database: the short tier tests
// these, the full tier the statements.

// bounds are a round's today (00:00 UTC) and its cutoff: a day before the
// cutoff ends at or before now - retention, all of it older than the
// retention, and may be dropped.
func bounds(now time.Time, retention time.Duration) (today, cutoff time.Time) {
	return store.DayStart(now), store.DayStart(now.Add(-retention))
}

// toCreate lists, in order, the days that get a partition: today and the
// ahead days after it, and the days with rows in the default partition
// that are inside the retention and not past those days; none that has
// one already.
func toCreate(today, cutoff time.Time, ahead int, parts map[time.Time]string, defaultDays []time.Time) []time.Time {
	want := map[time.Time]bool{}
	for i := 0; i <= ahead; i++ {
		want[today.AddDate(0, 0, i)] = true
	}
	horizon := today.AddDate(0, 0, ahead)
	for _, d := range defaultDays {
		if !d.Before(cutoff) && !d.After(horizon) {
			want[d] = true
		}
	}
	for d := range parts {
		delete(want, d)
	}
	return sortedDays(want)
}

// held lists, in order, the days that hold runs: those with a partition
// and those with rows in the default partition.
func held(parts map[time.Time]string, defaultDays []time.Time) []time.Time {
	set := map[time.Time]bool{}
	for d := range parts {
		set[d] = true
	}
	for _, d := range defaultDays {
		set[d] = true
	}
	return sortedDays(set)
}

// toRollUp lists the days of days that are over (before today) and that
// the rollup does not cover yet (done: covered for good).
func toRollUp(days []time.Time, today time.Time, done map[time.Time]bool) []time.Time {
	return slices.DeleteFunc(slices.Clone(days), func(d time.Time) bool { return !d.Before(today) || done[d] })
}

// toDrop lists the days of days older than the retention (before cutoff):
// dropped if the rollup covers them, which the dropping step checks.
func toDrop(days []time.Time, cutoff time.Time) []time.Time {
	return slices.DeleteFunc(slices.Clone(days), func(d time.Time) bool { return !d.Before(cutoff) })
}

func sortedDays(set map[time.Time]bool) []time.Time {
	out := make([]time.Time, 0, len(set))
	for d := range set {
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	return out
}
