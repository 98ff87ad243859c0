package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
	"github.com/jetjob/jetjob/scheduler/internal/api"
)

// The acceptance flow, end to end through the CLI: an admin
// creates a viewer, grants them a group and makes them a key; with that key
// the viewer lists the group's jobs but cannot disable one, and is told
// which permission is missing; the audit log shows who did each step.
func TestAccessControlFlow(t *testing.T) {
	path := isolate(t)
	r := newRealAPI(t)

	// The first admin is made with the bootstrap token, then logs in: the
	// CLI saves the address and a key, and alice works from the file.
	r.admin(t, "admin-password-1\n", "users", "create", "alice", "--role", "admin", "--password-stdin")
	must(t, runCLI(t, "admin-password-1\n", "--api", r.URL, "login", "--user", "alice", "--password-stdin"), "login")
	alice := func(stdin string, args ...string) result {
		t.Helper()
		return must(t, runCLI(t, stdin, args...), fmt.Sprint("alice: ", args))
	}
	alice("", "groups", "create", "demo")
	alice("", "jobs", "create", "--group", "demo", "--name", "hello", "--handler", "hello", "--every", "1h")

	alice("viewer-password-1\n", "users", "create", "viewer1", "--role", "viewer", "--password-stdin")
	out := alice("", "users", "grant", "viewer1", "--group", "demo", "--role", "viewer").stdout
	if !strings.Contains(out, "Grants:       demo: viewer\n") {
		t.Fatalf("users grant printed\n%s", out)
	}
	key := decodeJSON[apiv1.CreatedKey](t, alice("", "keys", "create", "--user", "viewer1", "-o", "json"))
	if key.User != "viewer1" || !strings.HasPrefix(key.Secret, "jj_") || key.ID == 0 {
		t.Fatalf("keys create -o json: %+v", key)
	}

	viewer := func(args ...string) result {
		t.Helper()
		return runCLI(t, "", append([]string{"--token", key.Secret}, args...)...)
	}
	res := must(t, viewer("jobs", "list"), "viewer: jobs list")
	if rows := tableRows(res.stdout); len(rows) != 2 || rows[1][2] != "hello" {
		t.Fatalf("viewer's jobs list:\n%s", res.stdout)
	}
	res = viewer("jobs", "disable", "1")
	want := "Error: permission denied: this needs operator of group demo (\"jetjob whoami\" shows what you have)\n"
	if res.code != exitError || res.stdout != "" || res.stderr != want {
		t.Fatalf("viewer: jobs disable 1: exit %d, stdout %q, stderr %q; want exit 1 and %q", res.code, res.stdout, res.stderr, want)
	}
	if job := decodeJSON[apiv1.Job](t, alice("", "-o", "json", "jobs", "get", "1")); !job.Enabled || job.Version != 1 {
		t.Fatalf("the refused disable changed the job: %+v", job)
	}
	res = viewer("audit")
	if res.code != exitError || !strings.Contains(res.stderr, "permission denied: this needs admin") {
		t.Fatalf("viewer: audit: exit %d, stderr %q", res.code, res.stderr)
	}

	// The audit log, newest first: who did what, with which credential.
	rows := tableRows(alice("", "audit").stdout)
	type step struct{ actor, auth, action, target string }
	wantSteps := []step{
		{"alice", "key:", "key.create", fmt.Sprint("key:", key.ID)},
		{"alice", "key:", "grant.set", "user:viewer1"},
		{"alice", "key:", "user.create", "user:viewer1"},
		{"alice", "key:", "job.create", "job:1"},
		{"alice", "key:", "group.create", "group:demo"},
		{"alice", "session:", "session.logout", "user:alice"},
		{"alice", "session:", "key.create", "key:1"},
		{"alice", "password", "session.login", "user:alice"},
		{"bootstrap", "bootstrap", "user.create", "user:alice"},
	}
	if len(rows) != len(wantSteps)+1 {
		t.Fatalf("audit has %d rows, want %d:\n%q", len(rows)-1, len(wantSteps), rows)
	}
	for i, w := range wantSteps {
		got := rows[i+1] // TIME ACTOR AUTH ACTION TARGET CLIENT
		if got[1] != w.actor || !strings.HasPrefix(got[2], w.auth) || got[3] != w.action || got[4] != w.target || got[5] != "127.0.0.1" {
			t.Errorf("audit row %d = %q, want %+v from 127.0.0.1", i+1, got, w)
		}
	}
	// Alice's steps name the key she logged in with.
	cfg, err := client.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if prefix := "key:" + strings.Split(cfg.Token, "_")[1]; rows[1][2] != prefix {
		t.Errorf("alice's steps were made with %q, want her login key %q", rows[1][2], prefix)
	}
}

