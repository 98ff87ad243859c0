package alerts

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap/zaptest"

	"github.com/jetjob/jetjob/internal/egress"
	"github.com/jetjob/jetjob/internal/fakeclock"
	"github.com/jetjob/jetjob/scheduler/internal/alarm"
	"github.com/jetjob/jetjob/scheduler/internal/auth"
	"github.com/jetjob/jetjob/scheduler/internal/pgtest"
	"github.com/jetjob/jetjob/scheduler/internal/runs"
	"github.com/jetjob/jetjob/scheduler/internal/store"
	"github.com/jetjob/jetjob/shared/wire"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// chat is a Slack-like receiver recording the messages it accepted.
type chat struct {
	srv    *httptest.Server
	mu     sync.Mutex
	texts  []string
	answer func(w http.ResponseWriter, r *http.Request) bool // false: refused
}

func startChat(t *testing.T) *chat {
	c := &chat{}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		c.mu.Lock()
		answer := c.answer
		c.mu.Unlock()
		if answer != nil && !answer(w, r) {
			return
		}
		var m struct {
			Text string `json:"text"`
		}
		_ = json.Unmarshal(body, &m)
		c.mu.Lock()
		c.texts = append(c.texts, m.Text)
		c.mu.Unlock()
		io.WriteString(w, "ok")
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *chat) got() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.texts...)
}

// world is a database with a job, and engines over it.
type world struct {
	t     *testing.T
	ctx   context.Context
	pool  *pgxpool.Pool
	st    *store.Store
	jobID int64
	base  time.Time
	fires int
}

func newWorld(t *testing.T) *world {
	t.Helper()
	t.Parallel()
	pool, st := pgtest.Store(t)
	pgtest.HoldShard(t, pool, "me", 1)
	return &world{t: t, ctx: context.Background(), pool: pool, st: st, jobID: pgtest.Job(t, st, "nightly-export", "skip"),
		base: time.Now().Add(-time.Hour).Truncate(time.Second)}
}

// engine is a new engine (a scheduler's) sending with timeout.
func (w *world) engine(timeout time.Duration) *Engine {
	w.t.Helper()
	policy, err := egress.New(egress.Config{Allow: []string{"127.0.0.1"}})
	if err != nil {
		w.t.Fatal(err)
	}
	sender, err := alarm.New(alarm.Config{Timeout: timeout, ConsoleURL: "https://jetjob.example.com"},
		alarm.Deps{Log: zaptest.NewLogger(w.t), Egress: policy})
	if err != nil {
		w.t.Fatal(err)
	}
	e, err := New(Config{Backoff: time.Minute}, Deps{Pool: w.pool, Log: zaptest.NewLogger(w.t), Sender: sender})
	if err != nil {
		w.t.Fatal(err)
	}
	return e
}

func (w *world) channel(name, url string) int64 {
	w.t.Helper()
	ch, err := CreateChannel(w.ctx, w.pool, alarm.Channel{Name: name, Kind: alarm.KindSlack, Group: pgtest.Group, Target: url}, "admin")
	if err != nil {
		w.t.Fatal(err)
	}
	return ch.ID
}

func (w *world) rule(r Rule) RuleInfo {
	w.t.Helper()
	var out RuleInfo
	err := pgx.BeginFunc(w.ctx, w.pool, func(tx pgx.Tx) error {
		var err error
		out, err = CreateRule(w.ctx, tx, r, &auth.Principal{Name: "admin", Admin: true})
		return err
	})
	if err != nil {
		w.t.Fatal(err)
	}
	return out
}

