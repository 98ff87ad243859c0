package xxljob

import (
	"strings"
	"testing"
)

// A BEAN job's executor handler is checked against the one pattern of
// handler names (wire.ValidHandler) up front: an xxl-job bean name keeps
// its case, and a name the API would refuse is reported, not imported
// half-way.
func TestHandlerNamePattern(t *testing.T) {
	for handler, ok := range map[string]bool{
		"demoJobHandler":               true,
		"shardingJobHandler":           true,
		"billing.invoice-v2":           true,
		"my handler":                   false,
		"job/handler":                  false,
		"1stHandler":                   false,
		"h\u202eevil":                  false,
		"h" + strings.Repeat("x", 128): false,
	} {
		j := bean(7, "x")
		j.Handler = handler
		jp := mustMap(t, []Job{j}, Options{}).Jobs[0]
		if jp.OK() != ok {
			t.Errorf("handler %q: importable %v, want %v (problems %q)", handler, jp.OK(), ok, jp.Problems)
		}
		if !ok && !strings.Contains(strings.Join(jp.Problems, "\n"), "handler") {
			t.Errorf("handler %q: the problems do not name the handler: %q", handler, jp.Problems)
		}
	}
}