// "login" stores a key that works, bound to the address it logged in to;
// "whoami" says who and how; "logout" revokes the key and forgets it.
func TestLoginWhoamiLogout(t *testing.T) {
	path := isolate(t)
	r := newRealAPI(t)
	r.admin(t, "", "groups", "create", "demo")
	r.admin(t, "op-password-12\n", "users", "create", "op", "--role", "operator", "--group", "demo", "--scripts",
		"--display-name", "Olga Operator", "--password-stdin")

	res := runCLI(t, "wrong-password-1\n", "--api", r.URL, "login", "--user", "op", "--password-stdin")
	if res.code != exitError || !strings.Contains(res.stderr, "as op refused: wrong user name or password") {
		t.Fatalf("login with a wrong password: exit %d, stderr %q", res.code, res.stderr)
	}
	if cfg, err := client.LoadConfig(path); err != nil || cfg != (client.Config{}) {
		t.Fatalf("a refused login wrote the config: %+v, %v", cfg, err)
	}

	res = must(t, runCLI(t, "op-password-12\r\n", "--api", r.URL, "login", "--user", "op", "--password-stdin",
		"--name", "laptop", "--expires", "7d"), "login")
	if !strings.HasPrefix(res.stdout, "Logged in to "+r.URL+" as op.\nSaved API key 1 (") || !strings.Contains(res.stdout, path) {
		t.Fatalf("login printed %q", res.stdout)
	}
	cfg, err := client.LoadConfig(path)
	if err != nil || cfg.API != r.URL || !strings.HasPrefix(cfg.Token, "jj_") {
		t.Fatalf("config after login: %+v, %v", cfg, err)
	}
	if strings.Contains(res.stdout+res.stderr, cfg.Token) {
		t.Fatalf("login printed the secret")
	}

	// No flag, no environment: the file's address and key.
	me := decodeJSON[apiv1.Me](t, must(t, runCLI(t, "", "-o", "json", "whoami"), "whoami -o json"))
	if me.Name != "op" || me.Auth != "key" || me.KeyID != 1 || len(me.Grants) != 1 || !me.Grants[0].Scripts {
		t.Fatalf("whoami -o json: %+v", me)
	}
	out := must(t, runCLI(t, "", "whoami"), "whoami").stdout
	printed(t, "whoami", out,
		"User:             op\n",
		"Display name:     Olga Operator\n",
		"Role:             demo: operator+scripts\n",
		"Authenticated by: API key 1 ("+me.KeyPrefix+")\n",
		"Credential from:  "+path+"\n",
		"API:              "+r.URL+"\n",
	)
	keys := decodeJSON[apiv1.KeyList](t, must(t, runCLI(t, "", "-o", "json", "keys", "list"), "keys list"))
	if len(keys.Keys) != 1 || keys.Keys[0].Name != "laptop" || keys.Keys[0].ExpiresAt == nil || keys.Keys[0].User != "op" {
		t.Fatalf("keys list after login: %+v", keys)
	}
	// The login's session was ended once the key existed.
	if l := decodeJSON[apiv1.AuditList](t, r.as(t, bootstrapToken, "", "-o", "json", "audit", "--action", "session.logout")); len(l.Entries) != 1 {
		t.Fatalf("the login left its session open: %+v", l)
	}

	// The file's key is never sent to another address.
	other := newRealAPI(t)
	res = runCLI(t, "", "--api", other.URL, "whoami")
	if res.code != exitError || !strings.Contains(res.stderr, "no API key was sent: log in with \"jetjob login\"") {
		t.Fatalf("whoami on another address: exit %d, stderr %q", res.code, res.stderr)
	}
	// The bootstrap token says so.
	if out := r.admin(t, "", "whoami"); !strings.Contains(out, "Authenticated by: the bootstrap token") || !strings.Contains(out, "Credential from:  --token") {
		t.Fatalf("whoami as bootstrap:\n%s", out)
	}

	res = must(t, runCLI(t, "", "logout"), "logout")
	if !strings.HasPrefix(res.stdout, "Revoked API key 1 ("+me.KeyPrefix+") of op") {
		t.Fatalf("logout printed %q", res.stdout)
	}
	if cfg, err := client.LoadConfig(path); err != nil || cfg != (client.Config{API: r.URL}) {
		t.Fatalf("config after logout: %+v, %v", cfg, err)
	}
	if l := decodeJSON[apiv1.KeyList](t, r.as(t, bootstrapToken, "", "-o", "json", "keys", "list", "--user", "op")); l.Keys[0].RevokedAt == nil {
		t.Fatalf("logout did not revoke the key: %+v", l.Keys[0])
	}
	res = runCLI(t, "", "whoami")
	if res.code != exitError || !strings.Contains(res.stderr, "no API key was sent") {
		t.Fatalf("whoami after logout: exit %d, stderr %q", res.code, res.stderr)
	}
	if res := runCLI(t, "", "logout"); res.code != exitError || !strings.Contains(res.stderr, "holds no API key") {
		t.Fatalf("second logout: exit %d, stderr %q", res.code, res.stderr)
	}

	// A key in the environment would win over the saved one: login says so.
	t.Setenv(envToken, "some-other-key")
	res = must(t, runCLI(t, "op-password-12\n", "login", "--user", "op", "--password-stdin"), "login with JETJOB_API_TOKEN set")
	if !strings.Contains(res.stderr, "note: JETJOB_API_TOKEN is set and takes precedence over the saved key") {
		t.Fatalf("login with JETJOB_API_TOKEN set: stderr %q", res.stderr)
	}
	if cfg, err := client.LoadConfig(path); err != nil || cfg.API != r.URL || cfg.Token == "" {
		t.Fatalf("config after the second login (address from the file): %+v, %v", cfg, err)
	}
}

