package console_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap/zaptest"

	"github.com/jetjob/jetjob/internal/runlog"
	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/api"
	"github.com/jetjob/jetjob/scheduler/internal/apitest"
	"github.com/jetjob/jetjob/scheduler/internal/auth"
	"github.com/jetjob/jetjob/scheduler/internal/console"
	"github.com/jetjob/jetjob/scheduler/internal/pgtest"
	"github.com/jetjob/jetjob/scheduler/internal/runs"
	"github.com/jetjob/jetjob/scheduler/internal/store"
	"github.com/jetjob/jetjob/shared/wire"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// password is every test user's password.
const password = "correct horse battery"

// env is the console over a real API, PostgreSQL and NATS: groups a and
// b, users admin, operator (of a, with scripts), viewer (of a) and
// viewerB (of b), each with the password above.
type env struct {
	t    *testing.T
	srv  *httptest.Server
	st   *store.Store
	pool *pgxpool.Pool
	seq  atomic.Int64
	// workers is what the API's worker registry reports.
	workers []wire.WorkerInfo
	// fired are the runs the API handed to the scheduler's firing path.
	fired chan runs.Planned
	// js is the test's JetStream (run logs are written to it).
	js jetstream.JetStream
	// kills are the run ids the API asked the scheduler to kill.
	killsMu sync.Mutex
	kills   []int64
	// deps is what the API reports of its dependencies (cluster page).
	deps []apiv1.Dependency
}

