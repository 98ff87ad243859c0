package scrape

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func registry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "jetjob_test_total", Help: "test"}, []string{"group"})
	c.WithLabelValues("secret-group").Inc()
	reg.MustRegister(c)
	return reg
}

// With a token, only a request carrying it reads the metrics; without one
// the handler is open (its listener is what fences it).
func TestHandlerToken(t *testing.T) {
	const token = "0123456789abcdef0123"
	for _, c := range []struct {
		name, token, auth string
		want              int
	}{
		{"open", "", "", 200},
		{"right token", token, "Bearer " + token, 200},
		{"no token", token, "", 401},
		{"wrong token", token, "Bearer " + strings.Repeat("x", len(token)), 401},
		{"token as basic", token, "Basic " + token, 401},
		{"token prefix", token, "Bearer " + token[:10], 401},
	} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", "/metrics", nil)
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		Handler(registry(), c.token).ServeHTTP(rec, req)
		if rec.Code != c.want {
			t.Errorf("%s: %d, want %d", c.name, rec.Code, c.want)
		}
		if leaked := strings.Contains(rec.Body.String(), "secret-group"); leaked != (c.want == 200) {
			t.Errorf("%s: body shows the series: %v, want %v", c.name, leaked, c.want == 200)
		}
		if c.want == 401 && !strings.HasPrefix(rec.Header().Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%s: no WWW-Authenticate: Bearer", c.name)
		}
	}
}

func TestReadTokenFile(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name, content, want, err string
	}{
		{"trailing newline", "0123456789abcdef0123\n", "0123456789abcdef0123", ""},
		{"too short", "short\n", "", "at least 16"},
		{"empty", "", "", "at least 16"},
		{"two lines", "0123456789abcdef\n0123456789abcdef\n", "", "one line"},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-"))
		if err := os.WriteFile(path, []byte(c.content), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := ReadTokenFile(path)
		if got != c.want || (err == nil) != (c.err == "") || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%s: %q, %v; want %q and an error naming %q", c.name, got, err, c.want, c.err)
		}
	}
	if _, err := ReadTokenFile(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing file reads")
	}
}

func TestExposed(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:9464": false, "[::1]:9464": false, "localhost:9464": false, "127.0.0.2:1": false,
		":9464": true, "0.0.0.0:9464": true, "[::]:9464": true, "10.0.0.5:9464": true, "metrics.example:9464": true,
	} {
		if got := Exposed(addr); got != want {
			t.Errorf("Exposed(%q) = %v, want %v", addr, got, want)
		}
	}
	if Warning(":9464", "") == "" || Warning(":9464", "tok") != "" || Warning("127.0.0.1:9464", "") != "" {
		t.Error("Warning: want one only for an exposed address without a token")
	}
}
