package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap/zaptest"

	"github.com/jetjob/jetjob/internal/runlog"
	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/alarm"
	"github.com/jetjob/jetjob/scheduler/internal/api"
	"github.com/jetjob/jetjob/scheduler/internal/apitest"
	"github.com/jetjob/jetjob/scheduler/internal/auth"
	"github.com/jetjob/jetjob/scheduler/internal/store"
	"github.com/jetjob/jetjob/shared/wire"
)

const bootstrapToken = "break-glass-token"

// principals of the matrix, in column order; "" is anonymous.
var principals = []string{"", "viewerA", "viewerB", "operator", "opNoScripts", "admin"}

// env is an API with access control over a fresh database: groups a (with
// the command handler "deploy") and b, a user per principal with an API
// key, a plain and a shell job in a, and a run of the plain job.
type env struct {
	t     *testing.T
	srv   *httptest.Server
	api   *api.Server
	st    *store.Store
	pool  *pgxpool.Pool
	js    jetstream.JetStream // run logs and JETJOB_LOCKS (the queue view)
	keys  map[string]string   // principal → bearer key
	plain store.Job
	shell store.Job
	run   int64
	seq   atomic.Int64
	// contract validates the traffic (contract_test.go).
	contract *contract
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	st, pool := apitest.Store(t)
	cfg := apitest.Config()
	js := apitest.JetStream(t)
	cfg.Token, cfg.Logs, cfg.Locks = bootstrapToken, runlog.New(js), apitest.Locks(js)
	cfg.Workers = apitest.Workers(func() []wire.WorkerInfo {
		return []wire.WorkerInfo{{ID: "wa", Group: "a"}, {ID: "wb", Group: "b"}}
	})
	// A real alert sender under the default egress policy: the channels
	// of these tests point at loopback, so "send test" is refused by the
	// policy, at once.
	sender, err := alarm.New(alarm.Config{}, alarm.Deps{Log: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	cfg.SendTest = sender.SendTest
	a, err := api.New(cfg, st, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, api: a, st: st, pool: pool, js: js, keys: map[string]string{}}
	e.contract = newContract(t, t.Errorf)
	e.srv = httptest.NewServer(e.contract.wrap(a))
	t.Cleanup(e.srv.Close)
	for _, g := range []store.Group{{Name: "a", CommandHandlers: []string{"deploy"}}, {Name: "b"}} {
		if _, err := st.CreateGroup(ctx, store.System, g); err != nil {
			t.Fatal(err)
		}
	}
	users := map[string]store.User{
		"viewerA":     {Grants: []store.Grant{{Group: "a", Role: "viewer"}}},
		"viewerB":     {Grants: []store.Grant{{Group: "b", Role: "viewer"}}},
		"operator":    {Grants: []store.Grant{{Group: "a", Role: "operator", Scripts: true}}},
		"opNoScripts": {Grants: []store.Grant{{Group: "a", Role: "operator"}}},
		"admin":       {Admin: true},
	}
	for name, u := range users {
		u.Name = name
		if _, err := st.CreateUser(ctx, store.System, u); err != nil {
			t.Fatal(err)
		}
		e.keys[name] = e.newKey(name, nil).Secret
	}
	e.plain = e.job("a", "echo")
	e.shell = e.job("a", "shell")
	e.run = e.newRun(e.plain.ID)
	return e
}

func (e *env) next() int64 { return e.seq.Add(1) }

func (e *env) job(group, handler string) store.Job {
	e.t.Helper()
	return apitest.Job(e.t, e.st, group, fmt.Sprint("j", e.next()), handler)
}

func (e *env) newRun(job int64) int64 {
	e.t.Helper()
	p, err := e.st.InsertManualRun(context.Background(), store.System, job, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	return p.RunID
}

func (e *env) newUser(grants ...store.Grant) string {
	e.t.Helper()
	name := fmt.Sprint("tmp", e.next())
	if _, err := e.st.CreateUser(context.Background(), store.System, store.User{Name: name, Grants: grants}); err != nil {
		e.t.Fatal(err)
	}
	return name
}

func (e *env) newKey(user string, exp *time.Time) apiv1.CreatedKey {
	e.t.Helper()
	tok, prefix, hash, err := auth.NewKey()
	if err != nil {
		e.t.Fatal(err)
	}
	k, err := e.st.CreateKey(context.Background(), store.System, store.Key{Prefix: prefix, Name: "test", User: user, ExpiresAt: exp}, hash)
	if err != nil {
		e.t.Fatal(err)
	}
	return apiv1.CreatedKey{Key: apiv1.Key{ID: k.ID, Prefix: k.Prefix}, Secret: tok}
}

// do sends a request as a principal (by name; "" anonymous) and returns the
// status and body.
func (e *env) do(who, method, path string, body any, hdr ...string) (int, []byte) {
	e.t.Helper()
	tok := ""
	if who != "" {
		tok = e.keys[who]
		if tok == "" {
			tok = who // a raw token
		}
	}
	return e.doToken(tok, method, path, body, hdr...)
}

func (e *env) doToken(tok, method, path string, body any, hdr ...string) (int, []byte) {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func jobSpec(group, handler, name string) apiv1.JobSpec {
	return apiv1.JobSpec{Group: group, Name: name, Handler: handler, ScheduleType: "none"}
}
