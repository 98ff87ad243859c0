package console

import (
	"testing"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

var apiv1JobSpecZero apiv1.JobSpec

// Every field of jobFields is in the form exactly once, and every field
// the form's layout names exists (fieldNamed would panic at render).
func TestJobFormPlacesEveryFieldOnce(t *testing.T) {
	seen := map[string]int{}
	for _, sec := range newJobForm(&apiv1JobSpecZero, nil, nil, nil) {
		for _, f := range sec.Fields {
			seen[f.Name]++
		}
	}
	for _, f := range jobFields {
		if seen[f.Name] != 1 {
			t.Errorf("field %s is in the form %d times, want once", f.Name, seen[f.Name])
		}
	}
	if len(seen) != len(jobFields) {
		t.Errorf("the form has %d fields, jobFields %d", len(seen), len(jobFields))
	}
}
