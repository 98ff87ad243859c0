package main

import (
	"strings"
	"testing"
)

// "users password": your own needs the current password (two lines on
// stdin); a wrong one is refused and changes nothing; an admin resets
// another user's with only the new one, and --revoke-credentials takes
// away their keys (the CLI's saved one included).
func TestUsersPassword(t *testing.T) {
	r := isolatedAPI(t)
	r.admin(t, "op-password-12\n", "users", "create", "op", "--role", "viewer", "--password-stdin")
	must(t, runCLI(t, "op-password-12\n", "--api", r.URL, "login", "--user", "op", "--password-stdin"), "login")

	// Your own: one line is not enough, a wrong current one is refused.
	if res := runCLI(t, "only-the-new-one\n", "users", "password", "op", "--password-stdin"); res.code != exitUsage ||
		!strings.Contains(res.stderr, "stdin holds one line; give 2 passwords, one a line") {
		t.Fatalf("own password with one line: exit %d, stderr %q", res.code, res.stderr)
	}
	if res := runCLI(t, "not-my-password\nnew-password-12\n", "users", "password", "op", "--password-stdin"); res.code != exitError ||
		!strings.Contains(res.stderr, "current_password is not your password") {
		t.Fatalf("own password with a wrong current one: exit %d, stderr %q", res.code, res.stderr)
	}
	res := must(t, runCLI(t, "op-password-12\nnew-password-12\n", "users", "password", "op", "--password-stdin"), "own password")
	if !strings.Contains(res.stdout, "Name:         op\n") || !strings.Contains(res.stderr, "Password of op changed") {
		t.Fatalf("own password printed %q, %q", res.stdout, res.stderr)
	}
	if res := runCLI(t, "op-password-12\n", "--api", r.URL, "login", "--user", "op", "--password-stdin"); res.code != exitError {
		t.Fatalf("login with the old password: exit %d", res.code)
	}
	must(t, runCLI(t, "", "whoami"), "the saved key after a change without --revoke-credentials")

	// An admin resets it, revoking every key of op's.
	r.admin(t, "reset-password-1\n", "users", "password", "op", "--password-stdin", "--revoke-credentials")
	if res := runCLI(t, "", "whoami"); res.code != exitError || !strings.Contains(res.stderr, "401") && !strings.Contains(res.stderr, "refused") {
		t.Fatalf("op's saved key after the admin revoked it: exit %d, stderr %q", res.code, res.stderr)
	}
	must(t, runCLI(t, "reset-password-1\n", "--api", r.URL, "login", "--user", "op", "--password-stdin"), "login with the reset password")
	rows := tableRows(r.admin(t, "", "audit", "--action", "user.update"))
	if len(rows) < 3 || rows[1][1] != "bootstrap" || rows[2][1] != "op" {
		t.Fatalf("audit of the changes: %q", rows)
	}

	// Only revoking: nothing is read.
	r.admin(t, "", "users", "password", "op", "--revoke-credentials", "--no-password-change")
	if res := runCLI(t, "", "whoami"); res.code != exitError {
		t.Fatalf("op's key after --no-password-change --revoke-credentials: exit %d", res.code)
	}
	if res := runCLI(t, "", "users", "password", "op", "--no-password-change"); res.code != exitUsage {
		t.Fatalf("--no-password-change alone: exit %d, stderr %q", res.code, res.stderr)
	}
}
