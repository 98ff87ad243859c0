// Package lease spreads the cluster's shards over the live scheduler
// instances, with no global lock.
//
// Each instance heartbeats a row in `schedulers` and, every Renew interval,
// renews the shards it holds, releases those above its fair share
// (shards / live instances, the remainder going to the first instances in
// id order, see fairShare) and acquires free or expired ones up to it. Expiry is judged on the database clock (now()); acquiring takes only
// the rows of the shards taken, with SKIP LOCKED, so instances never wait on
// each other. Each acquisition increments the shard's epoch: the fencing
// token every write for the shard is conditional on (the fence, defined
// once in package runs: fence.go), so an instance that was paused past its
// lease writes nothing when it wakes.
//
// Locally, a lease is trusted only until its deadline: the time the
// renewing statement was sent plus the TTL, minus a safety margin. That
// instant is never later than the database's expiry, so once a lease may
// have moved, the old holder has already stopped publishing for it.
package lease

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/logging"
	"github.com/jetjob/jetjob/internal/testsignal"
	"github.com/jetjob/jetjob/scheduler/internal/errcount"
)

// Config tunes leasing. Zero values mean the defaults.
type Config struct {
	// ID names this scheduler instance; default host-pid-random.
	ID string
	// TTL is how long a lease lasts without renewal (default 10 s): a
	// dead instance's shards move within one TTL.
	TTL time.Duration
	// Renew is the interval between renewals (default TTL/4).
	Renew time.Duration
	// Margin is taken off the local deadline to absorb clock-rate
	// differences and scheduling delays (default TTL/5).
	Margin time.Duration
}

const DefaultTTL = 10 * time.Second

func (c Config) withDefaults() Config {
	c.TTL = cmp.Or(c.TTL, DefaultTTL)
	c.Renew = cmp.Or(c.Renew, c.TTL/4)
	c.Margin = cmp.Or(c.Margin, c.TTL/5)
	if c.ID == "" {
		host, _ := os.Hostname()
		c.ID = fmt.Sprintf("%s-%d-%d", host, os.Getpid(), time.Now().UnixNano()%100000)
	}
	return c
}

// deadline is the local instant until which a lease renewed or taken by a
// statement sent at sent is trusted: the TTL minus the margin from the
// sending. The database's expiry is its now() + TTL, read after the
// statement was sent, so the deadline comes a margin before it.
func (c Config) deadline(sent time.Time) time.Time { return sent.Add(c.TTL - c.Margin) }

// Validate says which field is wrong.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.TTL < 500*time.Millisecond:
		return fmt.Errorf("lease TTL %s: want at least 500ms", c.TTL)
	case c.Renew <= 0 || c.Renew > c.TTL/2:
		return fmt.Errorf("lease renew interval %s: want more than 0 and at most half the TTL (%s)", c.Renew, c.TTL/2)
	case c.Margin < 0 || c.Margin >= c.TTL-c.Renew:
		return fmt.Errorf("lease margin %s: want at least 0 and less than TTL minus the renew interval", c.Margin)
	case len(c.ID) > 200:
		return fmt.Errorf("scheduler id longer than 200 characters")
	}
	return nil
}

// Lease is one held shard.
type Lease struct {
	Shard int
	Epoch int64
	// Deadline is the local instant after which the lease is not trusted.
	Deadline time.Time
}

// Valid reports whether the lease may still be acted on at now.
func (l Lease) Valid(now time.Time) bool { return now.Before(l.Deadline) }

// Deps are what a Manager works through and whom it tells about changes of
// ownership: given to New and fixed from then on, never set on a running
// component. Config holds only what an operator tunes.
type Deps struct {
	// Pool is the PostgreSQL pool holding schedulers and scheduler_shards.
	Pool *pgxpool.Pool
	// Log is the parent logger; nil logs nothing.
	Log *zap.Logger
	// Acquired is called after newly taken shards are reported by Held
	// and Valid (so that runs it recovers can be published at once), Lost
	// after lost ones were removed. Both are called from Run's goroutine
	// and must not block long; nil ignores the change.
	Acquired func([]Lease)
	Lost     func(shards []int, reason string)
	// TestSignals report changes of the held shards to tests; zero, as in
	// production, they do nothing.
	TestSignals TestSignals
}