// end plans the job's next fire and ends it with status, a second after
// the previous one, the way the results applier records an end: the run's
// row and the outbox in one transaction.
func (w *world) end(status wire.Status) {
	w.t.Helper()
	at := w.base.Add(time.Duration(w.fires) * time.Second)
	w.fires++
	in := pgtest.Plan(w.t, w.pool, "me", 1, runs.Fire{JobID: w.jobID, Group: pgtest.Group, TriggerType: wire.TriggerSchedule,
		Status: wire.StatusScheduled, ScheduledAt: at})
	err := pgx.BeginFunc(w.ctx, w.pool, func(tx pgx.Tx) error {
		ups := []runs.Update{{RunID: in[0].RunID, Group: pgtest.Group, ScheduledAt: at,
			Status: status, FinishedAt: &at, Message: "exit status 3"}}
		done, err := runs.ApplyEvents(w.ctx, tx, ups, 0)
		if err != nil {
			return err
		}
		return RecordEnds(w.ctx, tx, done.Moved, ups)
	})
	if err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) count(sql string, args ...any) int {
	w.t.Helper()
	var n int
	if err := w.pool.QueryRow(w.ctx, sql, args...).Scan(&n); err != nil {
		w.t.Fatal(err)
	}
	return n
}

// A job failing every second for a minute, under a rule of 3 failures in
// a minute, yields one alert counting 60 and one message, not 60; its
// recovery closes the alert and is told once.
func TestFailingJobIsOneAlertEndToEnd(t *testing.T) {
	w := newWorld(t)
	c := startChat(t)
	ch := w.channel("ops", c.srv.URL+"/services/T/B/X")
	w.rule(Rule{Name: "export", JobID: w.jobID, Group: pgtest.Group, Events: []alarm.Event{alarm.EventFailed, alarm.EventRecovered},
		Threshold: 3, Window: time.Minute, Channels: []int64{ch}})
	e := w.engine(5 * time.Second)
	for i := range 60 {
		w.end(wire.StatusFailed)
		if i%10 == 9 {
			e.Round(w.ctx)
		}
	}
	e.Round(w.ctx)
	got := c.got()
	if len(got) != 1 {
		t.Fatalf("%d messages for 60 failures, want 1: %q", len(got), got)
	}
	alerts, err := Alerts(w.ctx, w.pool, true, true, nil, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(alerts) != 1 || alerts[0].Count != 60 || alerts[0].State != StateOpen {
		t.Fatalf("open alerts %+v, want one counting 60", alerts)
	}
	w.end(wire.StatusSucceeded)
	e.Round(w.ctx)
	if got := c.got(); len(got) != 2 || got[1] != "[jetjob] recovered: job nightly-export ("+itoa(w.jobID)+")" {
		t.Fatalf("messages %q, want the failure then the recovery", got)
	}
	if n := w.count(`SELECT count(*) FROM alerts WHERE state = 'closed' AND count = 60`); n != 1 {
		t.Fatalf("%d closed alerts counting 60, want 1", n)
	}
	if n := w.count(`SELECT count(*) FROM alert_outbox`); n != 0 {
		t.Fatalf("%d outbox rows left", n)
	}
	ds, err := Deliveries(w.ctx, w.pool, alerts[0].ID, 0, 10)
	if err != nil || len(ds) != 2 || ds[0].State != "sent" || len(ds[0].Attempts) != 1 || ds[0].Attempts[0].Code != 200 {
		t.Fatalf("deliveries %+v %v, want two sent, each with one attempt answered 200", ds, err)
	}
}

// A scheduler that stops between recording a failure and delivering its
// alert leaves both in PostgreSQL: another scheduler delivers it, once.
// One that stops during an attempt leaves it sending: once its claim has
// run out it is recorded unknown and not sent again (at most once).
func TestCrashBetweenRecordAndDelivery(t *testing.T) {
	w := newWorld(t)
	c := startChat(t)
	ch := w.channel("ops", c.srv.URL)
	w.rule(Rule{Name: "any-failure", Group: pgtest.Group, Events: []alarm.Event{alarm.EventFailed}, Threshold: 1, Channels: []int64{ch}})

	w.end(wire.StatusFailed) // recorded; the scheduler stops before its engine ran
	crashed := w.engine(5 * time.Second)
	if _, err := crashed.Process(w.ctx); err != nil { // queued, then it stops before sending
		t.Fatal(err)
	}
	if n := len(c.got()); n != 0 {
		t.Fatalf("%d messages before any delivery", n)
	}
	other := w.engine(5 * time.Second)
	other.Round(w.ctx)
	other.Round(w.ctx)
	crashed.Round(w.ctx) // back: nothing left to send
	if n := len(c.got()); n != 1 {
		t.Fatalf("%d messages after recovery, want 1", n)
	}

	// A claim whose scheduler stopped mid-attempt.
	if _, err := w.pool.Exec(w.ctx, `INSERT INTO alert_deliveries (rule_id, channel_id, event_id, notice, state, attempts, lease_until)
		VALUES (0, $1, 999, '{"event":"failed"}', 'sending', 1, now() - interval '1 second')`, ch); err != nil {
		t.Fatal(err)
	}
	other.Round(w.ctx)
	if n := len(c.got()); n != 1 {
		t.Fatalf("%d messages: an interrupted attempt was repeated", n)
	}
	if n := w.count(`SELECT count(*) FROM alert_deliveries d JOIN alert_attempts a ON a.delivery_id = d.id
		WHERE d.event_id = 999 AND d.state = 'unknown' AND a.result = 'unknown'`); n != 1 {
		t.Fatalf("interrupted delivery not recorded unknown")
	}
}

// A dead channel (one that never answers) costs its own deliveries a
// timeout and a retry later; a working channel of the same rule is
// delivered in the same round, and a 429's Retry-After sets the retry.
func TestDeadChannelBlocksNothing(t *testing.T) {
	w := newWorld(t)
	good, dead, limited := startChat(t), startChat(t), startChat(t)
	hang := make(chan struct{})
	t.Cleanup(func() { close(hang) })
	dead.answer = func(w http.ResponseWriter, r *http.Request) bool {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
		return false
	}
	limited.answer = func(w http.ResponseWriter, r *http.Request) bool {
		w.Header().Set("Retry-After", "3600")
		w.WriteHeader(http.StatusTooManyRequests)
		return false
	}
	ids := []int64{w.channel("good", good.srv.URL), w.channel("dead", dead.srv.URL), w.channel("limited", limited.srv.URL)}
	w.rule(Rule{Name: "any-failure", Group: pgtest.Group, Events: []alarm.Event{alarm.EventFailed}, Threshold: 1, Channels: ids})
	e := w.engine(300 * time.Millisecond)
	w.end(wire.StatusFailed)
	e.Round(w.ctx)
	if n := len(good.got()); n != 1 {
		t.Fatalf("the working channel got %d messages, want 1", n)
	}
	var state, lastErr string
	var attempts int
	if err := w.pool.QueryRow(w.ctx, `SELECT state, attempts, last_error FROM alert_deliveries WHERE channel_id = $1`, ids[1]).
		Scan(&state, &attempts, &lastErr); err != nil {
		t.Fatal(err)
	}
	if state != "pending" || attempts != 1 || lastErr == "" {
		t.Fatalf("dead channel's delivery: %s after %d attempts (%q), want pending for a retry with its error", state, attempts, lastErr)
	}
	var wait float64
	if err := w.pool.QueryRow(w.ctx, `SELECT extract(epoch FROM next_at - now()) FROM alert_deliveries WHERE channel_id = $1`, ids[2]).
		Scan(&wait); err != nil {
		t.Fatal(err)
	}
	if wait < 3000 || wait > 3600 {
		t.Fatalf("the 429's delivery is retried in %.0f s, want its Retry-After, 3600 s", wait)
	}
}

// A rule with pause_after 3 disables a job failing every second at its
// third consecutive failure, with a note naming the rule and the runs, and
// tells its channel so; the failures after it are counted, not sent.
func TestPauseAfterConsecutiveFailures(t *testing.T) {
	w := newWorld(t)
	c := startChat(t)
	ch := w.channel("ops", c.srv.URL)
	w.rule(Rule{Name: "stop-it", JobID: w.jobID, Events: []alarm.Event{alarm.EventFailed}, Threshold: 1, PauseAfter: 3,
		Channels: []int64{ch}})
	if _, err := w.pool.Exec(w.ctx, `UPDATE jobs SET enabled = true WHERE id = $1`, w.jobID); err != nil {
		t.Fatal(err)
	}
	e := w.engine(5 * time.Second)
	for range 4 {
		w.end(wire.StatusFailed)
	}
	e.Round(w.ctx)
	var enabled bool
	var note, by string
	if err := w.pool.QueryRow(w.ctx, `SELECT enabled, paused_note, paused_by FROM jobs WHERE id = $1`, w.jobID).
		Scan(&enabled, &note, &by); err != nil {
		t.Fatal(err)
	}
	if enabled || by != "alerts" || !strings.Contains(note, `alert rule "stop-it"`) || !strings.Contains(note, "after 3 consecutive failures") {
		t.Fatalf("job enabled=%v, paused by %q: %q; want paused by the rule, naming it and the failures", enabled, by, note)
	}
	got := c.got()
	slices.Sort(got) // sent in parallel
	if len(got) != 2 || !strings.HasPrefix(got[0], "[jetjob] failed: job nightly-export") ||
		!strings.HasPrefix(got[1], "[jetjob] paused: job nightly-export") {
		t.Fatalf("messages %q, want the failure and the pause", got)
	}
	if n := w.count(`SELECT count(*) FROM audit_log WHERE action = 'job.disable' AND actor = 'alerts'`); n != 1 {
		t.Fatalf("%d job.disable audit entries by alerts, want 1", n)
	}
}

// running_long fires when a run is still running its SLA after it
// started, and late_start when a run has not started its SLA after its
// scheduled time: at that instant of the engine's (fake) clock, not
// before, and once per run.
func TestSLAEventsFireOnTime(t *testing.T) {
	w := newWorld(t)
	c := startChat(t)
	ch := w.channel("ops", c.srv.URL)
	w.rule(Rule{Name: "slow", JobID: w.jobID, Events: []alarm.Event{alarm.EventRunningLong}, SLA: 10 * time.Minute,
		Channels: []int64{ch}})
	late := pgtest.Job(t, w.st, "late-one", "skip")
	w.rule(Rule{Name: "late", JobID: late, Events: []alarm.Event{alarm.EventLateStart}, SLA: time.Minute, Channels: []int64{ch}})

	running := pgtest.Plan(t, w.pool, "me", 1, runs.Fire{JobID: w.jobID, Group: pgtest.Group, TriggerType: wire.TriggerSchedule,
		Status: wire.StatusScheduled, ScheduledAt: w.base})[0]
	err := pgx.BeginFunc(w.ctx, w.pool, func(tx pgx.Tx) error {
		_, err := runs.ApplyEvents(w.ctx, tx, []runs.Update{{RunID: running.RunID, Group: pgtest.Group, ScheduledAt: w.base,
			Status: wire.StatusRunning, StartedAt: &w.base}}, 0)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	pgtest.Plan(t, w.pool, "me", 1, runs.Fire{JobID: late, Group: pgtest.Group, TriggerType: wire.TriggerSchedule,
		Status: wire.StatusScheduled, ScheduledAt: w.base.Add(5 * time.Minute)})

	clk := fakeclock.New(w.base)
	e := w.engine(5 * time.Second)
	e.now = clk.Now
	step := func(to time.Duration, want ...string) {
		t.Helper()
		clk.Advance(w.base.Add(to).Sub(clk.Now()))
		e.Round(w.ctx)
		got := c.got()
		if len(got) != len(want) {
			t.Fatalf("at +%s: messages %q, want %d", to, got, len(want))
		}
		for i := range want {
			if !strings.HasPrefix(got[i], want[i]) {
				t.Fatalf("at +%s: messages %q, want %q", to, got, want)
			}
		}
	}
	step(5*time.Minute + 59*time.Second)
	step(6*time.Minute, "[jetjob] late_start: job late-one")
	step(9*time.Minute+59*time.Second, "[jetjob] late_start: job late-one")
	step(10*time.Minute, "[jetjob] late_start: job late-one", "[jetjob] running_long: job nightly-export")
	step(30*time.Minute, "[jetjob] late_start: job late-one", "[jetjob] running_long: job nightly-export")
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
