package wire

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Secrets reach a run at execution only (docs/jobs.md, "Secrets"): a
// trigger says that its job references secrets (Trigger.Secrets), never
// which values; the worker asks the schedulers for them (SecretsRequest on
// stream.SecretsSubject(group)) when the run starts, and the answer goes
// to the worker's own inbox over core NATS, which stores nothing.

// secretNameRE is the shape of a secret's name, as of a group's or a
// worker's (ValidName), so that a placeholder is unambiguous.
var secretNameRE = regexp.MustCompile(`\$\{secret:([A-Za-z0-9_-]{1,64})\}`)

// envNameRE is the shape of an environment variable a secret is given in.
var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)

// SecretPlaceholder is how params name a secret's value: ${secret:NAME}.
func SecretPlaceholder(name string) string { return "${secret:" + name + "}" }

// SecretPlaceholders returns the secret names params' placeholders use,
// each once, in order of first use.
func SecretPlaceholders(params string) []string {
	if !strings.Contains(params, "${secret:") {
		return nil
	}
	var out []string
	for _, m := range secretNameRE.FindAllStringSubmatch(params, -1) {
		if !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	return out
}

// CheckSecretEnv validates a job's secret_env: environment variable names
// to secret names. JETJOB_* variables are the worker's own.
func CheckSecretEnv(env map[string]string) error {
	if len(env) > MaxSecrets {
		return fmt.Errorf("secret_env: %d entries, at most %d", len(env), MaxSecrets)
	}
	for k, v := range env {
		if !envNameRE.MatchString(k) || strings.HasPrefix(k, "JETJOB_") {
			return fmt.Errorf("secret_env: %q is not an environment variable a secret may be given in (want [A-Za-z_][A-Za-z0-9_]*, not JETJOB_*)", k)
		}
		if err := CheckName("secret name", v); err != nil {
			return fmt.Errorf("secret_env %s: %w", k, err)
		}
	}
	return nil
}

// MaxSecrets bounds the secrets one job references.
const MaxSecrets = 64

// SecretsRequest asks for the secrets of one running run.
type SecretsRequest struct {
	V           int       `json:"v"`
	RunID       int64     `json:"run_id"`
	WorkerID    string    `json:"worker_id"`
	ScheduledAt time.Time `json:"scheduled_at"`
}

// Validate checks a secrets request.
func (s *SecretsRequest) Validate() error {
	if s.V != Version {
		return fmt.Errorf("secrets request: %w %d (this build speaks %d)", ErrVersion, s.V, Version)
	}
	if s.RunID <= 0 {
		return fmt.Errorf("secrets request: run_id must be positive, got %d", s.RunID)
	}
	if s.ScheduledAt.IsZero() {
		return errors.New("secrets request: scheduled_at is required")
	}
	return CheckName("worker id", s.WorkerID)
}

// SecretsReply answers a SecretsRequest: the run's environment variables
// (Env, "K=V" by the job's secret_env) and the values of the names its
// job references (Values, for ${secret:NAME} placeholders). Error, when
// set, says why none are given; the run then fails with it.
type SecretsReply struct {
	V      int               `json:"v"`
	Env    map[string]string `json:"env,omitempty"`
	Values map[string]string `json:"values,omitempty"`
	Error  string            `json:"error,omitempty"`
}
