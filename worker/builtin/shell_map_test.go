package builtin_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/jetjob/jetjob/shared/wire"
	"github.com/jetjob/jetjob/worker"
	"github.com/jetjob/jetjob/worker/builtin"
)

// A root run maps the JSON array its command writes to $JETJOB_MAP; an
// empty file maps nothing; what is no JSON array fails the run naming the
// file, and so does a list Map refuses (here an empty one).
func TestShellMaps(t *testing.T) {
	e := shellEnv(t, builtin.ShellConfig{})
	e.Publish(trigger(1, "shell", `echo '[1, {"a": "b"}, "c"]' > "$JETJOB_MAP"`))
	e.Publish(trigger(2, "shell", `test -f "$JETJOB_MAP"`))
	e.Publish(trigger(3, "shell", `echo '{"a": 1}' > "$JETJOB_MAP"`))
	e.Publish(trigger(4, "shell", `echo '[]' > "$JETJOB_MAP"`))
	e.Publish(trigger(5, "shell", `echo '[1]' > "$JETJOB_MAP"; exit 3`))
	if f := e.finished(1); f.Status != wire.StatusSucceeded || !sameJSON(f.Map, `[1, {"a": "b"}, "c"]`) || f.Reduce {
		t.Errorf("finished %+v (map %s), want SUCCEEDED mapping 3 items, no reduce", f, f.Map)
	}
	if f := e.finished(2); f.Status != wire.StatusSucceeded || f.Map != nil {
		t.Errorf("finished %+v (map %s), want SUCCEEDED mapping nothing", f, f.Map)
	}
	for _, run := range []int64{3, 4} {
		if f := e.finished(run); f.Status != wire.StatusFailed || !strings.Contains(f.Message, "JETJOB_MAP") || f.Map != nil {
			t.Errorf("run %d finished %+v, want FAILED naming JETJOB_MAP", run, f)
		}
	}
	if f := e.finished(5); f.Status != wire.StatusFailed || f.Map != nil {
		t.Errorf("finished %+v (map %s), want FAILED mapping nothing", f, f.Map)
	}
}

// A part gets its item as $JETJOB_ITEM and its place as the shard
// variables, and no $JETJOB_MAP (a part maps nothing); its output is its
// own, as any run's.
func TestShellPartGetsItsItem(t *testing.T) {
	e := shellEnv(t, builtin.ShellConfig{})
	tr := trigger(1, "shell", `echo "$JETJOB_ITEM $JETJOB_SHARD_INDEX/$JETJOB_SHARD_TOTAL $JETJOB_TRIGGER_TYPE map=${JETJOB_MAP-none}"; `+
		`echo "$JETJOB_ITEM" > "$JETJOB_OUTPUT"`)
	tr.TriggerType, tr.ShardIndex, tr.ShardTotal = wire.TriggerMap, 1, 3
	tr.Map = &wire.MapRun{Fire: 9, Item: json.RawMessage(`{"day":"2026-11-28"}`)}
	e.Publish(tr)
	stdout, _ := e.succeeded(1)
	if want := []string{`info {"day":"2026-11-28"} 1/3 map map=none`}; !slices.Equal(stdout, want) {
		t.Errorf("stdout %q, want %q", stdout, want)
	}
	if f := e.finished(1); !sameJSON(f.Output, `{"day":"2026-11-28"}`) {
		t.Errorf("output %s, want the item", f.Output)
	}
}

