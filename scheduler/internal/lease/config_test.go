package lease

import (
	"strings"
	"testing"
	"time"

	"github.com/jetjob/jetjob/internal/configtest"
)

// Validate keeps the renewal inside the TTL with room for the margin, so
// that a lease is always renewed before its local deadline.
func TestConfigValidate(t *testing.T) {
	cases := configtest.Cases[Config]{
		{"short TTL", Config{TTL: 2 * time.Second}, ""},
		{"TTL too short", Config{TTL: 100 * time.Millisecond}, "lease TTL 100ms: want at least 500ms"},
		{"negative renew", Config{Renew: -time.Second}, "lease renew interval -1s: want more than 0 and at most half the TTL (5s)"},
		{"renew over half the TTL", Config{Renew: 6 * time.Second}, "lease renew interval 6s: want more than 0 and at most half the TTL (5s)"},
		{"negative margin", Config{Margin: -time.Second}, "lease margin -1s: want at least 0"},
		{"margin past the renewal", Config{Renew: 5 * time.Second, Margin: 5 * time.Second}, "lease margin 5s: want at least 0 and less than TTL minus the renew interval"},
		{"long id", Config{ID: strings.Repeat("x", 201)}, "scheduler id longer than 200 characters"},
	}
	configtest.Run(t, cases, func(c Config) error { _, err := New(c, Deps{}); return err })
}
