package stream

import (
	"context"
	"testing"
	"time"

	"github.com/jetjob/jetjob/internal/natsembed"
)

// Provisioning an unchanged cluster updates nothing (every process
// provisions at start, and a needless update races with consumer creation
// in the server); a changed setting is applied.
func TestProvisionUpdatesOnlyWhatChanged(t *testing.T) {
	_, _, js := natsembed.StartTest(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := Config{}
	if err := Provision(ctx, js, cfg); err != nil {
		t.Fatal(err)
	}
	for _, want := range cfg.Streams() {
		st, err := js.Stream(ctx, want.Name)
		if err != nil {
			t.Fatal(err)
		}
		if differs(st.CachedInfo().Config, want) {
			t.Errorf("stream %s as created still differs from its settings: Provision would update it at every start\nhave %+v\nwant %+v",
				want.Name, st.CachedInfo().Config, want)
		}
	}
	// A new log retention reaches the stream.
	cfg.LogMaxAge = 48 * time.Hour
	if err := Provision(ctx, js, cfg); err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(ctx, Logs)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.CachedInfo().Config.MaxAge; got != 48*time.Hour {
		t.Errorf("log stream max age %s after provisioning 48h", got)
	}
}