// TestSignals are the manager's key moments, for tests (package
// internal/testsignal).
type TestSignals struct {
	// Changed fires after every change of the shards Held reports that a
	// round makes — shards acquired, lost or released, or trusted again
	// after a renewal that came too late — once Held and Valid report it.
	// A lease that merely runs out between rounds (the process stalled)
	// leaves Held with no signal until a round notices.
	Changed testsignal.Signal[Change]
}

// Init initialises every signal for tb's test.
func (ts *TestSignals) Init(tb testsignal.TB) { ts.Changed.Init(tb) }

// Change is one change of the shards an instance holds, as
// TestSignals.Changed reports it.
type Change struct {
	Owner string // the instance's id
	// Gained are the shards acquired, or trusted again, in order.
	Gained []int
	// Lost are the shards lost, released or given up, in order.
	Lost []int
	// Held is how many shards the instance holds after the change.
	Held int
}

// Manager holds this instance's leases.
type Manager struct {
	cfg  Config
	pool *pgxpool.Pool
	log  *zap.Logger
	// acquired, lost and signals are Deps.Acquired, Deps.Lost and
	// Deps.TestSignals.
	acquired func([]Lease)
	lost     func(shards []int, reason string)
	signals  TestSignals

	mu   sync.Mutex
	held map[int]Lease
	// live is the number of live instances seen at the last beat.
	live int
	now  func() time.Time
	// abandoned makes Run return without releasing: a crash, for tests.
	abandoned atomic.Bool
}

// Abandon makes Run end without releasing its leases, as if the process
// had died: they expire after the TTL. For failover tests.
func (m *Manager) Abandon() { m.abandoned.Store(true) }

// New validates cfg and returns a manager; Run drives it.
func New(cfg Config, deps Deps) (*Manager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	return &Manager{cfg: cfg, pool: deps.Pool, log: logging.Named(deps.Log, "lease").With(zap.String("scheduler_id", cfg.ID)),
		acquired: deps.Acquired, lost: deps.Lost, signals: deps.TestSignals, held: map[int]Lease{}, now: time.Now}, nil
}

// ID is this instance's id (the owner written in scheduler_shards).
func (m *Manager) ID() string { return m.cfg.ID }

// Held returns the leases valid now, by shard.
func (m *Manager) Held() []Lease {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Lease, 0, len(m.held))
	for _, l := range m.held {
		if l.Valid(now) {
			out = append(out, l)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Shard < out[j].Shard })
	return out
}

// Valid reports whether shard is held at epoch and its lease is still
// trusted: the check made before every publish.
func (m *Manager) Valid(shard int, epoch int64) bool {
	m.mu.Lock()
	l, ok := m.held[shard]
	m.mu.Unlock()
	return ok && l.Epoch == epoch && l.Valid(m.now())
}

// Run renews, balances and takes over until ctx ends, then releases every
// lease (a fresh short deadline, so it happens even though ctx is done) so
// that the other instances take the shards at once instead of after a TTL.
func (m *Manager) Run(ctx context.Context) error {
	t := time.NewTicker(m.cfg.Renew)
	defer t.Stop()
	for {
		if err := m.tick(ctx); err != nil && ctx.Err() == nil {
			errcount.Postgres(errcount.Lease)
			m.log.Warn("lease round failed; retrying", zap.Error(err))
			m.dropExpired("renewal failed: " + err.Error())
		}
		select {
		case <-ctx.Done():
			if m.abandoned.Load() {
				return nil
			}
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
			m.releaseAll(rctx)
			cancel()
			return nil
		case <-t.C:
		}
	}
}