// Only a root run gets $JETJOB_MAP: not a sharded run, nor a workflow
// node run (whose map the scheduler would drop). No server needed: the
// handler is called directly.
func TestShellMapOnlyForRoots(t *testing.T) {
	cmd := `echo "map=${JETJOB_MAP-none} outputs=${JETJOB_OUTPUTS-none} item=${JETJOB_ITEM-none}"`
	for _, tc := range []struct {
		name  string
		setup func(*worker.Job)
		want  string
	}{
		{"root", func(*worker.Job) {}, "map=/"},
		{"sharded", func(j *worker.Job) { j.ShardIndex, j.ShardTotal = 0, 2 }, "map=none outputs=none item=none"},
		{"workflow node", func(j *worker.Job) { j.TriggerType = worker.TriggerWorkflow }, "map=none outputs=none item=none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			core, logs := observer.New(zapcore.InfoLevel)
			j := directJob(zap.New(core), cmd)
			j.ShardTotal = 1
			tc.setup(j)
			if err := builtin.Shell(builtin.ShellConfig{})(context.Background(), j); err != nil {
				t.Fatal(err)
			}
			if got := stdoutOf(logs); len(got) != 1 || !strings.HasPrefix(got[0], tc.want) {
				t.Errorf("stdout %q, want a line starting %q", got, tc.want)
			}
		})
	}
}

// The reduce of a shell handler runs its command with the parts' outputs
// as one JSON array in $JETJOB_OUTPUTS, in index order, null for a part
// without one; no $JETJOB_MAP.
func TestShellReduceGetsOutputs(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	j := directJob(zap.New(core), `cat "$JETJOB_OUTPUTS"; echo; echo "map=${JETJOB_MAP-none}"`)
	j.TriggerType, j.ShardTotal = worker.TriggerReduce, 1
	outputs := []json.RawMessage{json.RawMessage(`{"n":1}`), json.RawMessage(`null`), json.RawMessage(`3`)}
	if err := builtin.ShellReduce(builtin.ShellConfig{})(context.Background(), j, outputs); err != nil {
		t.Fatal(err)
	}
	if got, want := stdoutOf(logs), []string{`[{"n":1},null,3]`, "map=none"}; !slices.Equal(got, want) {
		t.Errorf("stdout %q, want %q", got, want)
	}
}

// stdoutOf is the command's stdout lines among logs.
func stdoutOf(logs *observer.ObservedLogs) []string {
	var out []string
	for _, e := range logs.All() {
		for _, f := range e.Context {
			if f.Key == "stream" && f.String == "stdout" {
				out = append(out, e.Message)
			}
		}
	}
	return out
}

// sameJSON reports whether got encodes the same value as want.
func sameJSON(got json.RawMessage, want string) bool {
	var a, b any
	if json.Unmarshal(got, &a) != nil || json.Unmarshal([]byte(want), &b) != nil {
		return false
	}
	ga, _ := json.Marshal(a)
	gb, _ := json.Marshal(b)
	return string(ga) == string(gb)
}

// A script job maps and gets its item as a shell job does: the root's
// script writes $JETJOB_MAP, a part's reads $JETJOB_ITEM.
func TestScriptMaps(t *testing.T) {
	e := scriptEnv(t, builtin.ScriptConfig{})
	src := `if [ -n "$JETJOB_ITEM" ]; then echo "item $JETJOB_ITEM of $3"; else echo '["x", "y"]' > "$JETJOB_MAP"; fi`
	e.Publish(scriptTrigger(1, "", &wire.Script{Language: "bash", Version: 1, Source: src}))
	part := scriptTrigger(2, "", &wire.Script{Language: "bash", Version: 1, Source: src})
	part.TriggerType, part.ShardIndex, part.ShardTotal = wire.TriggerMap, 1, 2
	part.Map = &wire.MapRun{Fire: 1, Item: json.RawMessage(`"y"`)}
	e.Publish(part)
	if f := e.finished(1); f.Status != wire.StatusSucceeded || !sameJSON(f.Map, `["x", "y"]`) {
		t.Errorf("finished %+v (map %s), want SUCCEEDED mapping 2 items", f, f.Map)
	}
	if stdout, _ := e.succeeded(2); !slices.Equal(stdout, []string{`info item "y" of 2`}) {
		t.Errorf("the part's stdout %q", stdout)
	}
}
