package worker

import (
	"context"
	"encoding/json"
	"slices"
	"sort"
	"strings"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/jetjob/jetjob/shared/wire"
)

// A run of a job that references secrets (wire.Trigger.Secrets) asks the
// schedulers for them once its start is recorded, before its handler is
// called (fetchSecrets). The handler gets them as Job.SecretEnv (command
// handlers add them to the command's environment) and in its params,
// where each ${secret:NAME} placeholder is replaced; the params the
// schedulers keep and show still hold the placeholders. Every value is
// replaced by Masked in the run's log lines, in the worker's own log
// lines of the run, in the run's message and in its output, before any
// leaves the worker. A run whose secrets cannot be had fails saying why:
// it never runs without them.

// Masked replaces a secret's value in what a run reports.
const Masked = "****"

// runSecrets are a run's secrets as its worker was given them.
type runSecrets struct {
	env    map[string]string
	values map[string]string
	mask   *strings.Replacer
}

// fetchSecrets asks for the run's secrets when its job references any;
// nil when the run may go on, else how it ends.
func (r *run) fetchSecrets(ctx context.Context) *outcome {
	if !r.trig.Secrets {
		return nil
	}
	reply, err := r.w.ask.Secrets(ctx, r.trig.Group, wire.SecretsRequest{
		RunID: r.trig.RunID, WorkerID: r.w.cfg.ID, ScheduledAt: r.trig.ScheduledAt})
	if err != nil {
		r.log.Warn("run's secrets not given: failing it", zap.Error(err))
		return &outcome{status: wire.StatusFailed, message: "its job's secrets could not be had, so it did not run: " + err.Error()}
	}
	r.secrets = newRunSecrets(reply.Env, reply.Values)
	r.logs.setMask(r.secrets.mask)
	return nil
}

func newRunSecrets(env, values map[string]string) *runSecrets {
	// Every value the run was given is masked, whether for the
	// environment or for placeholders.
	vals := make([]string, 0, len(values)+len(env))
	for _, m := range []map[string]string{values, env} {
		for _, v := range m {
			if v != "" && !slices.Contains(vals, v) {
				vals = append(vals, v)
			}
		}
	}
	// Longest first: a value that contains another is masked whole.
	sort.Slice(vals, func(i, j int) bool { return len(vals[i]) > len(vals[j]) })
	pairs := make([]string, 0, 2*len(vals))
	for _, v := range vals {
		pairs = append(pairs, v, Masked)
		if q := jsonEscaped(v); q != v {
			pairs = append(pairs, q, Masked)
		}
	}
	return &runSecrets{env: env, values: values, mask: strings.NewReplacer(pairs...)}
}

// jsonEscaped is v as it appears inside a JSON string.
func jsonEscaped(v string) string {
	b, _ := json.Marshal(v)
	return string(b[1 : len(b)-1])
}

// maskString masks s, unchanged without secrets.
func (s *runSecrets) maskString(v string) string {
	if s == nil {
		return v
	}
	return s.mask.Replace(v)
}

// params replaces the placeholders of params with the secrets' values:
// JSON-escaped in params that are a JSON object (a placeholder stands in a
// string there), as they are otherwise.
func (s *runSecrets) params(params string) string {
	if s == nil || !strings.Contains(params, "${secret:") {
		return params
	}
	isJSON := strings.HasPrefix(strings.TrimSpace(params), "{")
	for name, v := range s.values {
		if isJSON {
			v = jsonEscaped(v)
		}
		params = strings.ReplaceAll(params, wire.SecretPlaceholder(name), v)
	}
	return params
}

// envList is the secrets' environment as "K=V", by name.
func (s *runSecrets) envList() []string {
	if s == nil || len(s.env) == 0 {
		return nil
	}
	out := make([]string, 0, len(s.env))
	for k, v := range s.env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// maskCore masks secrets in the entries of the worker's own log that a
// run's logger writes: the message, string and error fields.
type maskCore struct {
	zapcore.Core
	mask *strings.Replacer
}

func (c *maskCore) With(fields []zapcore.Field) zapcore.Core {
	return &maskCore{Core: c.Core.With(c.fields(fields)), mask: c.mask}
}

func (c *maskCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *maskCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	e.Message = c.mask.Replace(e.Message)
	return c.Core.Write(e, c.fields(fields))
}

func (c *maskCore) fields(fields []zapcore.Field) []zapcore.Field {
	out := make([]zapcore.Field, len(fields))
	for i, f := range fields {
		switch {
		case f.Type == zapcore.StringType:
			f.String = c.mask.Replace(f.String)
		case f.Type == zapcore.ErrorType:
			if err, ok := f.Interface.(error); ok && err != nil {
				f = zap.String(f.Key, c.mask.Replace(err.Error()))
			}
		case f.Type == zapcore.ByteStringType:
			if b, ok := f.Interface.([]byte); ok {
				f = zap.String(f.Key, c.mask.Replace(string(b)))
			}
		}
		out[i] = f
	}
	return out
}

// maskedOutput is the run's output with its secrets masked; an output
// that masking would make invalid JSON is dropped (never sent unmasked).
func (r *run) maskedOutput() json.RawMessage {
	out := r.output.get()
	if r.secrets == nil || out == nil {
		return out
	}
	masked := r.secrets.mask.Replace(string(out))
	if !json.Valid([]byte(masked)) {
		return nil
	}
	return json.RawMessage(masked)
}
