package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// Eight clients retry one trigger with one idempotency key at the same
// moment (a client library retrying a timed-out POST): exactly one run is
// written, and every client is told its id — the first with 202, the
// others with 200 and Idempotent-Replayed.
func TestTriggerIdempotencyKeyRaced(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	job := e.job("a", "echo")
	params := "p1"
	body, _ := json.Marshal(apiv1.TriggerRequest{Params: &params, IdempotencyKey: "nightly-2026-11-28"})
	type answer struct {
		code     int
		run      int64
		replayed bool
		err      error
	}
	answers := make([]answer, 8)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			req, _ := http.NewRequest(http.MethodPost, fmt.Sprintf("%s/api/v1/jobs/%d/trigger", e.srv.URL, job.ID), bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+e.keys["operator"])
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				answers[i].err = err
				return
			}
			defer resp.Body.Close()
			var run apiv1.Run
			answers[i] = answer{code: resp.StatusCode, replayed: resp.Header.Get("Idempotent-Replayed") == "true",
				err: json.NewDecoder(resp.Body).Decode(&run)}
			answers[i].run = run.ID
		}()
	}
	close(start)
	wg.Wait()
	created := 0
	for i, a := range answers {
		switch {
		case a.err != nil:
			t.Fatalf("client %d: %v", i, a.err)
		case a.code == http.StatusAccepted && !a.replayed:
			created++
		case a.code != http.StatusOK || !a.replayed:
			t.Errorf("client %d: %d (replayed %v), want 202 once and 200 replayed for the others", i, a.code, a.replayed)
		}
		if a.run != answers[0].run || a.run == 0 {
			t.Errorf("client %d was told run %d, client 0 run %d", i, a.run, answers[0].run)
		}
	}
	if created != 1 {
		t.Errorf("%d clients were told they made the run, want 1", created)
	}
	var runs int
	if err := e.pool.QueryRow(t.Context(), `SELECT count(*) FROM job_runs WHERE job_id = $1`, job.ID).Scan(&runs); err != nil {
		t.Fatal(err)
	}
	if runs != 1 {
		t.Errorf("%d runs written for one idempotent trigger, want 1", runs)
	}
}

// A key names one request: reused with other params it is refused, and
// one key serves each job separately; the header works as the body field.
func TestTriggerIdempotencyKeyReused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	job, other := e.job("a", "echo"), e.job("a", "echo")
	path := func(id int64) string { return fmt.Sprintf("/api/v1/jobs/%d/trigger", id) }
	p1, p2 := "p1", "p2"
	code, b := e.do("operator", http.MethodPost, path(job.ID), apiv1.TriggerRequest{Params: &p1}, "Idempotency-Key", "k1")
	if code != http.StatusAccepted {
		t.Fatalf("first trigger: %d %s", code, b)
	}
	first := runOf(t, b)
	code, b = e.do("operator", http.MethodPost, path(job.ID), apiv1.TriggerRequest{Params: &p1, IdempotencyKey: "k1"})
	if code != http.StatusOK || runOf(t, b).ID != first.ID {
		t.Errorf("the same trigger in the body: %d %s, want 200 with run %d", code, b, first.ID)
	}
	code, b = e.do("operator", http.MethodPost, path(job.ID), apiv1.TriggerRequest{Params: &p2}, "Idempotency-Key", "k1")
	if code != http.StatusConflict || !strings.Contains(string(b), "another request") {
		t.Errorf("the key with other params: %d %s, want 409 naming the reuse", code, b)
	}
	code, b = e.do("operator", http.MethodPost, path(other.ID), apiv1.TriggerRequest{Params: &p2}, "Idempotency-Key", "k1")
	if code != http.StatusAccepted || runOf(t, b).ID == first.ID {
		t.Errorf("the key on another job: %d %s, want a run of its own", code, b)
	}
	code, b = e.do("operator", http.MethodPost, path(job.ID), apiv1.TriggerRequest{IdempotencyKey: "k2"}, "Idempotency-Key", "k3")
	if code != http.StatusBadRequest || !strings.Contains(string(b), "differ") {
		t.Errorf("body and header keys differing: %d %s, want 400", code, b)
	}
}

// A trigger for later writes its run at once, SCHEDULED at the time asked
// (a delay from the database's clock, or an absolute time); one in the
// past runs now; what cannot be meant is refused with the reason.
func TestTriggerLater(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	job := e.job("a", "echo")
	path := fmt.Sprintf("/api/v1/jobs/%d/trigger", job.ID)

	before := time.Now()
	code, b := e.do("operator", http.MethodPost, path, apiv1.TriggerRequest{Delay: "1h"})
	if code != http.StatusAccepted {
		t.Fatalf("delay 1h: %d %s", code, b)
	}
	run := runOf(t, b)
	if run.Status != "SCHEDULED" || run.ScheduledAt.Before(before.Add(59*time.Minute)) || run.ScheduledAt.After(time.Now().Add(61*time.Minute)) {
		t.Errorf("delay 1h from %s: run %s at %s, want SCHEDULED an hour later", before.Format(time.TimeOnly), run.Status, run.ScheduledAt)
	}

	at := time.Now().Add(48 * time.Hour).Truncate(time.Second)
	code, b = e.do("operator", http.MethodPost, path, apiv1.TriggerRequest{At: &at})
	if code != http.StatusAccepted || !runOf(t, b).ScheduledAt.Equal(at) {
		t.Errorf("at %s: %d %s, want its run scheduled then", at, code, b)
	}

	past := time.Now().Add(-time.Hour)
	code, b = e.do("operator", http.MethodPost, path, apiv1.TriggerRequest{At: &past})
	if code != http.StatusAccepted || runOf(t, b).ScheduledAt.Before(before) {
		t.Errorf("at an hour ago: %d %s, want a run now", code, b)
	}

	far := time.Now().AddDate(2, 0, 0)
	for _, c := range []struct {
		req  apiv1.TriggerRequest
		want string
	}{
		{apiv1.TriggerRequest{At: &at, Delay: "1m"}, "not both"},
		{apiv1.TriggerRequest{Delay: "-5s"}, "positive"},
		{apiv1.TriggerRequest{Delay: "tomorrow"}, "positive"},
		{apiv1.TriggerRequest{Delay: "9000h"}, "up to a year"},
		{apiv1.TriggerRequest{At: &far}, "one-shot"},
		{apiv1.TriggerRequest{IdempotencyKey: "a\nb"}, "control character"},
		{apiv1.TriggerRequest{IdempotencyKey: strings.Repeat("k", 256)}, "more than 255"},
	} {
		code, b := e.do("operator", http.MethodPost, path, c.req)
		if code != http.StatusBadRequest || !strings.Contains(string(b), c.want) {
			t.Errorf("%+v: %d %s, want 400 saying %q", c.req, code, b, c.want)
		}
	}
}

func runOf(t *testing.T, b []byte) apiv1.Run {
	t.Helper()
	var r apiv1.Run
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return r
}
