package stream

import "testing"

// Each trigger subject parses as its own kind only: a batch subject is
// neither the shared queue nor a worker's, and the other way round.
func TestParseTriggerSubjects(t *testing.T) {
	for _, c := range []struct {
		subject            string
		any, batch, worker bool
	}{
		{TriggerAny("g"), true, false, false},
		{TriggerBatch("g"), false, true, false},
		{TriggerWorker("g", "batch"), false, false, true},
		{TriggerWorker("g", "any"), false, false, true},
		{"jetjob.trigger.g.batch.x", false, false, false},
		{"jetjob.event.g", false, false, false},
	} {
		_, a := ParseTriggerAny(c.subject)
		g, b := ParseTriggerBatch(c.subject)
		_, _, w := ParseTriggerWorker(c.subject)
		if a != c.any || b != c.batch || w != c.worker || (b && g != "g") {
			t.Errorf("%s: any %v, batch %v (group %q), worker %v; want %v, %v, %v", c.subject, a, b, g, w, c.any, c.batch, c.worker)
		}
	}
}
