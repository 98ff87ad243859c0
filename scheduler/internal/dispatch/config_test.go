package dispatch

import (
	"testing"
	"time"

	"github.com/jetjob/jetjob/internal/configtest"
)

// Validate refuses negative sizes and durations, naming the field; zero
// values are the defaults, and a negative TriggeredDelay means no delay.
func TestConfigValidate(t *testing.T) {
	cases := configtest.Cases[Config]{
		{"set", Config{MisfireThreshold: time.Second, FlushInterval: time.Millisecond, FlushSize: 10,
			TriggeredDelay: time.Minute, InFlight: 1}, ""},
		{"no triggered delay", Config{TriggeredDelay: -1}, ""},
		{"negative misfire threshold", Config{MisfireThreshold: -time.Second}, "dispatch: MisfireThreshold must be ≥ 0, got -1s"},
		{"negative flush interval", Config{FlushInterval: -time.Millisecond}, "dispatch: FlushInterval must be ≥ 0 (0: 20ms), got -1ms"},
		{"negative flush size", Config{FlushSize: -1}, "dispatch: FlushSize must be ≥ 0 (0: 2000), got -1"},
		{"negative in-flight cap", Config{InFlight: -5}, "dispatch: InFlight must be ≥ 0 (0: 4096), got -5"},
	}
	configtest.Run(t, cases, func(c Config) error { _, err := New(c, Deps{}); return err })
}
