package console_test

import (
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// from is an HTTP client whose connections come from ip (a loopback
// address: the API sees each as another client), not following redirects.
func from(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 256},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// loginVia signs in as user with pw through the API (JSON) or the
// console's form, and returns the status, the Retry-After and the body.
func (e *env) loginVia(c *http.Client, console bool, user, pw string) (int, string, string) {
	e.t.Helper()
	var req *http.Request
	if console {
		form := url.Values{"name": {user}, "password": {pw}, "next": {"/"}}
		req, _ = http.NewRequest(http.MethodPost, e.srv.URL+"/login", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	} else {
		body := `{"name":` + strconv.Quote(user) + `,"password":` + strconv.Quote(pw) + `}`
		req, _ = http.NewRequest(http.MethodPost, e.srv.URL+"/api/v1/login", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		e.t.Error(err)
		return 0, "", ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After"), string(b)
}

// A wave of simultaneous wrong passwords for one user, half through the API
// and half through the console's form (one limiter for both), gets at most
// the user's budget of password checks (401); everything else is refused
// with 429 before any hash. Another user signing in from another address
// meanwhile is served; and after the wave the right password is refused
// too, from any address, while the limit holds.
func TestLoginWaveIsLimited(t *testing.T) {
	e := newEnv(t)
	const wave, budget = 240, 5 // budget: auth.NewLoginLimiter's PerUser
	attacker := from("127.0.0.2")
	start := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	var ended atomic.Int64
	for i := range wave {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			code, _, _ := e.loginVia(attacker, i%2 == 1, "operator", "wrong password "+strconv.Itoa(i))
			ended.Add(1)
			mu.Lock()
			codes[code]++
			mu.Unlock()
		}()
	}
	close(start)
	code, _, body := e.loginVia(from("127.0.0.3"), true, "viewer", password)
	during := ended.Load()
	wg.Wait()
	if code != http.StatusSeeOther {
		t.Errorf("another user from another address during the wave: %d, want 303 (signed in)\n%s", code, body)
	}
	t.Logf("wave of %d: %v; the other user was signed in when %d of the wave had their answer", wave, codes, during)
	if codes[http.StatusUnauthorized] < 1 || codes[http.StatusUnauthorized] > budget ||
		codes[http.StatusUnauthorized]+codes[http.StatusTooManyRequests] != wave {
		t.Errorf("wave of %d wrong passwords answered %v: want at most %d checked (401) and the rest refused (429)", wave, codes, budget)
	}

	// The right password, once the wave has spent the budget, through both
	// doors and from a fresh address: refused with the wait.
	for range budget {
		if code, _, _ := e.loginVia(attacker, false, "operator", "one more wrong one"); code != http.StatusUnauthorized && code != http.StatusTooManyRequests {
			t.Fatalf("a wrong password after the wave: %d", code)
		}
	}
	for _, console := range []bool{false, true} {
		code, retry, body := e.loginVia(from("127.0.0.4"), console, "operator", password)
		if n, err := strconv.Atoi(retry); code != http.StatusTooManyRequests || err != nil || n < 1 || !strings.Contains(body, "try again in") {
			t.Errorf("right password after the wave (console %v): %d, Retry-After %q: want 429 with a wait\n%s", console, code, retry, body)
		}
	}
}