// On a scheduler under --insecure-no-auth every request is an anonymous
// admin: login still works (its key is made for the user it logged in as)
// and whoami says how things stand.
func TestLoginInsecureNoAuth(t *testing.T) {
	isolate(t)
	r := newRealAPIWith(t, func(c *api.Config) { c.Token, c.InsecureNoAuth = "", true })
	must(t, r.as(t, "", "pw-of-bob-0001\n", "users", "create", "bob", "--role", "admin", "--password-stdin"), "users create")
	must(t, runCLI(t, "pw-of-bob-0001\n", "--api", r.URL, "login", "--user", "bob", "--password-stdin"), "login")
	out := must(t, runCLI(t, "", "whoami"), "whoami").stdout
	if !strings.Contains(out, "User:             anonymous-admin\n") || !strings.Contains(out, "Authenticated by: none: the scheduler runs with --insecure-no-auth\n") {
		t.Fatalf("whoami on an insecure scheduler:\n%s", out)
	}
	keys := decodeJSON[apiv1.KeyList](t, must(t, runCLI(t, "", "-o", "json", "keys", "list", "--user", "bob"), "keys list"))
	if len(keys.Keys) != 1 || keys.Keys[0].User != "bob" {
		t.Fatalf("bob's keys: %+v", keys)
	}
}

