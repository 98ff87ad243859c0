package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/jetjob/jetjob/internal/configtest"
)

// settings is a small command's configuration.
type settings struct {
	url      string
	password string
	token    string
	n        int
	wait     time.Duration
	migrate  bool
	tls      bool
	set      *Set
	fs       *pflag.FlagSet
}

func newSettings() *settings {
	c := &settings{fs: pflag.NewFlagSet("test", pflag.ContinueOnError)}
	c.set = New(c.fs)
	c.set.String(&c.url, "database-url", "JETJOB_DATABASE_URL", "", "PostgreSQL URL", SecretURL())
	c.set.String(&c.password, "nats-password", "JETJOB_NATS_PASSWORD", "", "NATS password", Secret())
	c.set.Int(&c.n, "shard-count", "JETJOB_SHARD_COUNT", 64, "shards")
	c.set.Duration(&c.wait, "lease-ttl", "JETJOB_LEASE_TTL", 10*time.Second, "lease TTL")
	c.set.Bool(&c.migrate, "migrate", "JETJOB_MIGRATE", false, "migrate at start")
	c.set.Bool(&c.tls, "smtp-starttls", "JETJOB_SMTP_STARTTLS", true, "STARTTLS")
	c.set.Env(&c.token, "JETJOB_API_TOKEN", "API token", Secret())
	return c
}