// tick is one round: beat, renew, release extras, acquire up to the fair share.
func (m *Manager) tick(ctx context.Context) error {
	deadline := m.cfg.deadline(m.now())
	ttl := m.cfg.TTL.Seconds()

	var live []string
	var total int
	err := m.pool.QueryRow(ctx, `WITH beat AS (
			INSERT INTO schedulers (id, host, expires_at) VALUES ($1, $2, now() + make_interval(secs => $3))
			ON CONFLICT (id) DO UPDATE SET heartbeat_at = now(), expires_at = EXCLUDED.expires_at
			RETURNING id)
		SELECT (SELECT array_agg(id ORDER BY id) FROM schedulers WHERE expires_at > now() OR id = $1),
		       (SELECT count(*) FROM scheduler_shards)
		FROM beat`, m.cfg.ID, hostname(), ttl).Scan(&live, &total)
	if err != nil {
		return fmt.Errorf("heartbeat: %w", err)
	}
	fair := fairShare(total, live, m.cfg.ID)

	// Renew what we hold, at the epoch we hold it: a shard someone else
	// took meanwhile (owner or epoch changed) is not renewed and is lost.
	shards, epochs := m.snapshot()
	renewed := map[int]int64{}
	if len(shards) > 0 {
		rows, _ := m.pool.Query(ctx, `UPDATE scheduler_shards s SET expires_at = now() + make_interval(secs => $2)
			FROM unnest($3::int[], $4::bigint[]) AS u(shard, epoch)
			WHERE s.shard = u.shard AND s.owner = $1 AND s.epoch = u.epoch
			RETURNING s.shard, s.epoch`, m.cfg.ID, ttl, shards, epochs)
		if err := collectPairs(rows, renewed); err != nil {
			return fmt.Errorf("renew: %w", err)
		}
	}
	var lost []int
	for _, sh := range shards {
		if _, ok := renewed[sh]; !ok {
			lost = append(lost, sh)
		}
	}
	m.update(renewed, deadline, lost, "taken over by another scheduler")

	// Release the shards above our fair share (the highest ones), so a
	// newly joined instance can take them.
	if rel := above(renewed, fair); len(rel) > 0 {
		m.update(nil, deadline, rel, "released to balance")
		if _, err := m.pool.Exec(ctx, `UPDATE scheduler_shards SET owner = NULL, expires_at = '-infinity'
			WHERE shard = ANY($1) AND owner = $2`, rel, m.cfg.ID); err != nil {
			return fmt.Errorf("release: %w", err)
		}
	}

	// Acquire free or expired shards up to the fair share.
	if want := fair - len(renewed); want > 0 {
		got := map[int]int64{}
		rows, _ := m.pool.Query(ctx, `UPDATE scheduler_shards s SET owner = $1, epoch = s.epoch + 1,
				expires_at = now() + make_interval(secs => $2)
			WHERE s.shard IN (
				SELECT shard FROM scheduler_shards
				WHERE owner IS NULL OR expires_at < now()
				ORDER BY shard LIMIT $3
				FOR UPDATE SKIP LOCKED)
			RETURNING s.shard, s.epoch`, m.cfg.ID, ttl, want)
		if err := collectPairs(rows, got); err != nil {
			return fmt.Errorf("acquire: %w", err)
		}
		if len(got) > 0 {
			acquired := make([]Lease, 0, len(got))
			for sh, ep := range got {
				acquired = append(acquired, Lease{Shard: sh, Epoch: ep, Deadline: deadline})
			}
			sort.Slice(acquired, func(i, j int) bool { return acquired[i].Shard < acquired[j].Shard })
			m.update(got, deadline, nil, "")
			m.log.Info("acquired shards", zap.Ints("shards", sortedKeys(got)), zap.Int("fair_share", fair), zap.Int("live", len(live)))
			if m.acquired != nil {
				m.acquired(acquired)
			}
		}
	}
	m.mu.Lock()
	m.live = len(live)
	m.mu.Unlock()
	// Forget instances dead for an hour.
	_, _ = m.pool.Exec(ctx, `DELETE FROM schedulers WHERE expires_at < now() - interval '1 hour'`)
	return nil
}

