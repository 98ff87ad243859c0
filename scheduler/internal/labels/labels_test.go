package labels

import (
	"errors"
	"testing"
)

func TestSelectorAndLabels(t *testing.T) {
	sel, err := ParseSelector(" env=prod , team=billing")
	if err != nil || len(sel) != 2 || sel["env"] != "prod" || sel["team"] != "billing" {
		t.Fatalf("ParseSelector = %v, %v", sel, err)
	}
	if got := Format(sel); got != "env=prod,team=billing" {
		t.Errorf("Format = %q", got)
	}
	for _, bad := range []string{"env", "env=prod,env=dev", "-x=1", "k=v w", "k=" + string(make([]byte, 70))} {
		if _, err := ParseSelector(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseSelector(%q) = %v, want ErrInvalid", bad, err)
		}
	}
	if err := Check(map[string]string{"app.kubernetes.io/name": "x", "tier": ""}); err != nil {
		t.Errorf("Check refused good labels: %v", err)
	}
	if err := Check(map[string]string{"bad key": "x"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("Check accepted a key with a space: %v", err)
	}
}
