package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// jetjob secrets set takes the value from a file or a variable (never the
// command line), creates the secret and then versions it; list and the
// audit log show names and versions, never the value; delete removes it.
func TestSecretsSetListDelete(t *testing.T) {
	r := isolatedAPI(t, "demo")
	const first, second = "first-VALUE-1", "second-VALUE-2"
	file := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(file, []byte(first+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	printed(t, "set from a file", r.admin(t, "", "secrets", "set", "demo/db-password", "--from-file", file), "version 1")
	t.Setenv("NEW_PW", second)
	printed(t, "set from a variable", r.admin(t, "", "secrets", "set", "demo/db-password", "--from-env", "NEW_PW"), "version 2")
	list := r.admin(t, "", "secrets", "list", "--group", "demo")
	printed(t, "list", list, "db-password", "2")
	audit := r.admin(t, "", "audit", "-o", "json")
	for what, out := range map[string]string{"list": list, "audit": audit} {
		if strings.Contains(out, first) || strings.Contains(out, second) {
			t.Errorf("%s shows a secret's value:\n%s", what, out)
		}
	}
	if res := runCLI(t, "", "secrets", "set", "demo/x"); res.code != 2 {
		t.Errorf("set without a source: exit %d, want 2 (usage): %s", res.code, res.stderr)
	}
	printed(t, "delete", r.admin(t, "", "secrets", "delete", "demo/db-password"), "deleted")
	if list := r.admin(t, "", "secrets", "list", "--group", "demo"); strings.Contains(list, "db-password") {
		t.Errorf("deleted secret still listed:\n%s", list)
	}
}
