package httplimit

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/jetjob/jetjob/internal/testwait"
)

// serve runs Server(cfg, New(cfg, h, authenticated)) on a loopback port
// until the test ends and returns its address.
func serve(t *testing.T, cfg Config, h http.Handler, authenticated func(*http.Request) bool) (string, *Limiter) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := New(cfg, h, authenticated)
	srv := Server(cfg, l)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String(), l
}

// slowPost opens a connection and sends a POST whose body announces
// length bytes but carries only the first few: a client that sends slowly
// or not at all. The connection is closed when the test ends.
func slowPost(t *testing.T, addr, path, auth string, length int) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	hdr := ""
	if auth != "" {
		hdr = "Authorization: " + auth + "\r\n"
	}
	if _, err := fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: jetjob\r\n%sContent-Length: %d\r\n\r\n0123456789", path, hdr, length); err != nil {
		t.Fatal(err)
	}
	return c
}

// answer reads the response on c. The read deadline only keeps a broken
// server from hanging the test; what is checked is the answer.
func answer(t *testing.T, c net.Conn) *http.Response {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(60 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(strings.NewReader(string(b)))
	return resp
}

// readAll is a handler that reads the body and says how that went: 200,
// or 408 when the body was not received in time.
func readAll(w http.ResponseWriter, r *http.Request) {
	if _, err := io.ReadAll(r.Body); err != nil {
		code := http.StatusBadRequest
		if errors.Is(err, os.ErrDeadlineExceeded) {
			code = http.StatusRequestTimeout
		}
		http.Error(w, err.Error(), code)
		return
	}
	_, _ = io.WriteString(w, "read")
}

// A body that does not arrive is cut off once BodyTimeout has passed: the
// handler's read fails with a deadline error (the API answers 408), and the
// connection is not kept.
func TestSlowBodyIsCutOff(t *testing.T) {
	cfg := Config{BodyTimeout: 100 * time.Millisecond}
	addr, l := serve(t, cfg, http.HandlerFunc(readAll), nil)
	c := slowPost(t, addr, "/api/v1/login", "", 1000)
	resp := answer(t, c)
	if resp.StatusCode != http.StatusRequestTimeout {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("slow body: %d %s, want 408 from a read cut off by the deadline", resp.StatusCode, b)
	}
	if !resp.Close {
		t.Errorf("the connection of a cut-off body is kept alive")
	}
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Errorf("the connection still reads after the cut-off body's answer")
	}
	if n := counter(t, l, "body_timeout"); n != 1 {
		t.Errorf("jetjob_http_limited_total{reason=body_timeout} = %v, want 1", n)
	}
}

// Once the body is read, its deadline no longer applies: a handler that
// answers long after BodyTimeout (a log followed live) keeps its context,
// which net/http would cancel on a timed-out read of the connection.
func TestBodyDeadlineLiftedOnceRead(t *testing.T) {
	cfg := Config{BodyTimeout: 50 * time.Millisecond}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		// The scenario is the deadline's instant passing while the
		// handler works.
		testwait.SleepUntil(start.Add(6 * cfg.BodyTimeout))
		if err := r.Context().Err(); err != nil {
			http.Error(w, "context ended: "+err.Error(), http.StatusInternalServerError)
			return
		}
		_, _ = io.WriteString(w, "still here")
	})
	addr, _ := serve(t, cfg, h, nil)
	resp, err := http.Post("http://"+addr+"/x", "application/json", strings.NewReader(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(b) != "still here" {
		t.Fatalf("%d %s, want 200 still here", resp.StatusCode, b)
	}
}

// Requests with a body and without valid credentials share MaxAnonymous:
// past it they answer 503 at once, while the probes, requests without a
// body and authenticated requests are served; a freed slot serves again.
func TestAnonymousBudget(t *testing.T) {
	cfg := Config{BodyTimeout: 10 * time.Minute, MaxAnonymous: 2, AlwaysServe: []string{"/healthz"}}
	entered := make(chan struct{}, 10)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			_, _ = io.WriteString(w, "ok")
			return
		}
		entered <- struct{}{}
		readAll(w, r)
	})
	addr, l := serve(t, cfg, h, func(r *http.Request) bool { return r.Header.Get("Authorization") == "Bearer good" })

	held := []net.Conn{slowPost(t, addr, "/api/v1/login", "", 1000), slowPost(t, addr, "/login", "", 1000)}
	for range held {
		testwait.Recv(t, 30*time.Second, "a slow anonymous body in its handler", entered)
	}
	for _, auth := range []string{"", "Bearer forged"} {
		resp := answer(t, slowPost(t, addr, "/api/v1/login", auth, 1000))
		if resp.StatusCode != http.StatusServiceUnavailable || !resp.Close || resp.Header.Get("Retry-After") == "" {
			t.Errorf("a third anonymous body (Authorization %q): %d close=%v Retry-After %q, want 503, closed, Retry-After",
				auth, resp.StatusCode, resp.Close, resp.Header.Get("Retry-After"))
		}
	}
	if n := counter(t, l, "anonymous_budget"); n != 2 {
		t.Errorf("jetjob_http_limited_total{reason=anonymous_budget} = %v, want 2", n)
	}

	for _, c := range []struct {
		name, method, path, auth, body, want string
	}{
		{"probe with a body", "POST", "/healthz", "", "x", "ok"},
		{"probe", "GET", "/healthz", "", "", "ok"},
		{"anonymous without a body", "GET", "/jobs", "", "", "read"},
		{"authenticated with a body", "POST", "/api/v1/jobs", "Bearer good", `{"a":1}`, "read"},
	} {
		var body io.Reader
		if c.body != "" {
			body = strings.NewReader(c.body)
		}
		req, _ := http.NewRequest(c.method, "http://"+addr+c.path, body)
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(b) != c.want {
			t.Errorf("%s during the flood: %d %s, want 200 %s", c.name, resp.StatusCode, b, c.want)
		}
	}

	// A held client goes away: its slot serves the next anonymous body.
	held[0].Close()
	testwait.Eventually(t, 30*time.Second, "an anonymous body served once a slot is free", func() bool {
		resp, err := http.Post("http://"+addr+"/api/v1/login", "application/json", strings.NewReader(`{}`))
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// counter is jetjob_http_limited_total{reason}.
func counter(t *testing.T, l *Limiter, reason string) float64 {
	t.Helper()
	var m dto.Metric
	if err := l.limited.WithLabelValues(reason).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
