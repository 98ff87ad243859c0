package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// Users and keys through their life: list, get, grant, revoke a grant,
// disable and enable; a key works until it is revoked, and a refused key is
// reported as such.
func TestUsersAndKeys(t *testing.T) {
	isolate(t)
	r := newRealAPI(t)
	r.admin(t, "", "groups", "create", "demo")
	r.admin(t, "", "groups", "create", "ops")
	r.admin(t, "", "jobs", "create", "--group", "demo", "--name", "hello", "--handler", "hello")
	r.admin(t, "", "users", "create", "bot", "--role", "viewer", "--group", "demo,ops", "--no-password")
	r.admin(t, "", "users", "grant", "bot", "--group", "ops", "--role", "operator")

	rows := tableRows(r.admin(t, "", "users", "list"))
	if len(rows) != 2 || strings.Join(rows[1], "|") != "bot|-|no|no|demo: viewer, ops: operator|-" {
		t.Fatalf("users list: %q", rows)
	}
	u := decodeJSON[apiv1.User](t, must(t, r.as(t, bootstrapToken, "", "-o", "json", "users", "revoke", "bot", "--group", "ops"), "revoke"))
	if len(u.Grants) != 1 || u.Grants[0].Group != "demo" {
		t.Fatalf("after users revoke: %+v", u.Grants)
	}

	k := decodeJSON[apiv1.CreatedKey](t, must(t, r.as(t, bootstrapToken, "", "-o", "json", "keys", "create", "--user", "bot", "--name", "ci"), "keys create"))
	out := r.admin(t, "", "keys", "create", "--user", "bot", "--expires", "2099-01-01T00:00:00Z")
	for _, w := range []string{"Created API key 2 (", "of user bot", "expires 2099-01-01T00:00:00.000Z", "\n    jj_", "only time the secret is shown"} {
		if !strings.Contains(out, w) {
			t.Errorf("keys create printed\n%s\nwithout %q", out, w)
		}
	}
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
	isolate(t)
	r := newRealAPI(t)
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
