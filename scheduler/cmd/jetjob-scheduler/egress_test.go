package main

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/jetjob/jetjob/scheduler/internal/alarm"
)

// JETJOB_EGRESS_ALLOW reaches the scheduler's egress policy; an entry the
// policy cannot read stops the scheduler before anything starts, by name.
func TestEgressAllowSetting(t *testing.T) {
	t.Setenv("JETJOB_EGRESS_ALLOW", "10.20.0.0/16, hooks.internal:8443")
	o := serveOptions(t)
	if got := o.schedulerConfig("").Egress.Allow; !slices.Equal(got, []string{"10.20.0.0/16", "hooks.internal:8443"}) {
		t.Errorf("Egress.Allow = %q", got)
	}

	t.Setenv("JETJOB_DATABASE_URL", "postgres://u@127.0.0.1:1/none")
	t.Setenv("JETJOB_EGRESS_ALLOW", "*.internal,10.0.0.0/33")
	_, err := execute(context.Background(), "serve")
	var ue usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--egress-allow / JETJOB_EGRESS_ALLOW") ||
		!strings.Contains(err.Error(), `"*.internal"`) || !strings.Contains(err.Error(), `"10.0.0.0/33"`) {
		t.Errorf("bad JETJOB_EGRESS_ALLOW: %v, want a usage error naming the setting and both entries", err)
	}
}

// webhook-secret prints a group's secret, the one its alarms verify with,
// and refuses to run without a master secret or with a bad group name.
func TestWebhookSecretCommand(t *testing.T) {
	t.Setenv("JETJOB_WEBHOOK_SECRET", "hunter7")
	out, err := execute(context.Background(), "webhook-secret", "billing")
	want, _ := alarm.GroupSecret("hunter7", "billing")
	if err != nil || out != want+"\n" {
		t.Errorf("webhook-secret billing = %q, %v; want %q", out, err, want)
	}
	if strings.Contains(out, "hunter7") {
		t.Error("the master secret is printed")
	}
	var ue usageError
	if _, err := execute(context.Background(), "webhook-secret", "a.b"); !errors.As(err, &ue) {
		t.Errorf("bad group: %v, want a usage error", err)
	}
	t.Setenv("JETJOB_WEBHOOK_SECRET", "")
	if _, err := execute(context.Background(), "webhook-secret", "billing"); !errors.As(err, &ue) || !strings.Contains(err.Error(), "JETJOB_WEBHOOK_SECRET") {
		t.Errorf("no master secret: %v, want a usage error naming JETJOB_WEBHOOK_SECRET", err)
	}
}
