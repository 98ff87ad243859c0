package main

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/alarm"
)

// An operator's way through alerts from the CLI: a channel created with
// its secret read from standard input (never printed back), a "send
// test" that reaches the receiver, a rule on the channel, and the lists.
func TestChannelsAndAlertsCLI(t *testing.T) {
	isolate(t)
	got := make(chan string, 4)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get(alarm.SignatureHeader)
	}))
	t.Cleanup(hook.Close)
	r := newRealAPIWithSender(t)
	r.admin(t, "", "groups", "create", "ops")

	ch := decodeJSON[apiv1.Channel](t, must(t, r.as(t, bootstrapToken, "whsec_c2VjcmV0LXNpZ25pbmcta2V5\n", "-o", "json",
		"channels", "create", "--name", "pager", "--kind", "webhook", "--group", "ops", "--target", hook.URL+"/in",
		"--secret-file", "-"), "channels create"))
	if !ch.SecretSet || ch.Secret != "" {
		t.Fatalf("created channel %+v: want its secret set and not shown", ch)
	}
	id := strconv.FormatInt(ch.ID, 10)
	printed(t, "channels list", r.admin(t, "", "channels", "list"), "pager", "webhook", "ops", "yes")
	printed(t, "channels test", r.admin(t, "", "channels", "test", id), "sent (HTTP 200)")
	if sig := <-got; !strings.HasPrefix(sig, "v1,") {
		t.Errorf("the test notice's signature %q: want a Standard Webhooks v1 signature", sig)
	}
	printed(t, "alerts rules create", r.admin(t, "", "alerts", "rules", "create", "--name", "flaky", "--group", "ops",
		"--events", "failed,recovered", "--threshold", "3", "--window", "1m", "--channels", id),
		"flaky", "group ops", "failed,recovered", "3 in 1m0s")
	printed(t, "alerts rules list", r.admin(t, "", "alerts", "rules", "list"), "flaky", "group ops")
	printed(t, "alerts list", r.admin(t, "", "alerts", "list"), "ID", "STATE")
	if res := r.as(t, bootstrapToken, "", "channels", "delete", id); res.code == exitOK {
		t.Errorf("deleting a channel a rule names succeeded")
	}
}
