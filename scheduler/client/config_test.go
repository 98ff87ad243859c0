package client_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jetjob/jetjob/scheduler/client"
)

func TestSaveLoadConfigRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a", "b", "cli.json")
	want := client.Config{API: "http://127.0.0.1:8080", Token: "tok"}
	if err := client.SaveConfig(path, want); err != nil {
		t.Fatalf("SaveConfig: %v", err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if mode := fi.Mode().Perm(); mode != 0o600 {
		t.Fatalf("file mode = %o, want 600", mode)
	}
	di, err := os.Stat(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if mode := di.Mode().Perm(); mode&0o077 != 0 {
		t.Fatalf("directory mode = %o, want no group/other access", mode)
	}
	got, err := client.LoadConfig(path)
	if err != nil {
		t.Fatalf("LoadConfig: %v", err)
	}
	if got != want {
		t.Fatalf("LoadConfig = %+v, want %+v", got, want)
	}

	// Overwrite: new content, still 0600 even if the old file was wider,
	// and no temporary file left behind.
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	want2 := client.Config{API: "https://jetjob.example.com"}
	if err := client.SaveConfig(path, want2); err != nil {
		t.Fatalf("SaveConfig again: %v", err)
	}
	if got, err := client.LoadConfig(path); err != nil || got != want2 {
		t.Fatalf("LoadConfig = %+v, %v; want %+v", got, err, want2)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode after overwrite = %v, %v", fi.Mode(), err)
	}
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Fatalf("directory holds %d entries, want only cli.json", len(entries))
	}
	raw, _ := os.ReadFile(path)
	if !strings.Contains(string(raw), `"api": "https://jetjob.example.com"`) {
		t.Fatalf("file content = %s", raw)
	}
}

func TestLoadConfigMissingAndBad(t *testing.T) {
	dir := t.TempDir()
	got, err := client.LoadConfig(filepath.Join(dir, "nope", "cli.json"))
	if err != nil || got != (client.Config{}) {
		t.Fatalf("missing file: %+v, %v", got, err)
	}

	empty := filepath.Join(dir, "empty.json")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := client.LoadConfig(empty); err != nil || got != (client.Config{}) {
		t.Fatalf("empty file: %+v, %v", got, err)
	}

	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := client.LoadConfig(bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Fatalf("bad file error = %v, want it to name %s", err, bad)
	}

	// A directory where the file should be is an error, not a zero config.
	if _, err := client.LoadConfig(dir); err == nil {
		t.Fatal("LoadConfig(directory) succeeded")
	}
}

func TestConfigPath(t *testing.T) {
	custom := filepath.Join(t.TempDir(), "custom.json")
	t.Setenv("JETJOB_CONFIG", custom)
	if got, err := client.ConfigPath(); err != nil || got != custom {
		t.Fatalf("ConfigPath with JETJOB_CONFIG = %q, %v; want %q", got, err, custom)
	}

	t.Setenv("JETJOB_CONFIG", "")
	xdg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", xdg) // os.UserConfigDir on Unix
	t.Setenv("HOME", t.TempDir())    // and on macOS
	want, err := os.UserConfigDir()
	if err != nil {
		t.Fatal(err)
	}
	want = filepath.Join(want, "jetjob", "cli.json")
	if got, err := client.ConfigPath(); err != nil || got != want {
		t.Fatalf("ConfigPath = %q, %v; want %q", got, err, want)
	}
}
