package schedule

import (
	"testing"
	"time"
)

// BenchmarkNext measures the planner's hot call: one cron Next in a zone
// with DST, from the previous fire.
func BenchmarkNext(b *testing.B) {
	for _, expr := range []string{"0 */5 * * * *", "0 30 2 * * *", "@every 10s"} {
		s, err := Parse("cron", expr, "America/New_York")
		if err != nil {
			b.Fatal(err)
		}
		b.Run(expr, func(b *testing.B) {
			after := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
			for b.Loop() {
				after, _ = s.Next(after)
			}
		})
	}
}
