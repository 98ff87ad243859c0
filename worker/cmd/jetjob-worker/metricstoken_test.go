package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jetjob/jetjob/internal/scrape"
)

// The worker's metrics follow the scheduler's rule (issue #26, finding
// 11): on the loopback interface unless told otherwise, and with a scrape
// token only for requests that carry it. The probes stay open: the kubelet
// sends no token.
func TestBinaryMetricsToken(t *testing.T) {
	if scrape.Exposed(DefaultMetricsListen) {
		t.Errorf("--metrics-listen defaults to %s, beyond the loopback interface", DefaultMetricsListen)
	}
	const token = "worker-scrape-0123456789"
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, url := startNATS(t, 0)
	p := start(t, map[string]string{
		"JETJOB_NATS_URL": url, "JETJOB_GROUP": "ops", "JETJOB_HANDLERS": "shell", "JETJOB_METRICS_TOKEN_FILE": file,
	})
	base := p.probeAddr()
	for _, c := range []struct {
		path, token string
		want        int
	}{
		{"/metrics", "", http.StatusUnauthorized},
		{"/metrics", "wrong-0123456789abcdef", http.StatusUnauthorized},
		{"/metrics", token, http.StatusOK},
		{"/healthz", "", http.StatusOK},
	} {
		req, _ := http.NewRequest(http.MethodGet, base+c.path, nil)
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("GET %s with token %q: %d, want %d", c.path, c.token, resp.StatusCode, c.want)
		}
	}
	waitStatus(t, base+"/readyz", http.StatusOK)
	p.stopsCleanly()

	// A token too short to be a secret, or a missing file, is refused at
	// start, naming the setting.
	short := filepath.Join(t.TempDir(), "short")
	if err := os.WriteFile(short, []byte("abc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{short, filepath.Join(t.TempDir(), "missing")} {
		p := start(t, map[string]string{"JETJOB_NATS_URL": url, "JETJOB_GROUP": "ops", "JETJOB_HANDLERS": "shell", "JETJOB_METRICS_TOKEN_FILE": f})
		if code := p.wait(); code != 2 || !strings.Contains(p.out.String(), "--metrics-token-file / JETJOB_METRICS_TOKEN_FILE") {
			t.Errorf("token file %s: exit %d, output %q: want 2 naming --metrics-token-file", f, code, p.out.String())
		}
	}
}
