package store

import (
	"slices"
	"strings"
	"testing"
)

// A create and an update write the same columns, each from the argument of
// its name: a column added to one list and not the other would fail here,
// not as a NULL written in production.
func TestJobWriteArgsFillEveryColumn(t *testing.T) {
	var j Job
	args := j.writeArgs(nil, 0)
	for _, c := range jobWriteColumns {
		if _, ok := args[c]; !ok {
			t.Errorf("column %s has no argument", c)
		}
	}
	for k := range args {
		if !slices.Contains(jobWriteColumns, k) {
			t.Errorf("argument %s names no column written", k)
		}
	}
	for _, stmt := range []string{insertJob, updateJob} {
		for _, c := range jobWriteColumns {
			if !strings.Contains(stmt, "@"+c) {
				t.Errorf("statement does not write %s:\n%s", c, stmt)
			}
		}
	}
	if !strings.Contains(insertJob, "@shard_count") || !strings.Contains(updateJob, "WHERE id = @id") {
		t.Error("the create needs the shard count, the update the job's id")
	}
}
