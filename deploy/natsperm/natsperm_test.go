package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/jetjob/jetjob/internal/jstest"
	"github.com/jetjob/jetjob/internal/natsembed"
	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/internal/testtier"
	"github.com/jetjob/jetjob/internal/workertest"
	"github.com/jetjob/jetjob/shared/wire"
	"github.com/jetjob/jetjob/worker"
)

// waitLimit bounds every wait: a hang becomes a failure.
const waitLimit = 30 * time.Second

// The shipped template is this command's output for the compose cluster's
// group, so editing WorkerPermissions without regenerating it fails here.
func TestShippedTemplateIsCurrent(t *testing.T) {
	args := []string{"-group", "shell=worker-1,worker-2"}
	var out, errOut bytes.Buffer
	if err := run(args, &out, &errOut); err != nil {
		t.Fatalf("%v: %s", err, errOut.String())
	}
	shipped, err := os.ReadFile("../nats/permissions.conf")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(shipped, out.Bytes()) {
		t.Errorf("deploy/nats/permissions.conf is not the generator's output: regenerate it with\n  go run ./deploy/natsperm %s > deploy/nats/permissions.conf",
			strings.Join(args, " "))
	}
	// nats-server accepts it, with the passwords from the environment.
	t.Setenv(PasswordVar("SCHEDULER"), "scheduler-pw")
	t.Setenv(PasswordVar("shell"), "shell-pw")
	opts, err := server.ProcessConfigFile("../nats/permissions.conf")
	if err != nil {
		t.Fatal(err)
	}
	if len(opts.Users) != 2 || opts.Users[1].Username != "jetjob-worker-shell" || opts.Users[1].Password != "shell-pw" {
		t.Errorf("users as the server reads them: %+v", opts.Users)
	}
}

func TestRenderRefusesAmbiguousInput(t *testing.T) {
	for _, tc := range []struct {
		groups []Group
		want   string
	}{
		{nil, "no -group"},
		{[]Group{{Name: "a"}}, "no worker ids"},
		{[]Group{{Name: "a.b", IDs: []string{"x"}}}, "invalid group"},
		{[]Group{{Name: "a", IDs: []string{"x", "x"}}}, "given twice"},
		{[]Group{{Name: "a", IDs: []string{"x>"}}}, "invalid worker id"},
		{[]Group{{Name: "a-b", IDs: []string{"x"}}, {Name: "a_b", IDs: []string{"y"}}}, "password variable"},
	} {
		if _, err := Render(tc.groups, DefaultSchedulerUser, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Render(%+v): %v, want an error with %q", tc.groups, err, tc.want)
		}
	}
}

// violations records the permission violations the server reports to one
// connection.
type violations struct {
	mu   sync.Mutex
	all  []string
	more chan struct{} // closed and replaced at every new one
}

func (v *violations) add(err error) {
	if !errors.Is(err, nats.ErrPermissionViolation) {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.all = append(v.all, err.Error())
	close(v.more)
	v.more = make(chan struct{})
}

func (v *violations) list() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]string(nil), v.all...)
}

// wait returns once the server has refused what (`Publish to "subject"` or
// `Subscription to "subject"`), failing the test after waitLimit.
func (v *violations) wait(t *testing.T, what string) {
	t.Helper()
	deadline := time.After(waitLimit)
	for {
		v.mu.Lock()
		more := v.more
		for _, s := range v.all {
			if strings.Contains(s, "Permissions Violation for "+what) {
				v.mu.Unlock()
				return
			}
		}
		v.mu.Unlock()
		select {
		case <-more:
		case <-deadline:
			t.Fatalf("the server did not refuse %s; violations seen: %q", what, v.list())
		}
	}
}

// cluster is an embedded NATS server configured by the generator's output
// for groups a (worker a-1) and b (worker b-1).
type cluster struct {
	t   *testing.T
	url string
}

const (
	schedPW = "scheduler-secret"
	aPW     = "group-a-secret"
	bPW     = "group-b-secret"
)

