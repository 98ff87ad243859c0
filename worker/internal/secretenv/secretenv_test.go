package secretenv

import (
	"slices"
	"strings"
	"testing"
)

// Secret flags leave the command line with their values, in either form;
// others stay in order, and nothing after "--" is taken for a flag.
func TestSplitArgs(t *testing.T) {
	flags := []string{"nats-password", "nats-url"}
	kept, moved := splitArgs([]string{"--group", "ops", "--nats-password", "pw", "--concurrency=3", "--nats-url=nats://u:p@h", "--nats-urlx=1",
		"-nats-password", "--", "--nats-password", "x"}, flags)
	if want := []string{"--group", "ops", "--concurrency=3", "--nats-urlx=1", "-nats-password", "--", "--nats-password", "x"}; !slices.Equal(kept, want) {
		t.Errorf("kept %q, want %q", kept, want)
	}
	if want := []string{"--nats-password", "pw", "--nats-url=nats://u:p@h"}; !slices.Equal(moved, want) {
		t.Errorf("moved %q, want %q", moved, want)
	}
	// A secret flag last, without its value: moved alone (the flag parser
	// reports the missing value).
	if kept, moved := splitArgs([]string{"--nats-password"}, flags); len(kept) != 0 || !slices.Equal(moved, []string{"--nats-password"}) {
		t.Errorf("kept %q, moved %q", kept, moved)
	}
}

// Only the variables the policy names move; LookupEnv sees them first.
func TestSplitEnvAndLookup(t *testing.T) {
	kept, moved := split([]string{"PATH=/bin", "JETJOB_NATS_PASSWORD=pw", "JETJOB_GROUP=a=b", "HOME=/h"},
		func(n string) bool { return strings.HasPrefix(n, "JETJOB_") })
	if !slices.Equal(kept, []string{"PATH=/bin", "HOME=/h"}) || moved["JETJOB_NATS_PASSWORD"] != "pw" || moved["JETJOB_GROUP"] != "a=b" {
		t.Errorf("kept %q, moved %q", kept, moved)
	}
	t.Setenv("SECRETENV_TEST", "from-env")
	m := &Moved{Env: moved}
	if v, ok := m.LookupEnv("JETJOB_GROUP"); !ok || v != "a=b" {
		t.Errorf("LookupEnv(JETJOB_GROUP) = %q, %v", v, ok)
	}
	if v, ok := m.LookupEnv("SECRETENV_TEST"); !ok || v != "from-env" {
		t.Errorf("LookupEnv(SECRETENV_TEST) = %q, %v", v, ok)
	}
}