// load parses args and applies env (a map standing for the environment).
func (c *settings) load(t *testing.T, env map[string]string, args ...string) error {
	t.Helper()
	if err := c.fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return c.set.Load(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
}

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "jetjob.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// A flag beats its variable, the variable beats the file, the file beats
// the default; each value says where it came from.
func TestPrecedence(t *testing.T) {
	file := writeFile(t, "shard-count: 8\nlease-ttl: 3s\nmigrate: true\n")
	c := newSettings()
	err := c.load(t, map[string]string{"JETJOB_SHARD_COUNT": "16", "JETJOB_LEASE_TTL": "4s"},
		"--config", file, "--shard-count", "32")
	if err != nil {
		t.Fatal(err)
	}
	if c.n != 32 || c.wait != 4*time.Second || !c.migrate || !c.tls {
		t.Errorf("shard-count %d (want 32, the flag), lease-ttl %s (want 4s, the variable), migrate %v (want true, the file), starttls %v (want true, the default)",
			c.n, c.wait, c.migrate, c.tls)
	}
	for name, want := range map[string]Source{"shard-count": FromFlag, "lease-ttl": FromEnv, "migrate": FromFile, "smtp-starttls": FromDefault} {
		if got := c.set.Source(name); got != want {
			t.Errorf("source of %s = %s, want %s", name, got, want)
		}
	}
}

// Booleans take exactly what strconv.ParseBool takes, from the environment
// as from the file; anything else is refused, naming the variable.
func TestBooleans(t *testing.T) {
	for v, want := range map[string]bool{"1": true, "t": true, "T": true, "TRUE": true, "true": true, "True": true,
		"0": false, "f": false, "F": false, "FALSE": false, "false": false, "False": false} {
		c := newSettings()
		if err := c.load(t, map[string]string{"JETJOB_MIGRATE": v, "JETJOB_SMTP_STARTTLS": v}); err != nil {
			t.Fatalf("%q: %v", v, err)
		}
		if c.migrate != want || c.tls != want {
			t.Errorf("JETJOB_MIGRATE=%q: migrate %v, starttls %v; want %v", v, c.migrate, c.tls, want)
		}
	}
	for _, v := range []string{"yes", "on", "no", "2", "enabled"} {
		c := newSettings()
		err := c.load(t, map[string]string{"JETJOB_SMTP_STARTTLS": v})
		if err == nil || !strings.Contains(err.Error(), `JETJOB_SMTP_STARTTLS="`+v+`": want true or false`) {
			t.Errorf("JETJOB_SMTP_STARTTLS=%q: error %v, want one naming the variable", v, err)
		}
		if !c.tls {
			t.Errorf("JETJOB_SMTP_STARTTLS=%q: the refused value changed the setting", v)
		}
	}
	c := newSettings()
	err := c.load(t, nil, "--config", writeFile(t, "migrate: yes\n"))
	if err == nil || !strings.Contains(err.Error(), `migrate="yes": want true or false`) {
		t.Errorf(`file "migrate: yes": error %v, want a refusal naming the key`, err)
	}
}

// Every bad value is reported in one error; a secret's value is never in
// it, nor in Values.
func TestErrorsAndSecrets(t *testing.T) {
	c := newSettings()
	var secretWait time.Duration
	c.set.Duration(&secretWait, "secret-wait", "JETJOB_SECRET_WAIT", 0, "a secret of a type that can be refused", Secret())
	err := c.load(t, map[string]string{
		"JETJOB_SHARD_COUNT":   "many",
		"JETJOB_LEASE_TTL":     "10",
		"JETJOB_MIGRATE":       "yes",
		"JETJOB_SECRET_WAIT":   "hunter2",
		"JETJOB_NATS_PASSWORD": "hunter3",
		"JETJOB_API_TOKEN":     "hunter4",
	})
	configtest.WantErr(t, err, `JETJOB_SHARD_COUNT="many": want an integer`, `JETJOB_LEASE_TTL="10": want a duration`,
		`JETJOB_MIGRATE="yes": want true or false`, `JETJOB_SECRET_WAIT (value hidden): want a duration`)
	if c.n != 64 || c.wait != 10*time.Second {
		t.Errorf("refused values changed the settings: shard-count %d, lease-ttl %s", c.n, c.wait)
	}
	if c.password != "hunter3" || c.token != "hunter4" {
		t.Errorf("secrets not read: password %q, token %q", c.password, c.token)
	}
	all := err.Error() + strings.Join(c.set.Values(), "\n") + c.fs.FlagUsages()
	for _, s := range []string{"hunter2", "hunter3", "hunter4"} {
		if strings.Contains(all, s) {
			t.Errorf("secret %q shown:\n%s", s, all)
		}
	}
}

// A URL setting is shown without its password; a connection string that is
// not a URL, not at all.
func TestSecretURL(t *testing.T) {
	for v, want := range map[string]string{
		"postgres://u:hunter2@db:5432/x":           "database-url=postgres://u:xxxxx@db:5432/x (environment)",
		"nats://a:hunter2@n1:4222,nats://n2:4222":  "database-url=nats://a:xxxxx@n1:4222,nats://n2:4222 (environment)",
		"host=db user=u password=hunter2 dbname=x": "database-url=xxxxx (environment)",
	} {
		c := newSettings()
		if err := c.load(t, map[string]string{"JETJOB_DATABASE_URL": v}); err != nil {
			t.Fatal(err)
		}
		if c.url != v {
			t.Errorf("value %q, want %q", c.url, v)
		}
		if got := c.set.Values(); !slices.Contains(got, want) {
			t.Errorf("Values shows %q, want %q among them", got, want)
		}
	}
}

// Help shows the built-in defaults and the variables' names, never the
// values the environment gave.
func TestHelpShowsNoEnvironmentValue(t *testing.T) {
	c := newSettings()
	if err := c.load(t, map[string]string{"JETJOB_DATABASE_URL": "postgres://u:hunter2@db/x", "JETJOB_SHARD_COUNT": "12345"}); err != nil {
		t.Fatal(err)
	}
	help := c.fs.FlagUsages()
	if strings.Contains(help, "hunter2") || strings.Contains(help, "12345") {
		t.Errorf("help shows environment values:\n%s", help)
	}
	if !strings.Contains(help, "(JETJOB_DATABASE_URL)") || !strings.Contains(help, "(default 64)") {
		t.Errorf("help lacks the variable's name or the default:\n%s", help)
	}
}

// An empty variable counts as unset.
func TestEmptyVariableIsUnset(t *testing.T) {
	c := newSettings()
	if err := c.load(t, map[string]string{"JETJOB_SHARD_COUNT": "", "JETJOB_SMTP_STARTTLS": ""}); err != nil {
		t.Fatal(err)
	}
	if c.n != 64 || !c.tls || c.set.Source("shard-count") != FromDefault {
		t.Errorf("shard-count %d (%s), starttls %v: want the defaults", c.n, c.set.Source("shard-count"), c.tls)
	}
}

func TestConfigFile(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		other      []string
		want       []string // substrings of the error; none: no error
	}{
		{"unknown key", "shard-count: 4\nshard-cuont: 5\n", nil, []string{`unknown key "shard-cuont"`}},
		{"another command's key", "shard-count: 4\ndata-dir: /x\n", []string{"data-dir"}, nil},
		{"reserved key", "config: other.yaml\n", nil, []string{`key "config" cannot be set`}},
		{"bad value", "shard-count: four\nlease-ttl: 1h\n", nil, []string{`shard-count="four": want an integer`}},
		{"two bad values", "shard-count: four\nlease-ttl: long\n", nil, []string{`shard-count="four"`, `lease-ttl="long"`}},
		{"not a mapping", "- shard-count\n", nil, []string{"want a mapping"}},
		{"map value", "shard-count:\n  a: 1\n", nil, []string{"shard-count: line 2: want a value or a list"}},
		{"duplicate key", "shard-count: 1\nshard-count: 2\n", nil, []string{`key "shard-count" appears twice`}},
		{"not YAML", "shard-count: [1\n", nil, []string{"config file"}},
		{"empty", "", nil, nil},
		{"comments only", "# nothing\n", nil, nil},
		{"null value", "shard-count:\n", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newSettings()
			if err := c.fs.Parse([]string{"--config", writeFile(t, tc.body)}); err != nil {
				t.Fatal(err)
			}
			configtest.WantErr(t, c.set.Load(func(string) (string, bool) { return "", false }, tc.other...), tc.want...)
		})
	}

	// A list is what a comma-separated flag takes.
	var urls string
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	s := New(fs)
	s.String(&urls, "nats-url", "JETJOB_NATS_URL", "", "NATS URLs")
	if err := fs.Parse([]string{"--config", writeFile(t, "nats-url:\n  - nats://a:4222\n  - nats://b:4222\n")}); err != nil {
		t.Fatal(err)
	}
	if err := s.Load(func(string) (string, bool) { return "", false }); err != nil || urls != "nats://a:4222,nats://b:4222" {
		t.Errorf("nats-url %q (%v), want the list joined by commas", urls, err)
	}

	// A file that cannot be read is an error naming it.
	c := newSettings()
	err := c.load(t, nil, "--config", "/nonexistent/jetjob.yaml")
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/jetjob.yaml") {
		t.Errorf("missing file: error %v", err)
	}
}

func TestName(t *testing.T) {
	c := newSettings()
	if got := c.set.Name("shard-count"); got != "--shard-count / JETJOB_SHARD_COUNT" {
		t.Errorf("Name = %q", got)
	}
	if got := c.set.Errorf("lease-ttl", "%s: too short", "1ms").Error(); got != "--lease-ttl / JETJOB_LEASE_TTL: 1ms: too short" {
		t.Errorf("Errorf = %q", got)
	}
}
