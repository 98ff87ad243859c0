package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jetjob/jetjob/internal/configtest"
	"github.com/jetjob/jetjob/shared/trigsign"
)

// newKeyFile makes a trigger signing key file with trigger-key generate.
func newKeyFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "trigger.key")
	if _, err := execute(context.Background(), "trigger-key", "generate", "--out", path); err != nil {
		t.Fatal(err)
	}
	return path
}

// serve signs triggers or says why it cannot: without a key it refuses to
// start unless unsigned triggers are asked for by name, and a key given
// twice or unreadable is refused naming its setting, never quoting it.
func TestServeNeedsATriggerSigningKey(t *testing.T) {
	t.Setenv("JETJOB_DATABASE_URL", "postgres://u@127.0.0.1:1/none")
	for _, c := range []struct {
		name string
		env  map[string]string
		want []string
	}{
		{"no key", nil, []string{"no trigger signing key", "--trigger-signing-key / JETJOB_TRIGGER_SIGNING_KEY_FILE",
			"--insecure-unsigned-triggers / JETJOB_INSECURE_UNSIGNED_TRIGGERS"}},
		{"twice", map[string]string{"JETJOB_TRIGGER_SIGNING_KEY_FILE": newKeyFile(t), "JETJOB_TRIGGER_SIGNING_KEY": "hunter8"},
			[]string{"give the trigger signing key once"}},
		{"not a key", map[string]string{"JETJOB_TRIGGER_SIGNING_KEY": "hunter8"}, []string{"JETJOB_TRIGGER_SIGNING_KEY: trigger signing key"}},
		{"missing file", map[string]string{"JETJOB_TRIGGER_SIGNING_KEY_FILE": "/nonexistent/trigger.key"},
			[]string{"--trigger-signing-key / JETJOB_TRIGGER_SIGNING_KEY_FILE", "no such file"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			_, err := execute(context.Background(), "serve")
			var ue usageError
			if !errors.As(err, &ue) {
				t.Fatalf("error %v, want a usage error", err)
			}
			configtest.WantErr(t, err, c.want...)
			if strings.Contains(err.Error(), "hunter8") {
				t.Errorf("the key's value is quoted: %v", err)
			}
		})
	}
}

// trigger-key generate writes a PEM key only its owner may read, never
// over an existing one, and prints the public key that trigger-key public
// prints for it too; --env prints a pair the scheduler and workers take.
func TestTriggerKeyCommands(t *testing.T) {
	dir := t.TempDir()
	path, pubPath := filepath.Join(dir, "trigger.key"), filepath.Join(dir, "trigger.pub")
	out, err := execute(context.Background(), "trigger-key", "generate", "--out", path, "--public-out", pubPath)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v, mode %v; want 0600", err, st.Mode().Perm())
	}
	priv, err := trigsign.LoadPrivateKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := trigsign.EncodePublicKey(priv.Public().(ed25519.PublicKey))
	if strings.TrimSpace(out) != want {
		t.Errorf("generate printed %q, want the public key %q", out, want)
	}
	if b, err := os.ReadFile(pubPath); err != nil || strings.TrimSpace(string(b)) != want {
		t.Errorf("--public-out wrote %q (%v), want %q", b, err, want)
	}
	if out, err := execute(context.Background(), "trigger-key", "public", "--key", path); err != nil || !strings.HasPrefix(out, want+"\n") {
		t.Errorf("public printed %q (%v), want %q first", out, err, want)
	}
	before, _ := os.ReadFile(path)
	if _, err := execute(context.Background(), "trigger-key", "generate", "--out", path); err == nil || !strings.Contains(err.Error(), "never overwritten") {
		t.Errorf("generate over an existing key: %v", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Error("the existing key was changed")
	}

	out, err = execute(context.Background(), "trigger-key", "generate", "--env")
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		k, v, _ := strings.Cut(line, "=")
		vars[k] = v
	}
	envPriv, err := trigsign.ParsePrivateKey([]byte(vars["JETJOB_TRIGGER_SIGNING_KEY"]))
	if err != nil {
		t.Fatalf("--env printed %q: %v", out, err)
	}
	pubs, err := trigsign.ParsePublicKeys(vars["JETJOB_TRIGGER_PUBLIC_KEYS"])
	if err != nil || len(pubs) != 1 || !pubs[0].Equal(envPriv.Public()) {
		t.Errorf("--env printed %q: public keys %v (%v), want the signing key's", out, pubs, err)
	}
}
