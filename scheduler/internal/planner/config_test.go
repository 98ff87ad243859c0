package planner

import (
	"testing"
	"time"

	"github.com/jetjob/jetjob/internal/configtest"
)

// Validate keeps planning within its window and refuses negative
// thresholds and timeouts; zero values are the defaults.
func TestConfigValidate(t *testing.T) {
	cases := configtest.Cases[Config]{
		{"set", Config{Window: time.Second, Interval: 100 * time.Millisecond, MisfireThreshold: time.Second,
			MaxCatchup: 1, BatchSize: 1, IdleTxTimeout: time.Second, TriggerBatch: 256}, ""},
		{"no trigger batches", Config{TriggerBatch: 1}, ""},
		{"window too short", Config{Window: time.Millisecond}, "planning window 1ms: want at least 100ms"},
		{"interval past the window", Config{Window: time.Second, Interval: 2 * time.Second}, "planning interval 2s: want between 10ms and the window (1s)"},
		{"negative misfire threshold", Config{MisfireThreshold: -time.Second}, "misfire threshold -1s: must not be negative"},
		{"negative catch-up", Config{MaxCatchup: -1}, "max catch-up -1: want at least 1"},
		{"negative batch size", Config{BatchSize: -1}, "planner batch size -1: want at least 1"},
		{"negative idle timeout", Config{IdleTxTimeout: -time.Second}, "planner idle transaction timeout -1s: must not be negative"},
		{"negative trigger batch", Config{TriggerBatch: -1}, "planner: TriggerBatch must be ≥ 0 (0: 16), got -1"},
		{"trigger batch past what a worker accepts", Config{TriggerBatch: 257}, "planner: TriggerBatch must be at most 256"},
		{"negative max lag", Config{MaxLag: -time.Second}, "planner: MaxLag must be ≥ 0 (0: 1s), got -1s"},
	}
	configtest.Run(t, cases, func(c Config) error { _, err := New(c, Deps{}); return err })
}
