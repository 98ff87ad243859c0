package scheduler_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	dto "github.com/prometheus/client_model/go"

	"github.com/jetjob/jetjob/internal/backoff"
	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/internal/supervise"
	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/scheduler"
	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/results"
	"github.com/jetjob/jetjob/shared/wire"
)

// testSupervision restarts failed components within a fraction of a
// second, so that the tests see them come back at once.
var testSupervision = supervise.Config{Backoff: backoff.Backoff{Initial: 20 * time.Millisecond, Max: 200 * time.Millisecond}}

// faults fails the starts of the components a test names, until it clears
// them (Scheduler.SetTestFault).
type faults struct {
	mu  sync.Mutex
	set map[string]error
}

func (f *faults) fail(component string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.set == nil {
		f.set = map[string]error{}
	}
	f.set[component] = err
}

func (f *faults) clear(component string) {
	f.mu.Lock()
	delete(f.set, component)
	f.mu.Unlock()
}

func (f *faults) check(component string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.set[component]
}

// supervisedCluster is a cluster whose schedulers restart within
// milliseconds and fail the component starts f says.
func supervisedCluster(t *testing.T, f *faults) *cluster {
	c := newCluster(t)
	c.prepare = func(s *scheduler.Scheduler) {
		if err := s.SetSupervision(testSupervision); err != nil {
			t.Fatal(err)
		}
		s.SetTestFault(f.check)
	}
	return c
}

// readiness is scheduler i's /readyz answer.
type readiness struct {
	code   int
	Status string
	Reason string
	Down   []supervise.Down
}

func (c *cluster) readiness(i int) readiness {
	resp, err := http.Get(c.nodes[i].url + "/readyz")
	if err != nil {
		return readiness{Reason: err.Error()}
	}
	defer resp.Body.Close()
	r := readiness{code: resp.StatusCode}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		r.Reason = "undecodable: " + err.Error()
	}
	return r
}

// expectDown waits until scheduler i's /readyz answers 503 naming
// component as down: it checks at each failure of a component (the
// supervisor's test signal), while the component fails at every start.
func (c *cluster) expectDown(i int, component string) readiness {
	c.t.Helper()
	var r readiness
	c.signals.Supervise.Failed.WaitUntil(c.t, time.Minute, "/readyz 503 naming "+component, func() bool {
		r = c.readiness(i)
		return r.code == http.StatusServiceUnavailable && slices.ContainsFunc(r.Down, func(d supervise.Down) bool {
			return d.Component == component
		})
	})
	if r.Status != "not ready" || !strings.Contains(r.Reason, component) {
		c.t.Fatalf("/readyz while %s is down: %+v", component, r)
	}
	return r
}

// expectUp waits until scheduler i's /readyz answers 200 again, checking
// at each restart of a component.
func (c *cluster) expectUp(i int) {
	c.t.Helper()
	c.signals.Supervise.Restarted.WaitUntil(c.t, time.Minute, "/readyz 200 after the restart", func() bool {
		r := c.readiness(i)
		return r.code == http.StatusOK && r.Status == "ready" && len(r.Down) == 0
	})
}

