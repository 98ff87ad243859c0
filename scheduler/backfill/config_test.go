package backfill

import (
	"testing"
	"time"
)

// Validate refuses negative rates and sizes, naming the field; zero values
// are the defaults.
func TestConfigValidate(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  Config
		want string // "" for valid
	}{
		{"zero", Config{}, ""},
		{"set", Config{Interval: time.Second, PerSecond: 1, InFlight: 1, Batch: 1}, ""},
		{"negative interval", Config{Interval: -time.Second}, "backfill: Interval must be ≥ 0 (0: 1s), got -1s"},
		{"negative rate", Config{PerSecond: -1}, "backfill: PerSecond must be ≥ 0 (0: 10), got -1"},
		{"negative in-flight cap", Config{InFlight: -1}, "backfill: InFlight must be ≥ 0 (0: 10), got -1"},
		{"negative batch", Config{Batch: -1}, "backfill: Batch must be ≥ 0 (0: 50), got -1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.cfg.Validate()
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != c.want {
				t.Errorf("Validate() = %q, want %q", got, c.want)
			}
			if _, nerr := New(c.cfg, Deps{}); (nerr == nil) != (err == nil) {
				t.Errorf("New refused with %v where Validate said %v", nerr, err)
			}
		})
	}
}
