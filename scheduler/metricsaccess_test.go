package scheduler_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/jetjob/jetjob/worker"
)

// getMetrics GETs url with the bearer token (none when empty) and returns
// the status and body.
func getMetrics(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Metrics name groups and handlers the API hides from non-members (issue
// #26, finding 11). Without a scrape token the API's listener serves no
// /metrics at all, and the metrics listener (loopback by default) does;
// with one, both answer only requests that carry it: not anonymous ones,
// not a wrong token, not even an admin's API key.
func TestMetricsNeedTheirListenerOrToken(t *testing.T) {
	t.Parallel()
	noop := func(w *worker.Worker) { w.Handle("h", func(context.Context, *worker.Job) error { return nil }) }
	t.Run("no token", func(t *testing.T) {
		sys := startSystem(t, noop)
		if code, body := getMetrics(t, sys.url+"/metrics", ""); code != http.StatusNotFound || strings.Contains(body, "jetjob_") {
			t.Errorf("API listener /metrics without a token: %d %.200s, want 404 and no series", code, body)
		}
		if code, body := getMetrics(t, sys.url+"/metrics", testToken); code != http.StatusNotFound || strings.Contains(body, "jetjob_") {
			t.Errorf("API listener /metrics with an admin key: %d %.200s, want 404 and no series", code, body)
		}
		if code, body := getMetrics(t, sys.metrics+"/metrics", ""); code != http.StatusOK || !strings.Contains(body, "jetjob_build_info") {
			t.Errorf("metrics listener: %d %.200s, want 200 and the series", code, body)
		}
		if code, _ := getMetrics(t, sys.metrics+"/api/v1/jobs", testToken); code != http.StatusNotFound {
			t.Errorf("metrics listener serves the API: %d, want 404", code)
		}
	})
	t.Run("token", func(t *testing.T) {
		const scrapeToken = "scrape-0123456789abcdef"
		sys := startSystem(t, noop, func(c *systemConfig) { c.MetricsToken = scrapeToken })
		for _, base := range []string{sys.url, sys.metrics} {
			for _, tok := range []string{"", "wrong-0123456789abcdef", testToken} {
				if code, body := getMetrics(t, base+"/metrics", tok); code != http.StatusUnauthorized || strings.Contains(body, "jetjob_") {
					t.Errorf("%s/metrics with token %q: %d %.200s, want 401 and no series", base, tok, code, body)
				}
			}
			if code, body := getMetrics(t, base+"/metrics", scrapeToken); code != http.StatusOK || !strings.Contains(body, "jetjob_build_info") {
				t.Errorf("%s/metrics with the scrape token: %d %.200s, want 200 and the series", base, code, body)
			}
		}
	})
}