func newEnv(t *testing.T, opts ...func(cfg *api.Config, base string)) *env {
	t.Helper()
	ctx := context.Background()
	st, pool := apitest.Store(t)
	js := apitest.JetStream(t)
	e := &env{t: t, st: st, pool: pool, js: js, fired: make(chan runs.Planned, 100)}
	log := zaptest.NewLogger(t)
	// The server's address is known before the API is made: an identity
	// provider's redirect URI is on it.
	e.srv = httptest.NewUnstartedServer(nil)
	cfg := api.Config{InsecureCookies: true, Logs: runlog.New(js), SchedulerID: "sched-test",
		Dependencies: func(context.Context) []apiv1.Dependency { return e.deps },
		Fire: func(r runs.Planned) {
			select {
			case e.fired <- r:
			default:
			}
		},
		Workers: apitest.Workers(func() []wire.WorkerInfo { return e.workers }),
		Locks:   apitest.Locks(js),
		Kill: func(_ context.Context, id int64, _ string) error {
			e.killsMu.Lock()
			defer e.killsMu.Unlock()
			e.kills = append(e.kills, id)
			return nil
		}}
	for _, o := range opts {
		o(&cfg, "http://"+e.srv.Listener.Addr().String())
	}
	a, err := api.New(cfg, st, log)
	if err != nil {
		t.Fatal(err)
	}
	con, err := console.New(console.Config{API: a, Log: log, InsecureCookies: true})
	if err != nil {
		t.Fatal(err)
	}
	e.srv.Config.Handler = console.Split(a, con)
	e.srv.Start()
	t.Cleanup(e.srv.Close)
	for _, g := range []string{"a", "b"} {
		if _, err := st.CreateGroup(ctx, store.System, store.Group{Name: g}); err != nil {
			t.Fatal(err)
		}
	}
	hash, err := auth.HashPassword(ctx, password)
	if err != nil {
		t.Fatal(err)
	}
	for name, u := range map[string]store.User{
		"admin":    {Admin: true, DisplayName: "Ada Admin"},
		"operator": {Grants: []store.Grant{{Group: "a", Role: "operator", Scripts: true}}},
		"viewer":   {Grants: []store.Grant{{Group: "a", Role: "viewer"}}},
		"viewerB":  {Grants: []store.Grant{{Group: "b", Role: "viewer"}}},
	} {
		u.Name, u.PasswordHash = name, hash
		if _, err := st.CreateUser(ctx, store.System, u); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// browser is a client with a cookie jar that does not follow redirects,
// so that tests see them; it sends Sec-Fetch-Site like a browser does.
type browser struct {
	e    *env
	c    *http.Client
	site string // Sec-Fetch-Site of its requests
}

func (e *env) browser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{e: e, site: "same-origin", c: &http.Client{Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// page is an answer: status, Location and body.
type page struct {
	Code     int
	Location string
	Body     string
}

func (b *browser) do(method, path string, form url.Values) page {
	b.e.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.e.srv.URL+path, body)
	if err != nil {
		b.e.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Header.Set("Sec-Fetch-Site", b.site)
	resp, err := b.c.Do(req)
	if err != nil {
		b.e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		b.e.t.Fatal(err)
	}
	return page{Code: resp.StatusCode, Location: resp.Header.Get("Location"), Body: string(raw)}
}

func (b *browser) get(path string) page { return b.do(http.MethodGet, path, nil) }

// open gets the page at path and fails the test unless it answers 200.
func (b *browser) open(path string) page {
	b.e.t.Helper()
	return b.expect(path, http.StatusOK)
}

// expect gets the page at path and fails the test unless it answers code.
func (b *browser) expect(path string, code int) page {
	b.e.t.Helper()
	p := b.get(path)
	if p.Code != code {
		b.e.t.Fatalf("GET %s: %d, want %d\n%s", path, p.Code, code, p.Body)
	}
	return p
}

func (b *browser) post(path string, form url.Values) page {
	if form == nil {
		form = url.Values{}
	}
	return b.do(http.MethodPost, path, form)
}

// login signs the browser in as user and fails the test if that fails.
func (b *browser) login(user string) *browser {
	b.e.t.Helper()
	p := b.post("/login", url.Values{"name": {user}, "password": {password}, "next": {"/"}})
	if p.Code != http.StatusSeeOther || p.Location != "/" {
		b.e.t.Fatalf("login as %s: %d → %q\n%s", user, p.Code, p.Location, p.Body)
	}
	return b
}

func (e *env) next() int64 { return e.seq.Add(1) }

// job creates a job of group (schedule none) and returns it.
func (e *env) job(group, handler string) store.Job {
	e.t.Helper()
	return apitest.Job(e.t, e.st, group, fmt.Sprint("job-", e.next()), handler)
}

// mustContain fails the test when the page lacks any of the texts.
func mustContain(t *testing.T, p page, texts ...string) {
	t.Helper()
	for _, s := range texts {
		if !strings.Contains(p.Body, s) {
			t.Fatalf("page (%d) lacks %q:\n%s", p.Code, s, p.Body)
		}
	}
}

// mustLack fails the test when the page holds any of the texts.
func mustLack(t *testing.T, p page, texts ...string) {
	t.Helper()
	for _, s := range texts {
		if strings.Contains(p.Body, s) {
			t.Fatalf("page (%d) holds %q:\n%s", p.Code, s, p.Body)
		}
	}
}

// killed returns the run ids the API's Kill hook was called with.
func (e *env) killed() []int64 {
	e.killsMu.Lock()
	defer e.killsMu.Unlock()
	return append([]int64(nil), e.kills...)
}

// run inserts a manual run of job (SCHEDULED now) and returns its id.
func (e *env) run(job store.Job) int64 {
	e.t.Helper()
	p, err := e.st.InsertManualRun(context.Background(), store.System, job.ID, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	return p.RunID
}

// setRun changes run id's row: set is an UPDATE's SET list, args its
// parameters from $2 ($1 is the id).
func (e *env) setRun(id int64, set string, args ...any) {
	e.t.Helper()
	tag, err := e.pool.Exec(context.Background(), "UPDATE job_runs SET "+set+" WHERE id = $1", append([]any{id}, args...)...)
	if err != nil || tag.RowsAffected() != 1 {
		e.t.Fatalf("update run %d (%s): %v, %d rows", id, set, err, tag.RowsAffected())
	}
}

// logLines publishes log lines of a run as its worker would.
func (e *env) logLines(group string, jobID, runID int64, level string, msgs ...string) {
	e.t.Helper()
	for i, m := range msgs {
		b, err := wire.EncodeLogLine(&wire.LogLine{RunID: runID, JobID: jobID, Seq: int64(i + 1), At: time.Now(), Level: level, Msg: m})
		if err != nil {
			e.t.Fatal(err)
		}
		if _, err := e.js.Publish(context.Background(), stream.Log(group, runID), b); err != nil {
			e.t.Fatal(err)
		}
	}
}

// finishedRuns writes one scheduled run of j per status, a minute apart
// and oldest first (started and finished when the status is final), and
// returns their ids in that order.
func (e *env) finishedRuns(j store.Job, statuses ...string) []int64 {
	e.t.Helper()
	ids := make([]int64, 0, len(statuses))
	base := time.Now().Add(-time.Duration(len(statuses)+1) * time.Minute)
	for i, st := range statuses {
		at := base.Add(time.Duration(i) * time.Minute)
		var started, finished *time.Time
		if st != "RUNNING" && st != "TRIGGERED" && st != "SCHEDULED" {
			s, f := at.Add(time.Second), at.Add(3*time.Second)
			started, finished = &s, &f
		}
		var id int64
		if err := e.pool.QueryRow(context.Background(), `INSERT INTO job_runs (job_id, group_name, shard, trigger_type,
			status, scheduled_at, triggered_at, started_at, finished_at) VALUES ($1, $2, $3, 'schedule', $4, $5, $5, $6, $7)
			RETURNING id`, j.ID, j.Group, j.Shard, st, at, started, finished).Scan(&id); err != nil {
			e.t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}
