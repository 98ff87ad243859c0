package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/jetjob/jetjob/internal/natsembed"
	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/shared/wire"
)

var listenRE = regexp.MustCompile(`metrics and probes listening.*"addr":\s*"([^"]+)"`)

// probeAddr waits for the worker's log line naming its probe address.
func (p *proc) probeAddr() string {
	p.t.Helper()
	p.waitOutput("metrics and probes listening")
	m := listenRE.FindStringSubmatch(p.out.String())
	if m == nil {
		p.t.Fatalf("no address in the listening line; output:\n%s", p.out.String())
	}
	return "http://" + m[1]
}

// get returns a GET's status code and body.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// waitStatus polls url until it answers code, and returns the body.
func waitStatus(t *testing.T, url string, code int) string {
	t.Helper()
	var (
		got  int
		body string
	)
	defer func() {
		if got != code { // Eventually gave up: say what it last saw
			t.Logf("GET %s last answered %d %s", url, got, body)
		}
	}()
	testwait.Eventually(t, waitLimit, fmt.Sprintf("GET %s to answer %d", url, code), func() bool {
		got, body = get(t, url)
		return got == code
	})
	return body
}

// scrapeMetrics parses /metrics into `name{label="value",…}` → value (a
// histogram's observation count).
func scrapeMetrics(t *testing.T, base string) map[string]float64 {
	t.Helper()
	code, body := get(t, base+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics is not Prometheus text: %v", err)
	}
	out := map[string]float64{}
	for name, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			sort.Strings(ls)
			out[name+"{"+strings.Join(ls, ",")+"}"] = value(m)
		}
	}
	return out
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return m.GetUntyped().GetValue()
}

// The binary serves its build on /healthz, the documented worker series on
// /metrics after a few runs, and /readyz follows NATS: 503 naming the
// reason while the server is down, 200 again once it is back.
func TestBinaryMetricsAndProbes(t *testing.T) {
	dir := t.TempDir()
	e, url := startNATSWith(t, natsembed.Options{StoreDir: dir})
	port := e.Srv.Port()
	p := start(t, map[string]string{
		"JETJOB_NATS_URL": url, "JETJOB_GROUP": "ops", "JETJOB_HANDLERS": "shell", "JETJOB_WORKER_ID": "m1",
		"JETJOB_CONCURRENCY": "3",
	})
	base := p.probeAddr()

	code, body := get(t, base+"/healthz")
	var h struct{ Status, Version, Commit string }
	if err := json.Unmarshal([]byte(body), &h); err != nil || code != http.StatusOK ||
		h.Status != "ok" || h.Version != testVersion || h.Commit != testCommit {
		t.Errorf("/healthz: %d %s, want 200 ok with version %s, commit %s", code, body, testVersion, testCommit)
	}
	waitStatus(t, base+"/readyz", http.StatusOK)

	e.publish("ops", 1, "true")
	e.publish("ops", 2, "exit 3")
	e.Event(1, wire.EventFinished)
	e.Event(2, wire.EventFinished)
	const g = `group="ops"`
	want := map[string]float64{
		`jetjob_worker_runs_started_total{` + g + `,handler="shell"}`:                                                     2,
		`jetjob_worker_runs_finished_total{` + g + `,handler="shell",status="SUCCEEDED"}`:                                 1,
		`jetjob_worker_runs_finished_total{` + g + `,handler="shell",status="FAILED"}`:                                    1,
		`jetjob_worker_run_duration_seconds{` + g + `,handler="shell"}`:                                                   2,
		`jetjob_worker_trigger_pickup_seconds{` + g + `,lane="shared"}`:                                                   2,
		`jetjob_worker_slots{` + g + `,lane="shared"}`:                                                                    3,
		`jetjob_worker_slots{` + g + `,lane="directed"}`:                                                                  3,
		`jetjob_worker_slots_busy{` + g + `,lane="shared"}`:                                                               0,
		`jetjob_worker_events_pending{` + g + `}`:                                                                         0,
		`jetjob_worker_handlers_abandoned_total{` + g + `}`:                                                               0,
		`jetjob_worker_abandoned_handlers{` + g + `}`:                                                                     0,
		`jetjob_worker_log_lines_dropped_total{` + g + `}`:                                                                0,
		fmt.Sprintf(`jetjob_build_info{commit=%q,go_version=%q,version=%q}`, testCommit, goVersion(t, base), testVersion): 1,
	}
	expectSeries(t, base, want)

	// NATS goes away: not ready, saying why; the process stays alive.
	// Until the client notices the closed connection, the probe fails on
	// its consumer look-up instead (also 503); then it names the cause.
	e.Srv.Shutdown()
	waitStatus(t, base+"/readyz", http.StatusServiceUnavailable)
	testwait.Eventually(t, waitLimit, "/readyz to say NATS is not connected", func() bool {
		code, body := get(t, base+"/readyz")
		return code == http.StatusServiceUnavailable && strings.Contains(body, "NATS not connected")
	})
	if code, _ := get(t, base+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz while NATS is down: %d, want 200 (alive)", code)
	}
	srv, err := natsembed.Start(natsembed.Options{StoreDir: dir, Port: port})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	waitStatus(t, base+"/readyz", http.StatusOK)
	e.publish("ops", 3, "true")
	e.Event(3, wire.EventFinished)
	want[`jetjob_worker_runs_finished_total{`+g+`,handler="shell",status="SUCCEEDED"}`] = 2
	want[`jetjob_worker_runs_started_total{`+g+`,handler="shell"}`] = 3
	want[`jetjob_worker_run_duration_seconds{`+g+`,handler="shell"}`] = 3
	want[`jetjob_worker_trigger_pickup_seconds{`+g+`,lane="shared"}`] = 3
	expectSeries(t, base, want)

	p.stopsCleanly()
}

// goVersion reads the Go version the binary reports in jetjob_build_info.
func goVersion(t *testing.T, base string) string {
	t.Helper()
	for k := range scrapeMetrics(t, base) {
		if m := regexp.MustCompile(`^jetjob_build_info\{.*go_version="([^"]+)"`).FindStringSubmatch(k); m != nil {
			return m[1]
		}
	}
	t.Fatal("no jetjob_build_info on /metrics")
	return ""
}

// expectSeries scrapes until every series in want has its value (a run's
// counters move just after its event is stored).
func expectSeries(t *testing.T, base string, want map[string]float64) {
	t.Helper()
	var off []string
	defer func() {
		if len(off) > 0 { // Eventually gave up: say what was off last
			sort.Strings(off)
			t.Logf("/metrics, last scrape:\n%s", strings.Join(off, "\n"))
		}
	}()
	testwait.Eventually(t, waitLimit, "the /metrics series to have their values", func() bool {
		got := scrapeMetrics(t, base)
		off = off[:0]
		for k, v := range want {
			if g, ok := got[k]; !ok || g != v {
				off = append(off, fmt.Sprintf("%s = %v (present %v), want %v", k, g, ok, v))
			}
		}
		return len(off) == 0
	})
}
