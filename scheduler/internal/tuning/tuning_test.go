package tuning

import (
	"testing"
	"time"
)

func TestNotNegative(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{NotNegative("dispatch", "FlushSize", -1, "2000"), "dispatch: FlushSize must be ≥ 0 (0: 2000), got -1"},
		{NotNegative("dispatch", "FlushInterval", -time.Millisecond, "20ms"), "dispatch: FlushInterval must be ≥ 0 (0: 20ms), got -1ms"},
		{NotNegative("dispatch", "MisfireThreshold", -time.Second, ""), "dispatch: MisfireThreshold must be ≥ 0, got -1s"},
	} {
		if c.err == nil || c.err.Error() != c.want {
			t.Errorf("got %v, want %q", c.err, c.want)
		}
	}
	if err := NotNegative("x", "Y", 0, "1"); err != nil {
		t.Errorf("0 refused: %v", err)
	}
	if err := NotNegative("x", "Y", time.Second, ""); err != nil {
		t.Errorf("1s refused: %v", err)
	}
}
