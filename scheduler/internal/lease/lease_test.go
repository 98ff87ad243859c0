package lease

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/jetjob/jetjob/internal/fakeclock"
)

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// The cluster's shards are split by the sorted list of live instances:
// total/n each, the remainder to the first instances in id order.
func TestFairShare(t *testing.T) {
	for _, c := range []struct {
		total int
		live  []string
		id    string
		want  int
	}{
		{64, []string{"a"}, "a", 64},
		{64, []string{"a", "b"}, "b", 32},
		{64, []string{"a", "b", "c"}, "a", 22},
		{64, []string{"a", "b", "c"}, "b", 21},
		{64, []string{"a", "b", "c"}, "c", 21},
		{2, []string{"a", "b", "c"}, "b", 1},
		{2, []string{"a", "b", "c"}, "c", 0}, // more instances than shards
		{64, nil, "a", 64},                   // nobody listed yet: take what is free
	} {
		if got := fairShare(c.total, c.live, c.id); got != c.want {
			t.Errorf("fairShare(%d, %v, %q) = %d, want %d", c.total, c.live, c.id, got, c.want)
		}
	}
}

// Every instance computes its share from the same list, and the shares
// add up to every shard exactly once, differing by at most one: no shard
// is left without an owner once the instances converge, and none is
// fought over.
func TestFairSharesCoverEveryShardOnce(t *testing.T) {
	for _, total := range []int{1, 7, 64, 100} {
		for n := 1; n <= 10; n++ {
			live := make([]string, n)
			for i := range live {
				live[i] = fmt.Sprintf("sched-%02d", i)
			}
			sum, lo, hi := 0, total, 0
			for _, id := range live {
				s := fairShare(total, live, id)
				sum, lo, hi = sum+s, min(lo, s), max(hi, s)
			}
			if sum != total || hi-lo > 1 {
				t.Errorf("%d shards over %d instances: shares sum to %d (spread %d..%d), want %d differing by at most 1",
					total, n, sum, lo, hi, total)
			}
		}
	}
}

// An instance above its share gives back its highest shards, and only
// as many as it holds beyond the share.
func TestAboveReleasesTheHighestShards(t *testing.T) {
	held := map[int]int64{9: 1, 2: 1, 40: 3, 17: 2, 5: 1}
	if got := above(held, 3); !slices.Equal(got, []int{17, 40}) {
		t.Errorf("above(share 3) = %v, want [17 40]", got)
	}
	if got := above(held, 5); len(got) != 0 {
		t.Errorf("above(share 5) = %v, want nothing at the share", got)
	}
	if got := above(held, 8); len(got) != 0 {
		t.Errorf("above(share 8) = %v, want nothing below the share", got)
	}
}

func newManager(t *testing.T, cfg Config, d Deps) (*Manager, *fakeclock.Clock) {
	t.Helper()
	d.Log = zaptest.NewLogger(t)
	m, err := New(cfg, d)
	if err != nil {
		t.Fatal(err)
	}
	clk := fakeclock.New(t0)
	m.now = clk.Now
	return m, clk
}

// A lease is trusted from its renewal until TTL minus the margin after the
// statement was sent, a margin before the database lets it go; after
// that, and at any other epoch, nothing may be published for the shard.
func TestLeaseTrustedUntilTheLocalDeadline(t *testing.T) {
	m, clk := newManager(t, Config{ID: "a", TTL: 10 * time.Second}, Deps{})
	sent := clk.Now()
	deadline := m.cfg.deadline(sent)
	if want := sent.Add(8 * time.Second); !deadline.Equal(want) {
		t.Fatalf("deadline %s after sending, want 8s (TTL 10s minus the default margin TTL/5)", deadline.Sub(sent))
	}
	m.update(map[int]int64{3: 5, 1: 4}, deadline, nil, "")

	if !m.Valid(3, 5) || !m.Valid(1, 4) {
		t.Errorf("fresh leases not valid")
	}
	if m.Valid(3, 4) {
		t.Errorf("shard 3 valid at epoch 4; it is held at epoch 5 (a run planned under an older lease must not be published)")
	}
	if m.Valid(2, 5) {
		t.Errorf("shard 2 valid; it is not held")
	}
	if got := shards(m.Held()); !slices.Equal(got, []int{1, 3}) {
		t.Errorf("Held = %v, want [1 3]", got)
	}

	clk.Advance(8*time.Second - time.Nanosecond)
	if !m.Valid(3, 5) || len(m.Held()) != 2 {
		t.Errorf("lease not trusted just before its deadline")
	}
	clk.Advance(time.Nanosecond)
	if m.Valid(3, 5) || len(m.Held()) != 0 {
		t.Errorf("lease still trusted at its deadline (the database may hand the shard on 2s later)")
	}
}

