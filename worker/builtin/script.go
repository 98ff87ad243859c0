//go:build unix

package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"github.com/jetjob/jetjob/shared/wire"
	"github.com/jetjob/jetjob/worker"
)

// scriptLanguage is how a script of a language is run: by which
// interpreter, from a file with which suffix (the suffix matters to some:
// powershell runs only .ps1 files).
type scriptLanguage struct {
	interpreter string
	suffix      string
}

// scriptLanguages are the languages of wire.ScriptLanguages with the
// interpreters xxl-job's GLUE types run (GlueTypeEnum), except python2,
// run as python2 rather than python (which is Python 3 on current
// systems); ScriptConfig.Interpreters changes any.
var scriptLanguages = map[string]scriptLanguage{
	"bash":       {"bash", ".sh"},
	"python3":    {"python3", ".py"},
	"python2":    {"python2", ".py"},
	"nodejs":     {"node", ".js"},
	"php":        {"php", ".php"},
	"powershell": {"powershell", ".ps1"},
}

// ScriptConfig configures Script: the shell handler's settings (its
// environment rules, directory and kill grace apply alike; Shell is not
// used) and the interpreters.
type ScriptConfig struct {
	ShellConfig
	// Interpreters replaces the interpreter of a language, e.g.
	// {"powershell": "pwsh", "python2": "/opt/py27/bin/python"}.
	Interpreters map[string]string
}

// CheckInterpreters reports why m cannot be ScriptConfig.Interpreters:
// an unknown language or an empty interpreter.
func CheckInterpreters(m map[string]string) error {
	for _, l := range slices.Sorted(maps.Keys(m)) {
		if _, ok := scriptLanguages[l]; !ok {
			return fmt.Errorf("unknown script language %q: want one of %s", l, strings.Join(wire.ScriptLanguages, ", "))
		}
		if strings.TrimSpace(m[l]) == "" {
			return fmt.Errorf("script language %s: empty interpreter", l)
		}
	}
	return nil
}

// Script returns the handler of script jobs (handler "script"): it runs
// the stored script the trigger carries (worker.Job.Script) as xxl-job's
// executor runs a GLUE script: written to a file of the language's suffix
// in a fresh directory, then `<interpreter> <file> <params> <shard index>
// <shard total>`, the directory removed after. Everything else is the
// shell handler's: the environment (plus JETJOB_SCRIPT_VERSION), the log
// of every output line, JETJOB_OUTPUT, map/reduce (JETJOB_MAP, JETJOB_ITEM,
// and JETJOB_OUTPUTS with ScriptReduce), the exit status, and the process
// group stopped on a timeout or kill. The interpreter must be on the
// worker's PATH. A trigger without a script (a job whose handler was set
// to "script" by hand, or a scheduler too old to send one) fails its run.
func Script(cfg ScriptConfig) worker.HandlerFunc {
	run := scriptRunner(cfg)
	return func(ctx context.Context, job *worker.Job) error { return run(ctx, job, false, nil) }
}

// ScriptReduce returns the reduce (worker.WithReduce) of a Script handler
// of the same cfg: the reduce run runs the job's script once more, as
// ShellReduce runs a shell job's command.
func ScriptReduce(cfg ScriptConfig) worker.ReduceFunc {
	run := scriptRunner(cfg)
	return func(ctx context.Context, job *worker.Job, outputs []json.RawMessage) error {
		return run(ctx, job, true, outputs)
	}
}

// scriptRunner runs a Script handler's script for a run of job, its
// reduce's when reduce is set.
func scriptRunner(cfg ScriptConfig) func(ctx context.Context, job *worker.Job, reduce bool, outputs []json.RawMessage) error {
	if cfg.KillGrace <= 0 {
		cfg.KillGrace = DefaultKillGrace
	}
	langs := maps.Clone(scriptLanguages)
	for l, in := range cfg.Interpreters {
		if sl, ok := langs[l]; ok {
			sl.interpreter = in
			langs[l] = sl
		}
	}
	env := slices.Clone(cfg.Env)
	pass := append(slices.Clone(BaseEnv), cfg.PassEnv...)
	return func(ctx context.Context, job *worker.Job, reduce bool, outputs []json.RawMessage) error {
		sc := job.Script
		if sc == nil {
			return errors.New("script: the trigger carries no script: the job is not a script job of this scheduler (see docs/jobs.md, Script jobs)")
		}
		lang, ok := langs[sc.Language]
		if !ok {
			return fmt.Errorf("script: unknown language %q", sc.Language)
		}
		dir, err := os.MkdirTemp("", "jetjob-script-*")
		if err != nil {
			return fmt.Errorf("script: create its directory: %w", err)
		}
		defer func() { _ = os.RemoveAll(dir) }()
		file := filepath.Join(dir, "script"+lang.suffix)
		if err := os.WriteFile(file, []byte(sc.Source), 0o700); err != nil {
			return fmt.Errorf("script: write v%d: %w", sc.Version, err)
		}
		out := filepath.Join(dir, "output.json")
		if err := os.WriteFile(out, nil, 0o600); err != nil {
			return fmt.Errorf("script: create the output file: %w", err)
		}
		c := &command{
			path: lang.interpreter,
			args: []string{file, job.Params, strconv.Itoa(job.ShardIndex), strconv.Itoa(job.ShardTotal)},
			dir:  cfg.Dir,
			name: fmt.Sprintf("%s script v%d", lang.interpreter, sc.Version),
		}
		mio, err := prepareMapIO(job, dir, reduce, outputs)
		if err != nil {
			return fmt.Errorf("script: %w", err)
		}
		c.env = append(shellEnv(pass, env, nil, job), "JETJOB_OUTPUT="+out, "JETJOB_SCRIPT_VERSION="+strconv.Itoa(sc.Version))
		c.env = append(c.env, mio.env...)
		log := jobLogger(job)
		log.Info("running script", zap.String("language", sc.Language), zap.Int("script_version", sc.Version))
		if err := c.run(ctx, log, cfg.KillGrace); err != nil {
			return err
		}
		if err := mio.mapFrom(job); err != nil {
			return fmt.Errorf("script: %w", err)
		}
		return setOutputFrom(job, out)
	}
}