// Users and keys through their life: list, get, grant, revoke a grant,
// disable and enable; a key works until it is revoked, and a refused key is
// reported as such.
func TestUsersAndKeys(t *testing.T) {
	r := isolatedAPI(t, "demo", "ops")
	r.admin(t, "", "jobs", "create", "--group", "demo", "--name", "hello", "--handler", "hello")
	r.admin(t, "", "users", "create", "bot", "--role", "viewer", "--group", "demo,ops", "--no-password")
	r.admin(t, "", "users", "grant", "bot", "--group", "ops", "--role", "operator")

	rows := tableRows(r.admin(t, "", "users", "list"))
	if len(rows) != 2 || strings.Join(rows[1], "|") != "bot|-|no|no|demo: viewer, ops: operator|-" {
		t.Fatalf("users list: %q", rows)
	}
	u := adminJSON[apiv1.User](t, r, "users", "revoke", "bot", "--group", "ops")
	if len(u.Grants) != 1 || u.Grants[0].Group != "demo" {
		t.Fatalf("after users revoke: %+v", u.Grants)
	}

	k := adminJSON[apiv1.CreatedKey](t, r, "keys", "create", "--user", "bot", "--name", "ci")
	out := r.admin(t, "", "keys", "create", "--user", "bot", "--expires", "2099-01-01T00:00:00Z")
	printed(t, "keys create", out, "Created API key 2 (", "of user bot", "expires 2099-01-01T00:00:00.000Z", "\n    jj_", "only time the secret is shown")
	as := func(args ...string) result { return r.as(t, k.Secret, "", args...) }
	must(t, as("jobs", "get", "1"), "bot: jobs get")

	r.admin(t, "", "users", "disable", "bot")
	res := as("jobs", "get", "1")
	if res.code != exitError || !strings.Contains(res.stderr, "the API refused the key from --token") || !strings.Contains(res.stderr, "jetjob login") {
		t.Fatalf("a disabled user's key: exit %d, stderr %q", res.code, res.stderr)
	}
	if out := r.admin(t, "", "users", "enable", "bot"); !strings.Contains(out, "Disabled:     no\n") {
		t.Fatalf("users enable printed\n%s", out)
	}
	must(t, as("jobs", "get", "1"), "bot enabled again: jobs get")

	rows = tableRows(r.admin(t, "", "keys", "list", "--user", "bot"))
	if len(rows) != 3 || rows[1][2] != "ci" || rows[1][4] != "active" || rows[1][7] == "-" {
		t.Fatalf("keys list: %q", rows)
	}
	if out := r.admin(t, "", "keys", "revoke", fmt.Sprint(k.ID)); out != fmt.Sprintf("key %d revoked\n", k.ID) {
		t.Fatalf("keys revoke printed %q", out)
	}
	if res := as("jobs", "get", "1"); res.code != exitError || !strings.Contains(res.stderr, "refused the key") {
		t.Fatalf("a revoked key: exit %d, stderr %q", res.code, res.stderr)
	}
	if rows := tableRows(r.admin(t, "", "keys", "list", "--user", "bot")); rows[1][4] != "revoked" {
		t.Fatalf("keys list after revoke: %q", rows)
	}
	if out := r.admin(t, "", "users", "get", "bot"); !strings.Contains(out, "Grants:       demo: viewer\n") {
		t.Fatalf("users get printed\n%s", out)
	}
	if out := r.admin(t, "", "users", "delete", "bot"); out != "user bot deleted\n" {
		t.Fatalf("users delete printed %q", out)
	}
	if res := r.as(t, bootstrapToken, "", "users", "get", "bot"); res.code != exitError || !strings.Contains(res.stderr, "404") {
		t.Fatalf("users get of a deleted user: exit %d, stderr %q", res.code, res.stderr)
	}
}