// update records renewed or acquired leases and drops lost ones.
func (m *Manager) update(ok map[int]int64, deadline time.Time, lost []int, reason string) {
	// gained (only for the test signal) are the shards Held did not
	// report before: acquired, or renewed after their deadline passed.
	var gained []int
	var now time.Time
	signal := m.signals.Changed.On()
	if signal {
		now = m.now()
	}
	m.mu.Lock()
	for sh, ep := range ok {
		if old, had := m.held[sh]; signal && (!had || !old.Valid(now)) {
			gained = append(gained, sh)
		}
		m.held[sh] = Lease{Shard: sh, Epoch: ep, Deadline: deadline}
	}
	for _, sh := range lost {
		delete(m.held, sh)
	}
	held := len(m.held)
	m.mu.Unlock()
	if len(lost) > 0 {
		m.log.Info("lost shards", zap.Ints("shards", lost), zap.String("reason", reason))
		if m.lost != nil {
			m.lost(lost, reason)
		}
	}
	if len(gained) > 0 || (signal && len(lost) > 0) {
		sort.Ints(gained)
		m.signals.Changed.Signal(Change{Owner: m.cfg.ID, Gained: gained, Lost: lost, Held: held})
	}
}

// dropExpired forgets leases whose local deadline passed (renewal keeps
// failing, e.g. PostgreSQL is down): their shards may already be someone
// else's.
func (m *Manager) dropExpired(reason string) {
	now := m.now()
	var lost []int
	m.mu.Lock()
	for sh, l := range m.held {
		if !l.Valid(now) {
			lost = append(lost, sh)
		}
	}
	m.mu.Unlock()
	if len(lost) > 0 {
		sort.Ints(lost)
		m.update(nil, time.Time{}, lost, reason)
	}
}

func (m *Manager) releaseAll(ctx context.Context) {
	shards, _ := m.snapshot()
	m.update(nil, time.Time{}, shards, "scheduler stopping")
	if _, err := m.pool.Exec(ctx, `UPDATE scheduler_shards SET owner = NULL, expires_at = '-infinity' WHERE owner = $1`, m.cfg.ID); err != nil {
		m.log.Warn("releasing leases on stop failed; they expire after the TTL", zap.Error(err))
	}
	if _, err := m.pool.Exec(ctx, `DELETE FROM schedulers WHERE id = $1`, m.cfg.ID); err != nil {
		m.log.Warn("deregistering failed", zap.Error(err))
	}
}

func (m *Manager) snapshot() ([]int, []int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	shards := make([]int, 0, len(m.held))
	for sh := range m.held {
		shards = append(shards, sh)
	}
	sort.Ints(shards)
	epochs := make([]int64, len(shards))
	for i, sh := range shards {
		epochs[i] = m.held[sh].Epoch
	}
	return shards, epochs
}

// fairShare is this instance's share of total shards among the live
// instances: total/live, plus one for the first total%live instances in id
// order. Every instance computes the same split from the same list, so the
// counts converge to differ by at most one.
func fairShare(total int, live []string, id string) int {
	n := len(live)
	if n == 0 {
		return total
	}
	rank := sort.SearchStrings(live, id)
	share := total / n
	if rank < total%n {
		share++
	}
	return share
}

// above returns the shards of held beyond the fair share: the highest
// ones, none when held is within it.
func above(held map[int]int64, fair int) []int {
	extra := len(held) - fair
	if extra <= 0 {
		return nil
	}
	keep := sortedKeys(held)
	return keep[len(keep)-extra:]
}

func collectPairs(rows pgx.Rows, into map[int]int64) error {
	defer rows.Close()
	for rows.Next() {
		var sh int
		var ep int64
		if err := rows.Scan(&sh, &ep); err != nil {
			return err
		}
		into[sh] = ep
	}
	return rows.Err()
}

func sortedKeys(m map[int]int64) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}

func hostname() string {
	h, _ := os.Hostname()
	return h
}
