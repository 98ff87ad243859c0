package backfill

import (
	"testing"
	"time"

	"github.com/jetjob/jetjob/internal/configtest"
)

// Validate refuses negative rates and sizes, naming the field; zero values
// are the defaults.
func TestConfigValidate(t *testing.T) {
	cases := configtest.Cases[Config]{
		{"set", Config{Interval: time.Second, PerSecond: 1, InFlight: 1, Batch: 1}, ""},
		{"negative interval", Config{Interval: -time.Second}, "backfill: Interval must be ≥ 0 (0: 1s), got -1s"},
		{"negative rate", Config{PerSecond: -1}, "backfill: PerSecond must be ≥ 0 (0: 10), got -1"},
		{"negative in-flight cap", Config{InFlight: -1}, "backfill: InFlight must be ≥ 0 (0: 10), got -1"},
		{"negative batch", Config{Batch: -1}, "backfill: Batch must be ≥ 0 (0: 50), got -1"},
	}
	configtest.Run(t, cases, func(c Config) error { _, err := New(c, Deps{}); return err })
}
