package wire

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func batchTrigger(run int64) *Trigger {
	return &Trigger{RunID: run, JobID: run * 10, Group: "g", Handler: "h", TriggerType: TriggerSchedule,
		ScheduledAt: time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC), Params: "line1\nline2"}
}

// Every trigger of a batch comes back whole, in order, even one whose
// params hold a newline.
func TestTriggerBatchRoundTrip(t *testing.T) {
	ts := []*Trigger{batchTrigger(1), batchTrigger(2), batchTrigger(3)}
	data, err := EncodeTriggerBatch(ts)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := SplitTriggerBatch(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != len(ts) {
		t.Fatalf("%d lines, want %d", len(lines), len(ts))
	}
	for i, line := range lines {
		got, err := DecodeTrigger(line)
		if err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		if got.RunID != ts[i].RunID || got.Params != ts[i].Params {
			t.Fatalf("line %d: run %d params %q, want run %d params %q", i, got.RunID, got.Params, ts[i].RunID, ts[i].Params)
		}
	}
}

// A bad line spoils only itself; a message that is no batch at all, or too
// large, is refused as a whole.
func TestTriggerBatchInvalid(t *testing.T) {
	good, _ := EncodeTrigger(batchTrigger(7))
	lines, err := SplitTriggerBatch([]byte(string(good) + "\n{not json"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeTrigger(lines[0]); err != nil {
		t.Fatalf("good line: %v", err)
	}
	if _, err := DecodeTrigger(lines[1]); err == nil {
		t.Fatal("bad line decoded")
	}
	for name, data := range map[string]string{
		"empty":     "",
		"blank":     " \n ",
		"too large": strings.Repeat(string(good)+"\n", MaxBatchRuns) + string(good),
	} {
		if _, err := SplitTriggerBatch([]byte(data)); !errors.Is(err, ErrBatch) {
			t.Errorf("%s: err %v, want ErrBatch", name, err)
		}
	}
	if _, err := EncodeTriggerBatch(nil); !errors.Is(err, ErrBatch) {
		t.Errorf("empty batch encoded: %v", err)
	}
	if BatchMsgID(42) != "batch-42" || MsgID(42) == BatchMsgID(42) {
		t.Errorf("BatchMsgID(42) = %q", BatchMsgID(42))
	}
}
