package api_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/jetjob/jetjob/internal/egress"
	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
	"github.com/jetjob/jetjob/scheduler/internal/api"
)

// An alarm webhook whose host is an address the scheduler would never
// connect to is refused when the job is created or updated, with the
// reason and the setting that allows it; a host name passes (what it
// resolves to is checked when the alarm is sent), and so does an address
// the operator allowed.
func TestAlarmWebhookCheckedOnWrite(t *testing.T) {
	policy, err := egress.New(egress.Config{Allow: []string{"10.1.0.0/16"}})
	if err != nil {
		t.Fatal(err)
	}
	srv, _ := serverWith(t, func(c *api.Config) { c.Egress = policy })
	ctx := context.Background()
	cl, err := client.New(srv.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.CreateGroup(ctx, apiv1.Group{Name: "g"}); err != nil {
		t.Fatal(err)
	}
	spec := func(name, hook string) apiv1.JobSpec {
		return apiv1.JobSpec{Group: "g", Name: name, Handler: "h", ScheduleType: "none", AlarmWebhook: hook}
	}
	for hook, reason := range map[string]string{
		"http://127.0.0.1:5432/":                  "loopback",
		"http://127.0.0.1/":                       "loopback",
		"https://[::1]:8080/api/v1/jobs":          "loopback",
		"http://[::ffff:127.0.0.1]:4222/":         "loopback",
		"http://0.0.0.0:8080/":                    "unspecified",
		"http://169.254.169.254/latest/meta-data": "cloud metadata",
		"http://10.2.0.1/hook":                    "private",
		"http://user:pw@192.168.1.1/hook":         "private",
		"http://[fe80::1]/":                       "link-local",
	} {
		_, err := cl.CreateJob(ctx, spec("j", hook))
		if err == nil || !strings.Contains(err.Error(), "denied by egress policy: "+reason) ||
			!strings.Contains(err.Error(), "JETJOB_EGRESS_ALLOW") {
			t.Errorf("webhook %s: %v, want 400 denied by egress policy (%s), naming JETJOB_EGRESS_ALLOW", hook, err, reason)
		}
		if err != nil && strings.Contains(err.Error(), "pw@") {
			t.Errorf("webhook %s: the error shows the URL's password: %v", hook, err)
		}
	}
	for i, hook := range []string{"https://hooks.example.com/x", "http://10.1.2.3:8080/hook", "http://localhost:9/"} {
		if _, err := cl.CreateJob(ctx, spec(fmt.Sprint("ok", i), hook)); err != nil {
			t.Errorf("webhook %s: %v, want accepted", hook, err)
		}
	}
	job, err := cl.CreateJob(ctx, spec("update", ""))
	if err != nil {
		t.Fatal(err)
	}
	upd := spec("update", "http://127.0.0.1:5432/")
	upd.Version = job.Version
	_, err = cl.UpdateJob(ctx, job.ID, upd)
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || !strings.Contains(err.Error(), "egress policy") {
		t.Errorf("update to a loopback webhook: %v, want 400 denied by the egress policy", err)
	}
}
