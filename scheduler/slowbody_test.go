package scheduler_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
	"github.com/jetjob/jetjob/scheduler/internal/httplimit"
	"github.com/jetjob/jetjob/worker"
)

// slowBody opens a connection to the scheduler's listener and sends a POST
// that announces a body of 4 KiB and carries 10 bytes of it: a client that
// sends slowly, or not at all: JSON for the API, a form for the console.
// It returns the connection, open.
func slowBody(t *testing.T, base, path, auth string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	hdr, start := "Content-Type: application/json\r\n", `{"name":"a`
	if !strings.HasPrefix(path, "/api/") { // a console form
		hdr, start = "Content-Type: application/x-www-form-urlencoded\r\n", "name=alice"
	}
	if auth != "" {
		hdr += "Authorization: Bearer " + auth + "\r\n"
	}
	if _, err := fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: jetjob\r\n%sContent-Length: 4096\r\n\r\n%s", path, hdr, start); err != nil {
		t.Fatal(err)
	}
	return c
}

// request sends one request and returns its status and body.
func request(t *testing.T, method, url, body string, hdr ...string) (int, string, http.Header) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	// A fresh connection per request: one the flood made the server close
	// must not be reused by mistake.
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// A flood of slow, unauthenticated bodies (issue #26, finding 13: 3,000
// were held 48 s+) takes at most the anonymous budget of handlers. Past it
// they answer 503 at once; meanwhile the probes, an API key and a
// signed-in browser session are served as usual, and a login is served
// again once the flood's connections are gone. The body timeout is long
// here so that the flood lasts the whole test.
func TestSlowBodyFloodLeavesProbesAndUsersServed(t *testing.T) {
	t.Parallel()
	const budget, flood = 20, 300
	sys := startSystem(t, func(w *worker.Worker) {
		w.Handle("h", func(context.Context, *worker.Job) error { return nil })
	}, func(c *systemConfig) { c.HTTP = httplimit.Config{BodyTimeout: 10 * time.Minute, MaxAnonymous: budget} })
	ctx := context.Background()
	if _, err := sys.api.CreateJob(ctx, apiv1.JobSpec{Group: "g", Name: "j", Handler: "h", ScheduleType: "none"}); err != nil {
		t.Fatal(err)
	}
	// A user signed in before the flood, by the console's session cookie.
	const password = "correct-horse-battery-staple"
	user, _ := json.Marshal(apiv1.UserCreate{Name: "alice", Password: password, Grants: []apiv1.Grant{{Group: "g", Role: "viewer"}}})
	if code, body, _ := request(t, "POST", sys.url+"/api/v1/users", string(user), "Authorization", "Bearer "+testToken); code != http.StatusCreated {
		t.Fatalf("create user: %d %s", code, body)
	}
	login := func() (int, string, http.Header) {
		t.Helper()
		return request(t, "POST", sys.url+"/api/v1/login", `{"name":"alice","password":"`+password+`"}`, "Content-Type", "application/json")
	}
	code, body, hdr := login()
	if code != http.StatusOK {
		t.Fatalf("login before the flood: %d %s", code, body)
	}
	var session string
	for _, c := range (&http.Response{Header: hdr}).Cookies() {
		if c.Name == client.SessionCookie {
			session = c.Value
		}
	}
	if session == "" {
		t.Fatalf("login set no session cookie: %v", hdr)
	}

	// The flood: half on the API's login, half on the console's (whose
	// form is read before any session is looked at), and some with a
	// forged key, which is no way past the budget.
	conns := make([]net.Conn, 0, flood)
	for i := range flood {
		path, auth := "/api/v1/login", ""
		switch i % 3 {
		case 1:
			path = "/login"
		case 2:
			path, auth = "/api/v1/jobs", "jj_forged0123456789"
		}
		conns = append(conns, slowBody(t, sys.url, path, auth))
	}
	testwait.Eventually(t, 60*time.Second, "the anonymous budget to be full (a login answering 503)", func() bool {
		code, _, _ := login()
		return code == http.StatusServiceUnavailable
	})

	for _, c := range []struct {
		name, method, path string
		hdr                []string
		want               int
		contains           string
	}{
		{"liveness", "GET", "/healthz", nil, 200, `"status"`},
		{"readiness", "GET", "/readyz", nil, 200, `"ready"`},
		{"an API key's listing", "GET", "/api/v1/jobs", []string{"Authorization", "Bearer " + testToken}, 200, `"name": "j"`},
		{"the signed-in user", "GET", "/api/v1/me", []string{"Cookie", client.SessionCookie + "=" + session}, 200, `"alice"`},
		{"the signed-in user's console", "GET", "/jobs", []string{"Cookie", client.SessionCookie + "=" + session}, 200, ">j<"},
	} {
		code, body, _ := request(t, c.method, sys.url+c.path, "", c.hdr...)
		if code != c.want || !strings.Contains(body, c.contains) {
			t.Errorf("%s during the flood: %d %.300s, want %d with %s", c.name, code, body, c.want, c.contains)
		}
	}
	// A signed-in user may still send a body: a job created.
	spec, _ := json.Marshal(apiv1.JobSpec{Group: "g", Name: "during", Handler: "h", ScheduleType: "none"})
	if code, body, _ := request(t, "POST", sys.url+"/api/v1/jobs", string(spec), "Authorization", "Bearer "+testToken); code != http.StatusCreated {
		t.Errorf("an API key's POST during the flood: %d %.300s, want 201", code, body)
	}

	// The flood ends: its held handlers return and logins are served.
	for _, c := range conns {
		c.Close()
	}
	testwait.Eventually(t, 60*time.Second, "a login served once the flood is gone", func() bool {
		code, _, _ := login()
		return code == http.StatusOK
	})
}

// A body that does not arrive in time is cut off (issue #26, finding 13):
// the API answers 408 and closes the connection, whether the caller is
// anonymous (a login) or signed in. The timeout is short here; what is
// checked is the answer, not how long it took.
func TestSlowBodyIsCutOffByTheAPI(t *testing.T) {
	t.Parallel()
	sys := startSystem(t, func(w *worker.Worker) {
		w.Handle("h", func(context.Context, *worker.Job) error { return nil })
	}, func(c *systemConfig) { c.HTTP = httplimit.Config{BodyTimeout: 200 * time.Millisecond} })
	for _, c := range []struct{ path, auth string }{{"/api/v1/login", ""}, {"/api/v1/jobs", testToken}, {"/login", ""}} {
		conn := slowBody(t, sys.url, c.path, c.auth)
		// Only keeps a broken server from hanging the test.
		_ = conn.SetReadDeadline(time.Now().Add(60 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Errorf("POST %s with a slow body: no answer: %v", c.path, err)
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		// The console answers a form it could not read with 400.
		want := http.StatusRequestTimeout
		if c.path == "/login" {
			want = http.StatusBadRequest
		}
		if resp.StatusCode != want || !resp.Close {
			t.Errorf("POST %s with a slow body: %d close=%v %.200s, want %d and the connection closed", c.path, resp.StatusCode, resp.Close, body, want)
		}
	}
}
