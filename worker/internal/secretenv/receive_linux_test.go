//go:build linux

package secretenv

import (
	"strconv"
	"strings"
	"testing"
)

// The handed-over secrets are read only from the memory file the parent
// made: a descriptor named by a variable anyone could set (standard input,
// say) is refused, not read.
func TestReceiveReadsOnlyItsMemoryFile(t *testing.T) {
	if _, err := receive("0"); err == nil || !strings.Contains(err.Error(), "not the secrets' memory file") {
		t.Errorf("receive(stdin): %v", err)
	}
	if _, err := receive("x"); err == nil {
		t.Error("receive of no descriptor accepted")
	}
	fd, err := hand(payload{Env: map[string]string{"JETJOB_NATS_PASSWORD": "pw"}, Args: []string{"--nats-token", "tok"}})
	if err != nil {
		t.Fatal(err)
	}
	m, err := receive(strconv.Itoa(fd))
	if err != nil {
		t.Fatal(err)
	}
	if m.Env["JETJOB_NATS_PASSWORD"] != "pw" || len(m.Args) != 2 || m.Args[1] != "tok" {
		t.Errorf("received %+v", m)
	}
	if _, err := receive(strconv.Itoa(fd)); err == nil {
		t.Error("the memory file was left open after reading")
	}
}
