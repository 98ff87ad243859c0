package runlog

import (
	"slices"
	"testing"
	"time"

	"github.com/jetjob/jetjob/shared/wire"
)

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func logLine(t *testing.T, run, seq int64, msg string) []byte {
	t.Helper()
	data, err := wire.EncodeLogLine(&wire.LogLine{RunID: run, JobID: 7, Seq: seq, At: t0.Add(time.Duration(seq) * time.Millisecond), Level: "info", Msg: msg})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// A run redelivered to another worker logs again from its own line 1;
// the cursor is the stream sequence, so every line of every execution has
// its own place, and reading on goes past the last line read, never back.
func TestCursorsFollowTheStreamAcrossExecutions(t *testing.T) {
	stored := []struct {
		data []byte
		seq  uint64
	}{
		{logLine(t, 9, 1, "first execution starts"), 10},
		{logLine(t, 9, 2, "first execution, line 2"), 11},
		{[]byte("not a log line"), 12}, // published by someone else on the subject
		{logLine(t, 9, 1, "second execution starts"), 15},
	}
	var lines []Line
	for _, m := range stored {
		if l, ok := line(m.data, m.seq); ok {
			lines = append(lines, l)
		}
	}
	var got []uint64
	for _, l := range lines {
		got = append(got, l.Cursor)
	}
	if !slices.Equal(got, []uint64{10, 11, 15}) {
		t.Fatalf("cursors %v, want [10 11 15]: the malformed message skipped", got)
	}
	if l := lines[2]; l.Seq != 1 || l.Msg != "second execution starts" || l.RunID != 9 {
		t.Errorf("line at cursor 15: %+v, want the second execution's line 1", l.LogLine)
	}
	if next := nextCursor(lines[len(lines)-1].Cursor, 10); next != 16 {
		t.Errorf("next = %d after lines up to cursor 15, want 16", next)
	}
}

// A read that finds nothing new returns its own cursor: a reader polling a
// quiet run keeps its place instead of starting over from the first line.
func TestNextCursorWithoutLines(t *testing.T) {
	if next := nextCursor(0, 16); next != 16 {
		t.Errorf("next = %d after an empty read from 16, want 16", next)
	}
	if next := nextCursor(0, 0); next != 0 {
		t.Errorf("next = %d after an empty read from the start, want 0", next)
	}
}
