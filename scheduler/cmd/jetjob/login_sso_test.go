package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
	"github.com/jetjob/jetjob/scheduler/internal/api"
	"github.com/jetjob/jetjob/scheduler/internal/oidctest"
	"github.com/jetjob/jetjob/scheduler/internal/sso"
)

// ssoAPI is a real API with one identity provider, corp, a real OpenID
// Provider in the test's process: cleo is in jj-ops (operator of demo).
func ssoAPI(t *testing.T) (*realAPI, *oidctest.Provider) {
	t.Helper()
	isolate(t)
	op := oidctest.Start(t, oidctest.Options{ClientID: "jetjob-cli-test", ClientSecret: "cli-test-client-secret",
		Users: []oidctest.User{{Subject: "s-cleo", Username: "cleo", Password: "cleo-pw", Name: "Cleo", Groups: []string{"jj-ops"}}}})
	r := newRealAPIWith(t, func(c *api.Config) {
		cfg := &sso.Config{PublicURL: "http://127.0.0.1:1", OIDC: []sso.OIDCConfig{{ID: "corp", Issuer: op.Issuer,
			ClientID: "jetjob-cli-test", ClientSecret: "cli-test-client-secret", Scopes: []string{"groups"},
			Mapping: sso.Mapping{Grants: []sso.GrantRule{{From: "jj-ops", Group: "demo", Role: "operator"}}}}}}
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		ps, err := sso.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		c.SSO = ps
	})
	r.admin(t, "", "groups", "create", "demo")
	return r, op
}

// startCLI runs the CLI in the background; its stderr is read line by
// line from the returned channel, its result comes on done.
func startCLI(t *testing.T, args ...string) (lines <-chan string, done <-chan result) {
	t.Helper()
	pr, pw := io.Pipe()
	ls := make(chan string, 64)
	res := make(chan result, 1)
	go func() {
		var out bytes.Buffer
		code := run(context.Background(), args, strings.NewReader(""), &out, pw)
		pw.Close()
		res <- result{code: code, stdout: out.String()}
	}()
	go func() {
		defer close(ls)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			ls <- sc.Text()
		}
	}()
	return ls, res
}

// loggedInAs checks that the CLI saved a key of user with the mapped grant.
func loggedInAs(t *testing.T, res result, user string) {
	t.Helper()
	if res.code != exitOK || !strings.Contains(res.stdout, "as "+user+".") {
		t.Fatalf("login --sso: exit %d, stdout %q", res.code, res.stdout)
	}
	me := decodeJSON[apiv1.Me](t, must(t, runCLI(t, "", "-o", "json", "whoami"), "whoami"))
	if me.Name != user || me.Auth != "key" || len(me.Grants) != 1 || me.Grants[0] != (apiv1.Grant{Group: "demo", Role: "operator"}) {
		t.Fatalf("whoami after login --sso: %+v", me)
	}
}

// The device grant: the CLI shows a code, the user enters it at the
// provider, the CLI gets a key of theirs.
func TestLoginSSODevice(t *testing.T) {
	r, op := ssoAPI(t)
	lines, done := startCLI(t, "--api", r.URL, "login", "--sso", "corp", "--name", "laptop")
	code := op.UserCode(t)
	line := <-lines
	if !strings.Contains(line, "enter the code "+code) || !strings.Contains(line, op.Issuer+"/device") {
		t.Fatalf("the CLI said %q", line)
	}
	op.CompleteDevice(t, code, "cleo", "cleo-pw")
	loggedInAs(t, <-done, "cleo")
	cfg, err := client.LoadConfig(mustConfigPath(t))
	if err != nil || !strings.HasPrefix(cfg.Token, "jj_") {
		t.Fatalf("config: %+v, %v", cfg, err)
	}
}

// The loopback redirect with PKCE: the CLI shows an address, the browser
// signs in at the provider and comes back to the CLI's listener.
func TestLoginSSOLoopback(t *testing.T) {
	r, op := ssoAPI(t)
	lines, done := startCLI(t, "--api", r.URL, "login", "--sso", "corp", "--loopback")
	var authURL string
	for l := range lines {
		if u, ok := strings.CutPrefix(l, "  "); ok && strings.HasPrefix(u, op.Issuer) {
			authURL = u
			break
		}
	}
	if !strings.Contains(authURL, "code_challenge_method=S256") || !strings.Contains(authURL, "redirect_uri=http%3A%2F%2F127.0.0.1%3A") {
		t.Fatalf("the CLI's address %q", authURL)
	}
	go func() {
		for range lines { // the rest of stderr
		}
	}()
	status, body := op.Browse(t, authURL, "cleo", "cleo-pw")
	if status != 200 || !strings.Contains(body, "Signed in to jetjob") {
		t.Fatalf("the browser's last page: %d %s", status, body)
	}
	loggedInAs(t, <-done, "cleo")
}

// An unknown provider is named with the known ones.
func TestLoginSSOUnknownProvider(t *testing.T) {
	r, _ := ssoAPI(t)
	res := runCLI(t, "", "--api", r.URL, "login", "--sso", "nope")
	if res.code != exitUsage || !strings.Contains(res.stderr, `--sso "nope"`) || !strings.Contains(res.stderr, "[corp]") {
		t.Fatalf("unknown provider: exit %d, stderr %q", res.code, res.stderr)
	}
}

func mustConfigPath(t *testing.T) string {
	t.Helper()
	p, err := client.ConfigPath()
	if err != nil {
		t.Fatal(err)
	}
	return p
}
