package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/alarm"
)

// Alert channels and rules round-trip through export and apply, a
// channel's credentials by reference only: the file names environment
// variables, never a URL or secret; applied without them a new channel is
// refused naming its variable; with them the applied channel delivers to
// the real URL, signed with the secret; applying again changes nothing.
func TestExportApplyAlerts(t *testing.T) {
	src := isolatedAPI(t)
	seedCluster(t, src)
	ctx := context.Background()
	c := src.apiClient(t)
	const token, secret = "SECRETTOKEN", "whsec_c2VjcmV0LXNpZ25pbmcta2V5"
	type got struct{ token, sig string }
	hits := make(chan got, 4)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits <- got{r.URL.Query().Get("token"), r.Header.Get(alarm.SignatureHeader)}
	}))
	t.Cleanup(hook.Close)
	pagerURL := hook.URL + "/in?token=" + token

	slack, err := c.CreateChannel(ctx, apiv1.Channel{Name: "ops-slack", Kind: "slack", Group: "billing",
		Target: "https://hooks.slack.com/services/T000/B000/XXXXSLACKSECRET"})
	if err != nil {
		t.Fatal(err)
	}
	pager, err := c.CreateChannel(ctx, apiv1.Channel{Name: "pager", Kind: "webhook", Group: "billing", Target: pagerURL, Secret: secret,
		Template: "{{.Title}} ({{.Count}})"})
	if err != nil {
		t.Fatal(err)
	}
	oncall, err := c.CreateChannel(ctx, apiv1.Channel{Name: "oncall", Kind: "email", Target: "oncall@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateAlertRule(ctx, apiv1.AlertRule{Name: "flaky", Group: "billing", Events: []string{"failed", "recovered"},
		Threshold: 3, Window: apiv1.Duration(10 * time.Minute), Renotify: apiv1.Duration(time.Hour), PauseAfter: 20,
		Channels: []int64{slack.ID, pager.ID, oncall.ID}}); err != nil {
		t.Fatal(err)
	}
	nightly := jobsByKey(t, c)["billing/nightly"]
	if _, err := c.CreateAlertRule(ctx, apiv1.AlertRule{Name: "nightly-sla", JobID: nightly.ID, Events: []string{"late_start"},
		SLA: apiv1.Duration(30 * time.Minute), Channels: []int64{pager.ID}}); err != nil {
		t.Fatal(err)
	}

	exported := src.admin(t, "", "export")
	printed(t, "export", exported, "kind: AlertChannel", "type: slack", "target_env: JETJOB_CHANNEL_BILLING_OPS_SLACK_TARGET",
		"secret_env: JETJOB_CHANNEL_BILLING_PAGER_SECRET", "target: oncall@example.com", "kind: AlertRule",
		"- global:oncall", "job: billing/nightly", "window: 10m0s", "sla: 30m0s")
	for _, s := range []string{"XXXXSLACKSECRET", token, secret, "hooks.slack.com"} {
		if strings.Contains(exported, s) {
			t.Fatalf("the export holds the credential %q:\n%s", s, exported)
		}
	}

	// A second cluster, with a sender for "channels test".
	dst := newRealAPIWithSender(t)
	res := dst.as(t, bootstrapToken, exported, "apply", "-f", "-")
	if res.code == exitOK || !strings.Contains(res.stderr, "JETJOB_CHANNEL_BILLING_OPS_SLACK_TARGET") {
		t.Fatalf("apply without the channels' variables: %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	t.Setenv("JETJOB_CHANNEL_BILLING_OPS_SLACK_TARGET", "https://hooks.slack.com/services/T000/B000/XXXXSLACKSECRET")
	t.Setenv("JETJOB_CHANNEL_BILLING_PAGER_TARGET", pagerURL)
	t.Setenv("JETJOB_CHANNEL_BILLING_PAGER_SECRET", secret)
	res = must(t, dst.as(t, bootstrapToken, exported, "apply", "-f", "-"), "apply with the variables")
	printed(t, "apply", res.stdout, "+ channel billing/ops-slack\n", "+ channel oncall\n", "+ rule billing/flaky\n", "+ rule billing/nightly-sla\n",
		"created rule billing/flaky")
	if again := dst.admin(t, "", "export"); again != exported {
		t.Fatalf("the applied cluster exports differently:\n%s\n---\nwant:\n%s", again, exported)
	}
	var pagerID int64
	chs, err := dst.apiClient(t).ListChannels(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range chs {
		if ch.Name == "pager" {
			pagerID = ch.ID
		}
	}
	printed(t, "channels test", dst.admin(t, "", "channels", "test", strconv.FormatInt(pagerID, 10)), "sent (HTTP 200)")
	if h := <-hits; h.token != token || !strings.HasPrefix(h.sig, "v1,") {
		t.Fatalf("the applied channel's test reached the receiver with token %q, signature %q", h.token, h.sig)
	}

	// Again: with the variables set, apply sends the credentials (it
	// cannot compare what it cannot read back); without them, nothing.
	res = must(t, dst.as(t, bootstrapToken, exported, "apply", "-f", "-"), "apply with the variables again")
	printed(t, "apply again", res.stdout, "~ channel billing/pager\n", "updated channel billing/pager")
	for _, v := range []string{"JETJOB_CHANNEL_BILLING_OPS_SLACK_TARGET", "JETJOB_CHANNEL_BILLING_PAGER_TARGET", "JETJOB_CHANNEL_BILLING_PAGER_SECRET"} {
		t.Setenv(v, "")
	}
	res = must(t, dst.as(t, bootstrapToken, exported, "apply", "-f", "-"), "apply without the variables")
	if strings.Contains(res.stdout, "channel") || strings.Contains(res.stdout, "rule") || !strings.Contains(res.stdout, "No changes") {
		t.Fatalf("second apply printed\n%s", res.stdout)
	}
}