// restarts is scheduler i's jetjob_component_restarts_total{component}.
func (c *cluster) restarts(i int, component string) float64 {
	c.t.Helper()
	mfs, err := c.nodes[i].s.Registry().Gather()
	if err != nil {
		c.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "jetjob_component_restarts_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if labelOf(m, "component") == component {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func labelOf(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// runAndApply triggers job and waits until results applied its success.
func (c *cluster) runAndApply(job int64) {
	c.t.Helper()
	run, err := c.api.TriggerJob(context.Background(), job, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	c.signals.Results.Applied.WaitFor(c.t, time.Minute, fmt.Sprintf("run %d applied SUCCEEDED", run.ID), func(cs []results.Change) bool {
		return slices.ContainsFunc(cs, func(ch results.Change) bool { return ch.RunID == run.ID && ch.Status == wire.StatusSucceeded })
	})
}

// The events consumer is deleted under the results applier: the applier
// fails, /readyz names it while it is down, it is restarted (creating the
// consumer anew) and applies results again. Before supervision the
// applier sat on a consumer the client had stopped, and results were
// never applied again with /readyz 200.
func TestSupervisedResultsConsumerDeleted(t *testing.T) {
	t.Parallel()
	f := &faults{}
	c := supervisedCluster(t, f)
	c.startScheduler(4)
	c.startWorker("w")
	c.waitLeases(time.Minute, "every shard held", func() bool { return c.owned(0)[0] == 4 })
	job := c.createJobs(1, apiv1.JobSpec{Name: "sv", ScheduleType: "none"})[0]
	c.runAndApply(job) // the applier consumes

	// Restarts fail until the test has seen /readyz name the applier.
	f.fail("results", errors.New("injected: the events consumer cannot be created"))
	js, err := jetstream.New(c.connect("test"))
	if err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteConsumer(context.Background(), stream.Events, stream.EventsConsumer); err != nil {
		t.Fatal(err)
	}
	first := c.signals.Supervise.Failed.WaitFor(t, time.Minute, "the applier to fail", func(fl supervise.Failure) bool {
		return fl.Component == "results"
	})
	if !strings.Contains(first.Err.Error(), "the consumer ended") || first.Fatal {
		t.Fatalf("first failure: %+v, want the consumer ended, restarted", first)
	}
	c.expectDown(0, "results")
	f.clear("results")
	c.expectUp(0)
	if c.restarts(0, "results") < 1 {
		t.Fatal("jetjob_component_restarts_total{component=\"results\"} not counted")
	}
	// Up is the applier running again; it creates its consumer as it
	// starts, a moment later (CI once looked in between).
	testwait.Eventually(t, time.Minute, "the events consumer created again", func() bool {
		_, err := js.Consumer(context.Background(), stream.Events, stream.EventsConsumer)
		return err == nil
	})
	c.runAndApply(job) // and applies again
}

// The same for the lost-run monitor, whose advisories consumer is deleted.
func TestSupervisedLostMonitorConsumerDeleted(t *testing.T) {
	t.Parallel()
	f := &faults{}
	c := supervisedCluster(t, f)
	c.startScheduler(4)
	c.expectReady(0, true)
	js, err := jetstream.New(c.connect("test"))
	if err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, time.Minute, "the lost-run consumer", func() bool {
		_, err := js.Consumer(context.Background(), stream.Advisories, stream.LostConsumer)
		return err == nil
	})
	f.fail("lost runs", errors.New("injected: the advisories consumer cannot be created"))
	if err := js.DeleteConsumer(context.Background(), stream.Advisories, stream.LostConsumer); err != nil {
		t.Fatal(err)
	}
	first := c.signals.Supervise.Failed.WaitFor(t, time.Minute, "the lost-run monitor to fail", func(fl supervise.Failure) bool {
		return fl.Component == "lost runs"
	})
	if !strings.Contains(first.Err.Error(), "the consumer ended") {
		t.Fatalf("first failure: %+v, want the consumer ended", first)
	}
	c.expectDown(0, "lost runs")
	f.clear("lost runs")
	c.expectUp(0)
	testwait.Eventually(t, time.Minute, "the lost-run consumer created again", func() bool {
		_, err := js.Consumer(context.Background(), stream.Advisories, stream.LostConsumer)
		return err == nil
	})
	if c.restarts(0, "lost runs") < 1 {
		t.Fatal("restart not counted")
	}
}

// Components whose set-up fails (a subscription refused, a first query
// failing) are down from the start, /readyz names each, and each comes
// back when its set-up succeeds.
func TestSupervisedStartFailures(t *testing.T) {
	t.Parallel()
	f := &faults{}
	c := supervisedCluster(t, f)
	f.fail("recorded notices", errors.New("subscribe _jetjob.recorded: injected"))
	f.fail("recovery", errors.New("recover planned runs: ERROR: injected (SQLSTATE 57P01)"))
	c.startScheduler(4)
	r := c.expectDown(0, "recorded notices")
	c.expectDown(0, "recovery")
	if !strings.Contains(r.Reason, "component down") {
		t.Fatalf("reason %q", r.Reason)
	}
	f.clear("recorded notices")
	f.clear("recovery")
	c.expectUp(0)
	for _, name := range []string{"recorded notices", "recovery"} {
		if c.restarts(0, name) < 1 {
			t.Errorf("restarts of %s not counted", name)
		}
	}
}

// Dispatch cannot run twice in one process: its failure stops the
// scheduler, cleanly (its leases released at once), and Run returns an
// error naming it. A panic in any component does the same.
func TestSupervisedFailureStopsScheduler(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	c.startScheduler(4) // serves the API throughout
	c.expectReady(0, true)
	for _, tc := range []struct {
		component string
		fault     func()
		want      string
	}{
		{"dispatch", nil, "component dispatch failed and is not restarted in this process: injected"},
		{"backlog", func() { panic("injected") }, "component backlog failed and is not restarted in this process: panic: injected"},
	} {
		c.prepare = func(s *scheduler.Scheduler) {
			s.SetTestFault(func(component string) error {
				if component != tc.component {
					return nil
				}
				if tc.fault != nil {
					tc.fault()
				}
				return errors.New("injected")
			})
		}
		i := c.startScheduler(4)
		n := c.nodes[i]
		select {
		case err := <-n.done:
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: Run returned %v, want %q", tc.component, err, tc.want)
			}
			n.done <- nil // the cleanup's wait returns at once
		case <-time.After(time.Minute):
			t.Fatalf("%s: the scheduler did not stop", tc.component)
		}
		id := fmt.Sprintf("sched-%d", i)
		if held := c.count(`SELECT count(*) FROM scheduler_shards WHERE owner = $1 AND expires_at > now()`, id); held != 0 {
			t.Errorf("%s: the stopped scheduler still holds %d shards: not a clean stop", tc.component, held)
		}
	}
}
