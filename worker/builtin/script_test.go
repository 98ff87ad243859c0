package builtin_test

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/jetjob/jetjob/shared/wire"
	"github.com/jetjob/jetjob/worker"
	"github.com/jetjob/jetjob/worker/builtin"
)

func scriptEnv(t *testing.T, cfg builtin.ScriptConfig) *env {
	return newEnv(t, map[string]worker.HandlerFunc{"script": builtin.Script(cfg)})
}

func scriptTrigger(runID int64, params string, sc *wire.Script) *wire.Trigger {
	tr := trigger(runID, "script", params)
	tr.Script = sc
	return tr
}

// A script job's run runs the version its trigger carries as xxl-job ran
// a GLUE script: the interpreter with the file, the params and the shard
// part as arguments, in a directory of its own removed after the run.
func TestScriptRunsTheCarriedVersion(t *testing.T) {
	e := scriptEnv(t, builtin.ScriptConfig{})
	bash := `echo "args: $1 $2 $3"; echo "version $JETJOB_SCRIPT_VERSION"; echo "file $0"; echo '{"rows": 7}' > "$JETJOB_OUTPUT"`
	tr := scriptTrigger(1, "full", &wire.Script{Language: "bash", Version: 3, Source: bash})
	tr.ShardIndex, tr.ShardTotal = 1, 4
	e.Publish(tr)
	stdout, _ := e.succeeded(1)
	for _, want := range []string{"info args: full 1 4", "info version 3"} {
		if !slices.Contains(stdout, want) {
			t.Errorf("%q not in the output %q", want, stdout)
		}
	}
	var file string
	for _, l := range stdout {
		if f, ok := strings.CutPrefix(l, "info file "); ok {
			file = f
		}
	}
	if !strings.HasSuffix(file, "/script.sh") {
		t.Fatalf("the script ran from %q, want a .sh file", file)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("the script's file outlived its run: %v", err)
	}
	if f := e.finished(1); string(f.Output) != `{"rows":7}` && string(f.Output) != `{"rows": 7}` {
		t.Errorf("output %s", f.Output)
	}

	// A failing script fails its run with its status and last stderr line.
	e.Publish(scriptTrigger(2, "", &wire.Script{Language: "bash", Version: 1, Source: "echo broken >&2; exit 5"}))
	if f := e.finished(2); f.Status != wire.StatusFailed || f.Message != "exit status 5: broken" {
		t.Errorf("finished %+v", f)
	}
	// A trigger without a script (a job set to handler script by hand)
	// fails, saying why.
	e.Publish(trigger(3, "script", ""))
	if f := e.finished(3); f.Status != wire.StatusFailed || !strings.Contains(f.Message, "carries no script") {
		t.Errorf("finished %+v", f)
	}
}

// Each language runs with its interpreter; an interpreter can be replaced.
func TestScriptLanguages(t *testing.T) {
	cases := []struct {
		lang, source string
	}{
		{"python3", "import sys; print('py', sys.argv[1], sys.version_info[0])"},
		{"nodejs", "console.log('js', process.argv[2])"},
	}
	e := scriptEnv(t, builtin.ScriptConfig{Interpreters: map[string]string{"python2": "python3"}})
	for i, c := range cases {
		if _, err := exec.LookPath(map[string]string{"python3": "python3", "nodejs": "node"}[c.lang]); err != nil {
			t.Logf("%s: no interpreter here, skipped", c.lang)
			continue
		}
		e.Publish(scriptTrigger(int64(10+i), "p", &wire.Script{Language: c.lang, Version: 1, Source: c.source}))
		stdout, _ := e.succeeded(int64(10 + i))
		if len(stdout) == 0 || !strings.Contains(stdout[0], " p") {
			t.Errorf("%s printed %q", c.lang, stdout)
		}
	}
	// python2 configured to run as python3: the replacement is used.
	e.Publish(scriptTrigger(20, "p", &wire.Script{Language: "python2", Version: 1, Source: "import sys; print('major', sys.version_info[0])"}))
	if stdout, _ := e.succeeded(20); !slices.Contains(stdout, "info major 3") {
		t.Errorf("python2 as python3 printed %q", stdout)
	}
	if err := builtin.CheckInterpreters(map[string]string{"ruby": "ruby"}); err == nil {
		t.Error("an unknown language was accepted")
	}
}
