// Package scrape serves a process's Prometheus registry to scrapers: the
// one place that decides who may read a jetjob binary's metrics.
//
// Metrics name what the API hides from users who are not members: groups,
// handlers, routes. So the scheduler serves them on a listener of their own,
// on the loopback interface unless told otherwise, and, when a scrape token
// is configured, only to requests that carry it ("Authorization: Bearer
// <token>", what Prometheus sends with a scrape config's authorization or a
// ServiceMonitor's bearer token). The worker's metrics follow the same rule.
package scrape

import (
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"unicode"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// MinTokenLen is the shortest scrape token ReadTokenFile accepts: a token
// is a secret, not a password to remember (openssl rand -hex 32 gives 64).
const MinTokenLen = 16

// Handler serves g's metrics as Prometheus text. With a token, a request
// without "Authorization: Bearer <token>" answers 401 and reads nothing.
func Handler(g prometheus.Gatherer, token string) http.Handler {
	metrics := promhttp.HandlerFor(g, promhttp.HandlerOpts{})
	if token == "" {
		return metrics
	}
	want := []byte(token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="jetjob metrics"`)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error": "metrics need the scrape token: Authorization: Bearer <token>"}` + "\n"))
			return
		}
		metrics.ServeHTTP(w, r)
	})
}

// ReadTokenFile reads a scrape token from path: the file's content without
// the whitespace around it (a trailing newline), at least MinTokenLen
// characters and no whitespace or control character inside.
func ReadTokenFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("scrape token: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	switch {
	case len(tok) < MinTokenLen:
		return "", fmt.Errorf("scrape token in %s: %d characters, want at least %d (e.g. openssl rand -hex 32)", path, len(tok), MinTokenLen)
	case strings.IndexFunc(tok, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return "", fmt.Errorf("scrape token in %s: holds a space or control character; want one line", path)
	}
	return tok, nil
}

// Exposed reports whether addr (host:port) listens beyond the loopback
// interface: an empty host, an unspecified address, or any name or address
// other than localhost and the loopback ones. A process warns when it
// serves metrics there without a token.
func Exposed(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return true
	}
	if host == "localhost" {
		return false
	}
	ip := net.ParseIP(host)
	return ip == nil || !ip.IsLoopback()
}

// Warning is what a process logs at start when it serves metrics on addr
// with token: "" while they are on the loopback interface or need the
// token. Serving them openly elsewhere is allowed (a network policy may
// fence the port) but never silent.
func Warning(addr, token string) string {
	if token != "" || !Exposed(addr) {
		return ""
	}
	return fmt.Sprintf("metrics on %s are readable by anyone who reaches that address (they name groups and handlers): set a scrape token file, or fence the port", addr)
}