func startCluster(t *testing.T) *cluster {
	t.Helper()
	testtier.Needs(t, testtier.NATS)
	conf, err := Render([]Group{{Name: "a", IDs: []string{"a-1"}}, {Name: "b", IDs: []string{"b-1"}}}, DefaultSchedulerUser, nil)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "permissions.conf")
	if err := os.WriteFile(path, conf, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(PasswordVar("SCHEDULER"), schedPW)
	t.Setenv(PasswordVar("a"), aPW)
	t.Setenv(PasswordVar("b"), bPW)
	srv, err := natsembed.Start(natsembed.Options{StoreDir: t.TempDir(), ConfigFile: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	return &cluster{t: t, url: srv.ClientURL()}
}

// connect opens a connection as user (with the inbox prefix, if any) and
// records the violations the server reports to it.
func (c *cluster) connect(user, password, inboxPrefix string) (*nats.Conn, *violations) {
	c.t.Helper()
	v := &violations{more: make(chan struct{})}
	opts := []nats.Option{
		nats.UserInfo(user, password),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { v.add(err) }),
	}
	if inboxPrefix != "" {
		opts = append(opts, nats.CustomInboxPrefix(inboxPrefix))
	}
	nc, err := nats.Connect(c.url, opts...)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(nc.Close)
	return nc, v
}

// startWorker runs a real worker of group on nc until stop is called (or
// the test ends); its handler "h" logs a line, then waits for release (if
// not nil). stop returns once Run has.
func startWorker(t *testing.T, nc *nats.Conn, group, id string, release <-chan struct{}) (stop func()) {
	t.Helper()
	w, err := worker.New(worker.Config{NATS: nc, Group: group, ID: id, Concurrency: 4,
		ShutdownGrace: 5 * time.Second, Logger: zaptest.NewLogger(t), TriggerKeys: jstest.Keys})
	if err != nil {
		t.Fatal(err)
	}
	w.Handle("h", func(ctx context.Context, job *worker.Job) error {
		job.Logger.Info("hello from " + group)
		if release != nil {
			select {
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	})
	run := workertest.Start(t, w)
	var once sync.Once
	stop = func() {
		once.Do(func() {
			if err := run(); err != nil {
				t.Errorf("worker %s: Run: %v", id, err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// only returns the violations of nc other than a sentinel it provokes:
// violations reach the error handler in the order the server sent them, so
// once the sentinel's has arrived every earlier one has too.
func (v *violations) only(t *testing.T, nc *nats.Conn) []string {
	t.Helper()
	const sentinel = "jetjob.test.sentinel"
	if _, err := nc.Subscribe(sentinel, func(*nats.Msg) {}); err != nil {
		t.Fatal(err)
	}
	v.wait(t, fmt.Sprintf("Subscription to %q", sentinel))
	var out []string
	for _, s := range v.list() {
		if !strings.Contains(s, sentinel) {
			out = append(out, s)
		}
	}
	return out
}

// A worker of group a started with group a's credential runs its group's
// triggers (serial lock, contended lock, heartbeat, log lines, events)
// without a single permission violation, and the same credential is
// refused by the server on everything of group b: subscribing to its
// triggers, events, inboxes and control subject, pulling from, creating,
// deleting or acknowledging on its consumers, reading its triggers from the
// stream, publishing its triggers, events, logs or heartbeats.
func TestGroupCredentialIsRefusedOnOtherGroups(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitLimit)
	defer cancel()

	// The scheduler's user provisions everything (workers may not).
	sched, schedV := c.connect(DefaultSchedulerUser, schedPW, "")
	js, err := jetstream.New(sched)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Provision(ctx, js, stream.Config{}); err != nil {
		t.Fatal(err)
	}
	events, err := js.CreateOrUpdateConsumer(ctx, stream.Events, jetstream.ConsumerConfig{
		Durable: "test-events", FilterSubject: "jetjob.event.>", AckPolicy: jetstream.AckExplicitPolicy,
	})
	if err != nil {
		t.Fatal(err)
	}

	aNC, aV := c.connect(WorkerUser("a"), aPW, stream.WorkerInboxPrefix("a"))
	bNC, bV := c.connect(WorkerUser("b"), bPW, stream.WorkerInboxPrefix("b"))
	release := make(chan struct{})
	stopA := startWorker(t, aNC, "a", "a-1", release)
	stopB := startWorker(t, bNC, "b", "b-1", nil)

	// Group a's runs: 1 and 2 are runs of one serial job, 2 queues behind
	// 1 (the lock is read from the stream leader and updated); 3 is
	// another job's.
	publish := func(group string, runID, jobID int64) {
		t.Helper()
		tr := &wire.Trigger{RunID: runID, JobID: jobID, Group: group, Handler: "h", BlockStrategy: "serial",
			TriggerType: wire.TriggerManual, ScheduledAt: time.Now().UTC().Truncate(time.Millisecond)}
		data, err := wire.EncodeTrigger(tr)
		if err != nil {
			t.Fatal(err)
		}
		m := nats.NewMsg(stream.TriggerAny(group))
		m.Data = data
		jstest.Signer.Sign(m.Header, group, false, data)
		if _, err := js.PublishMsg(ctx, m, jetstream.WithMsgID(wire.MsgID(runID))); err != nil {
			t.Fatal(err)
		}
	}
	publish("a", 1, 100)
	waitLockQueue := func(jobID int64, cond func(holder int64, queue []int64) bool) {
		t.Helper()
		kv, err := js.KeyValue(ctx, stream.LocksBucket)
		if err != nil {
			t.Fatal(err)
		}
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			if e, err := kv.Get(ctx, fmt.Sprintf("job.%d", jobID)); err == nil {
				var v struct {
					Holder int64 `json:"holder"`
					Queue  []struct {
						Run int64 `json:"run"`
					} `json:"queue"`
				}
				if json.Unmarshal(e.Value(), &v) == nil {
					var q []int64
					for _, w := range v.Queue {
						q = append(q, w.Run)
					}
					if cond(v.Holder, q) {
						return
					}
				}
			}
			select {
			case <-tick.C:
			case <-ctx.Done():
				t.Fatalf("job %d's lock never reached the expected state", jobID)
			}
		}
	}
	waitLockQueue(100, func(holder int64, _ []int64) bool { return holder == 1 })
	publish("a", 2, 100)
	waitLockQueue(100, func(holder int64, queue []int64) bool { return holder == 1 && len(queue) == 1 && queue[0] == 2 })
	close(release)
	publish("a", 3, 300)
	publish("b", 4, 400)

	finished := map[int64]wire.Event{}
	started := map[int64]bool{}
	for len(finished) < 4 {
		m, err := events.Next(jetstream.FetchMaxWait(waitLimit))
		if err != nil {
			t.Fatalf("events: %v (finished so far: %v)", err, finished)
		}
		evs, err := wire.DecodeEvents(m.Data())
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			switch {
			case e.Kind == wire.EventStarted:
				started[e.RunID] = true
			case e.Kind == wire.EventFinished:
				finished[e.RunID] = e
			}
			if want := map[int64]string{1: "a-1", 2: "a-1", 3: "a-1", 4: "b-1"}[e.RunID]; e.WorkerID != want {
				t.Errorf("run %d: event from worker %q, want %q", e.RunID, e.WorkerID, want)
			}
		}
		if err := m.Ack(); err != nil {
			t.Fatal(err)
		}
	}
	for id, e := range finished {
		if e.Status != wire.StatusSucceeded || !started[id] {
			t.Errorf("run %d: finished %s (%s), started event seen: %v", id, e.Status, e.Message, started[id])
		}
	}
	// Their log lines and the heartbeats are stored too.
	logs, err := js.Stream(ctx, stream.Logs)
	if err != nil {
		t.Fatal(err)
	}
	for _, subj := range []string{stream.Log("a", 1), stream.Log("b", 4)} {
		if _, err := logs.GetLastMsgForSubject(ctx, subj); err != nil {
			t.Errorf("log line on %s: %v", subj, err)
		}
	}
	checkNoForeignLogLines(t, ctx, c, js, 4, "hello from b")
	reg, err := js.KeyValue(ctx, stream.WorkersBucket)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{stream.WorkerKey("a", "a-1"), stream.WorkerKey("b", "b-1")} {
		if _, err := reg.Get(ctx, key); err != nil {
			t.Errorf("heartbeat %s: %v", key, err)
		}
	}

	// Group a's credential on group b's subjects, on a connection of its
	// own (so that the worker's connection stays clean for the check at
	// the end).
	spy, spyV := c.connect(WorkerUser("a"), aPW, stream.WorkerInboxPrefix("a"))
	for _, subj := range []string{
		stream.TriggerAny("b"), stream.TriggerWorker("b", "b-1"), "jetjob.trigger.>", // b's triggers
		stream.Event("b"), "jetjob.event.>", "jetjob.log.b.>", // b's events and logs
		stream.WorkerInboxPrefix("b") + ".>", "_INBOX.>", // b's replies and pulled triggers
		stream.Control("b-1"),                                  // answering for b's worker
		"$KV." + stream.WorkersBucket + ".>", "jetjob.sched.>", // reading heartbeats, answering for schedulers
	} {
		if _, err := spy.Subscribe(subj, func(*nats.Msg) {}); err != nil {
			t.Fatal(err)
		}
		spyV.wait(t, fmt.Sprintf("Subscription to %q", subj))
	}
	triggerBody := []byte(`{"v":1,"run_id":99,"job_id":99,"group":"b","handler":"h"}`)
	api := "$JS.API."
	for _, p := range []struct{ subj, body string }{
		// Pulling b's triggers, from b's shared or directed consumer.
		{api + "CONSUMER.MSG.NEXT." + stream.Triggers + "." + stream.AnyConsumer("b"), `{"batch":1}`},
		{api + "CONSUMER.MSG.NEXT." + stream.Triggers + "." + stream.WorkerConsumer("b", "b-1"), `{"batch":1}`},
		// Creating (or re-pointing) a consumer on b's subjects, under any name or form.
		{api + "CONSUMER.CREATE." + stream.Triggers + "." + stream.AnyConsumer("b") + "." + stream.TriggerAny("b"), `{}`},
		{api + "CONSUMER.CREATE." + stream.Triggers + "." + stream.AnyConsumer("a") + "." + stream.TriggerAny("b"), `{}`},
		{api + "CONSUMER.CREATE." + stream.Triggers + ".spy", `{}`},
		{api + "CONSUMER.CREATE." + stream.Triggers, `{}`},
		{api + "CONSUMER.DURABLE.CREATE." + stream.Triggers + ".spy", `{}`},
		{api + "CONSUMER.DELETE." + stream.Triggers + "." + stream.AnyConsumer("b"), ``},
		{api + "CONSUMER.INFO." + stream.Triggers + "." + stream.AnyConsumer("b"), ``},
		// Acknowledging (or nak-ing) b's deliveries.
		{"$JS.ACK." + stream.Triggers + "." + stream.AnyConsumer("b") + ".1.4.1.1700000000000000000.0", ``},
		{"$JS.ACK." + stream.Triggers + "." + stream.WorkerConsumer("b", "b-1") + ".1.4.1.1700000000000000000.0", `-NAK`},
		// Reading b's triggers straight from the stream.
		{api + "STREAM.MSG.GET." + stream.Triggers, `{"last_by_subj":"jetjob.trigger.b.any"}`},
		{api + "DIRECT.GET." + stream.Triggers, `{"last_by_subj":"jetjob.trigger.b.any"}`},
		// Publishing b's triggers, events, logs, heartbeat.
		{stream.TriggerAny("b"), string(triggerBody)},
		{stream.Event("b"), `{"v":1,"events":[]}`},
		{stream.Log("b", 4), `forged`},
		{"$KV." + stream.WorkersBucket + "." + stream.WorkerKey("b", "b-1"), `{}`},
		// Asking for b's runs' secrets (scheduler/internal/secrets).
		{stream.SecretsSubject("b"), `{"v":1,"run_id":4,"worker_id":"a-1","scheduled_at":"2026-01-01T00:00:00Z"}`},
		// Asking for the parts' outputs of b's reduce runs (scheduler/internal/mapout).
		{stream.MapOutputsSubject("b"), `{"v":1,"run_id":4,"worker_id":"a-1","scheduled_at":"2026-01-01T00:00:00Z","from":0}`},
		// Changing or removing the streams (the schedulers' job).
		{api + "STREAM.UPDATE." + stream.Triggers, `{}`},
		{api + "STREAM.DELETE." + stream.Events, ``},
		{api + "STREAM.PURGE." + stream.Triggers, `{"filter":"jetjob.trigger.b.>"}`},
	} {
		if err := spy.PublishRequest(p.subj, spy.NewInbox(), []byte(p.body)); err != nil {
			t.Fatal(err)
		}
		spyV.wait(t, fmt.Sprintf("Publish to %q", p.subj))
	}
	// The consumer create subject a may use binds the filter: a config
	// asking for b's subjects under it is refused by JetStream itself.
	for _, filter := range []string{`"filter_subject":"jetjob.trigger.b.any"`,
		`"filter_subjects":["jetjob.trigger.a.any","jetjob.trigger.b.any"]`} {
		req := `{"stream_name":"JETJOB_TRIGGERS","config":{"durable_name":"workers-a",` + filter +
			`,"ack_policy":"explicit","deliver_policy":"all"}}`
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		msg, err := spy.RequestWithContext(rctx, api+"CONSUMER.CREATE."+stream.Triggers+"."+stream.AnyConsumer("a")+"."+stream.TriggerAny("a"), []byte(req))
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		var resp struct {
			Error *struct {
				Description string `json:"description"`
			} `json:"error"`
		}
		if err := json.Unmarshal(msg.Data, &resp); err != nil || resp.Error == nil {
			t.Errorf("JetStream accepted a consumer of a's name over b's subjects (%s): %s", filter, msg.Data)
		} else {
			t.Logf("%s refused: %s", filter, resp.Error.Description)
		}
	}
	// Nothing forged reached b's subjects.
	tstream, err := js.Stream(ctx, stream.Triggers)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tstream.GetLastMsgForSubject(ctx, stream.TriggerAny("b")); !errors.Is(err, jetstream.ErrMsgNotFound) {
		t.Errorf("a trigger waits on b's queue (run 4 was consumed): %v", err)
	}
	ev, err := js.Stream(ctx, stream.Events)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ev.GetLastMsgForSubject(ctx, stream.Event("b")); !errors.Is(err, jetstream.ErrMsgNotFound) {
		t.Errorf("an event waits on b's subject (every real one was consumed): %v", err)
	}

	// The workers themselves, from start to stop (deregistration, locks
	// freed), needed nothing their credentials lack.
	stopA()
	stopB()
	for _, c := range []struct {
		who string
		nc  *nats.Conn
		v   *violations
	}{{"worker a-1", aNC, aV}, {"worker b-1", bNC, bV}} {
		if got := c.v.only(t, c.nc); len(got) > 0 {
			t.Errorf("%s's connection was refused: %q", c.who, got)
		}
	}
	if got := schedV.list(); len(got) > 0 { // allowed everything: no sentinel to wait for
		t.Errorf("the scheduler's connection was refused: %q", got)
	}
	if _, err := reg.Get(ctx, stream.WorkerKey("a", "a-1")); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Errorf("worker a-1 did not deregister: %v", err)
	}
}

// Workers leave the streams to the schedulers: with a worker credential,
// provisioning a server without streams fails saying the credential may not
// create them (not merely that NATS timed out), and once a scheduler has
// provisioned them, with settings other than the worker's, the worker
// starts without touching them. A worker connected without its group's
// inbox prefix is told to use it.
func TestWorkerLeavesStreamsToSchedulers(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	aNC, aV := c.connect(WorkerUser("a"), aPW, stream.WorkerInboxPrefix("a"))
	aJS, err := jetstream.New(aNC)
	if err != nil {
		t.Fatal(err)
	}
	pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
	err = stream.Provision(pctx, aJS, stream.Config{}, stream.LeaveExisting(zaptest.NewLogger(t)))
	pcancel()
	want := fmt.Sprintf("Publish to %q", "$JS.API.STREAM.CREATE."+stream.Triggers)
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "schedulers provision") {
		t.Fatalf("provisioning with a worker credential: %v, want an error naming the refused %s", err, want)
	}
	t.Log(err)
	aV.wait(t, want)

	sched, _ := c.connect(DefaultSchedulerUser, schedPW, "")
	js, err := jetstream.New(sched)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Provision(ctx, js, stream.Config{LogMaxAge: 48 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	core, logged := observer.New(zap.WarnLevel)
	if err := stream.Provision(ctx, aJS, stream.Config{}, stream.LeaveExisting(zap.New(core))); err != nil {
		t.Fatalf("provisioning existing streams with a worker credential: %v", err)
	}
	if n := logged.FilterField(zap.String("stream", stream.Logs)).Len(); n != 1 {
		t.Errorf("%d warnings about the log stream's differing settings, want 1: %v", n, logged.All())
	}
	logs, err := js.Stream(ctx, stream.Logs)
	if err != nil {
		t.Fatal(err)
	}
	if got := logs.CachedInfo().Config.MaxAge; got != 48*time.Hour {
		t.Errorf("log stream max age %s: the worker changed the schedulers' 48h", got)
	}

	// The default inbox prefix: every reply is refused, and the error says why.
	plain, _ := c.connect(WorkerUser("a"), aPW, "")
	w, err := worker.New(worker.Config{NATS: plain, Group: "a", ID: "a-1", Logger: zaptest.NewLogger(t), TriggerKeys: jstest.Keys})
	if err != nil {
		t.Fatal(err)
	}
	w.Handle("h", func(context.Context, *worker.Job) error { return nil })
	err = w.Run(context.Background()) // the server's refusal, not ctx, ends it
	if err == nil || !strings.Contains(err.Error(), `nats.CustomInboxPrefix("_INBOX.jetjob.a")`) {
		t.Errorf("Run without the group's inbox prefix: %v, want a hint to use it", err)
	}
	t.Log(err)
}