// When renewals keep failing (PostgreSQL down), a lease whose local
// deadline passed is given up and reported lost; one renewed later stays.
func TestDropExpiredGivesUpLeasesPastTheirDeadline(t *testing.T) {
	type loss struct {
		shards []int
		reason string
	}
	var lost []loss
	m, clk := newManager(t, Config{ID: "a", TTL: 10 * time.Second}, Deps{
		Lost: func(shards []int, reason string) { lost = append(lost, loss{slices.Clone(shards), reason}) },
	})
	m.update(map[int]int64{7: 1, 2: 1, 4: 1}, m.cfg.deadline(clk.Now()), nil, "")
	clk.Advance(2500 * time.Millisecond) // the next renewal, which succeeds for shard 4 only
	m.update(map[int]int64{4: 1}, m.cfg.deadline(clk.Now()), nil, "")

	clk.Advance(5 * time.Second) // t0+7.5s
	m.dropExpired("renewal failed: connection refused")
	if len(lost) != 0 {
		t.Fatalf("lost %v before any deadline", lost)
	}
	clk.Advance(500 * time.Millisecond) // t0+8s: the first deadline
	m.dropExpired("renewal failed: connection refused")
	if len(lost) != 1 || !slices.Equal(lost[0].shards, []int{2, 7}) || !strings.Contains(lost[0].reason, "connection refused") {
		t.Fatalf("lost %+v, want shards [2 7] with the renewal's error", lost)
	}
	if got := shards(m.Held()); !slices.Equal(got, []int{4}) {
		t.Errorf("Held = %v, want [4] (renewed later)", got)
	}
	if !m.Valid(4, 1) {
		t.Errorf("shard 4 not valid before its own deadline")
	}
}

func shards(ls []Lease) []int {
	out := make([]int, 0, len(ls))
	for _, l := range ls {
		out = append(out, l.Shard)
	}
	return out
}

// Zero values take the defaults (renew every TTL/4, margin TTL/5), and a
// setting that would let a lease lapse between renewals, or leave no time
// to act on it, is refused naming the field.
func TestConfigDefaultsAndValidate(t *testing.T) {
	c := Config{}.withDefaults()
	if c.TTL != 10*time.Second || c.Renew != 2500*time.Millisecond || c.Margin != 2*time.Second || c.ID == "" {
		t.Errorf("defaults %+v, want TTL 10s, renew 2.5s, margin 2s and an id", c)
	}
	c = Config{TTL: 2 * time.Second}.withDefaults()
	if c.Renew != 500*time.Millisecond || c.Margin != 400*time.Millisecond {
		t.Errorf("TTL 2s: renew %s, margin %s; want 500ms and 400ms", c.Renew, c.Margin)
	}
	for _, c := range []struct {
		cfg  Config
		want string // "" for valid
	}{
		{Config{}, ""},
		{Config{TTL: 500 * time.Millisecond}, ""},
		{Config{TTL: 400 * time.Millisecond}, "lease TTL"},
		{Config{TTL: 10 * time.Second, Renew: 5 * time.Second}, ""},
		{Config{TTL: 10 * time.Second, Renew: 6 * time.Second}, "renew interval"},
		{Config{TTL: 10 * time.Second, Renew: -time.Second}, "renew interval"},
		{Config{TTL: 10 * time.Second, Renew: 5 * time.Second, Margin: 5 * time.Second}, "margin"},
		{Config{TTL: 10 * time.Second, Margin: -time.Second}, "margin"},
		{Config{ID: strings.Repeat("x", 201)}, "scheduler id"},
	} {
		err := c.cfg.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("Validate(%+v) = %v, want valid", c.cfg, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("Validate(%+v) = %v, want an error naming %q", c.cfg, err, c.want)
		}
	}
}