// Every malformed command line is refused with exit status 2 before any
// request; a password is never taken from anything but a terminal or stdin.
func TestAccessUsage(t *testing.T) {
	r := isolatedAPI(t)
	bad := []struct {
		stdin string
		args  []string
		want  string
	}{
		{"", []string{"users", "create", "v1", "--role", "viewer"}, "stdin is not a terminal, so the password cannot be asked for: pipe it in with --password-stdin"},
		{"", []string{"users", "create", "v1", "--role", "viewer", "--password-stdin"}, "stdin is empty"},
		{"a\nb\n", []string{"users", "create", "v1", "--role", "viewer", "--password-stdin"}, "more than one line"},
		{"pw\n", []string{"users", "create", "v1", "--password-stdin"}, "missing required flag --role"},
		{"pw\n", []string{"users", "create", "v1", "--role", "root", "--password-stdin"}, `invalid --role "root": want viewer, operator or admin`},
		{"pw\n", []string{"users", "create", "v1", "--role", "admin", "--group", "demo", "--password-stdin"}, "--role admin takes no --group"},
		{"pw\n", []string{"users", "create", "v1", "--role", "viewer", "--group", "demo", "--scripts", "--password-stdin"}, "--scripts needs --role operator"},
		{"pw\n", []string{"users", "create", "v1", "--role", "viewer", "--password-stdin", "--no-password"}, "not both"},
		{"pw\n", []string{"users", "create", "bad name", "--role", "viewer", "--password-stdin"}, `invalid user name "bad name"`},
		{"", []string{"users", "create", "v1", "--role", "viewer", "--group", "no/slash", "--no-password"}, `invalid --group "no/slash"`},
		{"", []string{"users", "grant", "v1", "--role", "viewer"}, "missing required flag --group"},
		{"", []string{"users", "grant", "v1", "--group", "demo"}, "missing required flag --role"},
		{"", []string{"users", "grant", "v1", "--group", "demo", "--role", "admin"}, "--role admin is not a role on a group"},
		{"", []string{"users", "grant", "v1", "--group", "demo", "--role", "viewer", "--scripts"}, "--scripts needs --role operator"},
		{"", []string{"users", "revoke", "v1"}, "missing required flag --group"},
		{"", []string{"users", "disable"}, "missing argument NAME"},
		{"", []string{"users", "frob"}, `unknown command "frob"`},
		{"", []string{"keys", "create", "--expires", "soon"}, `--expires "soon"`},
		{"", []string{"keys", "create", "--expires", "2001-01-01T00:00:00Z"}, "is in the past"},
		{"", []string{"keys", "create", "--name", " "}, "--name: must not be empty"},
		{"", []string{"keys", "create", "--user", "a b"}, "invalid user name"},
		{"", []string{"keys", "revoke", "x"}, `invalid key id "x"`},
		{"", []string{"login", "--password-stdin"}, "missing required flag --user"},
		{"pw\n", []string{"login", "--user", "alice"}, "pipe it in with --password-stdin"},
		{"pw\n", []string{"login", "--user", "alice", "--password-stdin", "--expires", "0d"}, `--expires "0d"`},
		{"pw\n", []string{"--token", "x", "login", "--user", "alice", "--password-stdin"}, "--token has no use here"},
		{"", []string{"whoami", "me"}, `unexpected argument "me"`},
	}
	before := r.reqs.Load()
	for _, b := range bad {
		res := runCLI(t, b.stdin, append([]string{"--api", r.URL}, b.args...)...)
		if res.code != exitUsage || res.stdout != "" || !strings.Contains(res.stderr, b.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", b.args, res.code, res.stdout, res.stderr, b.want)
		}
	}
	if n := r.reqs.Load() - before; n != 0 {
		t.Errorf("refused commands sent %d requests", n)
	}
	// The server's password policy comes back as its message.
	res := r.as(t, bootstrapToken, "short\n", "users", "create", "v1", "--role", "viewer", "--password-stdin")
	if res.code != exitError || !strings.Contains(res.stderr, "password is shorter than") {
		t.Errorf("short password: exit %d, stderr %q", res.code, res.stderr)
	}
}
