package results

import (
	"testing"
	"time"

	"github.com/jetjob/jetjob/internal/configtest"
)

// Validate refuses negative sizes and durations, naming the field; zero
// values are the defaults.
func TestConfigValidate(t *testing.T) {
	cases := configtest.Cases[Config]{
		{"set", Config{BatchSize: 10, AckWait: time.Minute, Linger: time.Millisecond}, ""},
		{"negative batch size", Config{BatchSize: -1}, "results: BatchSize must be ≥ 0 (0: 1000), got -1"},
		{"negative ack wait", Config{AckWait: -time.Second}, "results: AckWait must be ≥ 0 (0: 30s), got -1s"},
		{"negative linger", Config{Linger: -time.Millisecond}, "results: Linger must be ≥ 0 (0: 5ms), got -1ms"},
	}
	configtest.Run(t, cases, func(c Config) error { _, err := New(c, Deps{}); return err })
}
