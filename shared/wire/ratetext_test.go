package wire

import "testing"

func TestRateText(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""}, {"100/1m", "100/1m"}, {"100/60s", "100/1m"}, {"5/1h", "5/1h"}, {"5/3600s", "5/1h"},
		{"5/90s", "5/1m30s"}, {"1/250ms", "1/250ms"}, {"2/1h30m", "2/1h30m"}, {"3/24h", "3/24h"}, {" 7 / 10s ", "7/10s"},
		{"bad", "bad"},
	} {
		if got := CanonicalRate(c.in); got != c.want {
			t.Errorf("CanonicalRate(%q) = %q, want %q", c.in, got, c.want)
		}
		if r, err := ParseRate(c.want); err == nil && r.String() != c.want {
			t.Errorf("%q does not read back as itself: %q", c.want, r.String())
		}
	}
}
