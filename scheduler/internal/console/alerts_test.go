package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// An operator makes a channel and a rule through the forms (a refused
// field comes back with what was typed), edits them, and mutes an alert
// until a time with a reason; a viewer reads all three without a control,
// and a forged POST is the API's 403.
func TestAlertsPages(t *testing.T) {
	e := newEnv(t)
	op := e.browser().login("operator")
	mustContain(t, op.open("/channels"), `id="no-channels"`, `id="new-channel"`, `href="/alerts"`)
	mustContain(t, op.open("/channels/new"), `id="channel-form"`, `<option value="a"`)

	// A refused channel keeps the form, never the secret typed.
	p := op.post("/channels", url.Values{"name": {"ops hook"}, "kind": {"webhook"}, "group": {"a"},
		"target": {"https://hooks.example.com/jetjob"}, "secret": {"whsec_dG9wc2VjcmV0dG9wc2VjcmV0"}})
	if p.Code != http.StatusBadRequest {
		t.Fatalf("bad channel name: %d\n%s", p.Code, p.Body)
	}
	mustContain(t, p, `id="ch-error"`, `<input id="ch-name" name="name" value="ops hook" required`, `<option value="a" selected>a</option>`,
		`value="https://hooks.example.com/jetjob"`)
	mustLack(t, p, "whsec_dG9wc2VjcmV0dG9wc2VjcmV0")
	p = op.post("/channels", url.Values{"name": {"ops-hook"}, "kind": {"webhook"}, "group": {"a"},
		"target": {"https://hooks.example.com/jetjob"}, "secret": {"whsec_dG9wc2VjcmV0dG9wc2VjcmV0"}})
	if p.Code != http.StatusSeeOther || !strings.HasPrefix(p.Location, "/channels") {
		t.Fatalf("create channel: %d → %q\n%s", p.Code, p.Location, p.Body)
	}
	var ch int64
	if err := e.pool.QueryRow(context.Background(), `SELECT id FROM alert_channels WHERE name = 'ops-hook'`).Scan(&ch); err != nil {
		t.Fatal(err)
	}
	mustContain(t, op.get(p.Location), "Channel saved.", fmt.Sprintf(`id="test-%d"`, ch), "https://hooks.example.com/jetjob")
	// Editing without retyping the target or the secret keeps both.
	p = op.post(fmt.Sprintf("/channels/%d", ch), url.Values{"name": {"ops-hook-2"}, "target": {""}, "secret": {""}})
	if p.Code != http.StatusSeeOther {
		t.Fatalf("edit channel: %d\n%s", p.Code, p.Body)
	}
	var target, secret string
	if err := e.pool.QueryRow(context.Background(), `SELECT target, secret FROM alert_channels WHERE id = $1`, ch).Scan(&target, &secret); err != nil ||
		target != "https://hooks.example.com/jetjob" || secret != "whsec_dG9wc2VjcmV0dG9wc2VjcmV0" {
		t.Fatalf("after an edit that retyped nothing: %q %q %v", target, secret, err)
	}

	// A rule: a window that does not read comes back on the form.
	job := e.job("a", "echo")
	form := url.Values{"name": {"flaky"}, "group": {"a"}, "job_id": {fmt.Sprint(job.ID)}, "events": {"failed", "recovered"},
		"threshold": {"3"}, "window": {"ten minutes"}, "channels": {fmt.Sprint(ch)}}
	p = op.post("/alert-rules", form)
	if p.Code != http.StatusBadRequest {
		t.Fatalf("bad window: %d\n%s", p.Code, p.Body)
	}
	mustContain(t, p, `id="ru-error"`, "want a duration", `value="ten minutes"`, `id="ev-recovered" checked`, fmt.Sprintf(`id="rch-%d" checked`, ch))
	form.Set("window", "10m")
	if p = op.post("/alert-rules", form); p.Code != http.StatusSeeOther {
		t.Fatalf("create rule: %d\n%s", p.Code, p.Body)
	}
	var rule int64
	if err := e.pool.QueryRow(context.Background(), `SELECT id FROM alert_rules WHERE name = 'flaky'`).Scan(&rule); err != nil {
		t.Fatal(err)
	}
	mustContain(t, op.open("/alert-rules"), fmt.Sprintf(`id="rule-%d"`, rule), "3 in 10m0s", "ops-hook-2", "failed, recovered")
	mustContain(t, op.open(fmt.Sprintf("/alert-rules/%d/edit", rule)), `value="10m0s"`, `id="ev-failed" checked`,
		`<input id="ru-name" name="name" value="flaky" required`, `<input id="ru-group" value="a" disabled>`)
	mustContain(t, op.open(fmt.Sprintf("/channels/%d/edit", ch)), `<input id="ch-group" value="a" disabled>`)
	form.Set("threshold", "5")
	form.Set("renotify", "1h")
	if p = op.post(fmt.Sprintf("/alert-rules/%d", rule), form); p.Code != http.StatusSeeOther {
		t.Fatalf("edit rule: %d\n%s", p.Code, p.Body)
	}
	mustContain(t, op.open("/alert-rules"), "5 in 10m0s", "every 1h0m0s")

	// An open alert of the rule: mute it until a time, with a reason.
	var alert int64
	if err := e.pool.QueryRow(context.Background(), `INSERT INTO alerts (rule_id, job_id, group_name, state, count, first_at, last_at,
			opened_at, last_event, last_status, last_message)
		VALUES ($1, $2, 'a', 'open', 4, now(), now(), now(), 'failed', 'FAILED', 'exit status 3') RETURNING id`, rule, job.ID).Scan(&alert); err != nil {
		t.Fatal(err)
	}
	mustContain(t, op.open("/alerts"), fmt.Sprintf(`id="alert-%d"`, alert), "flaky")
	path := fmt.Sprintf("/alerts/%d", alert)
	mustContain(t, op.open(path), `id="mute-form"`, `id="ack-form"`, "exit status 3", `id="no-deliveries"`)
	until := time.Now().UTC().Add(3 * time.Hour).Truncate(time.Minute)
	if p = op.post(path+"/mute", url.Values{"until": {"tomorrow"}}); p.Code != http.StatusBadRequest || !strings.Contains(p.Body, `id="alert-error"`) {
		t.Fatalf("mute until tomorrow: %d\n%s", p.Code, p.Body)
	}
	if p = op.post(path+"/mute", url.Values{"until": {until.Format("2006-01-02T15:04")}, "reason": {"deploy in progress"}}); p.Code != http.StatusSeeOther {
		t.Fatalf("mute: %d\n%s", p.Code, p.Body)
	}
	mustContain(t, op.open(path), `id="alert-muted"`, "Muted until "+until.Format("2006-01-02 15:04:05")+" UTC by operator: deploy in progress")

	// A viewer reads everything, changes nothing.
	v := e.browser().login("viewer")
	for _, pg := range []string{"/channels", "/alert-rules", path} {
		mustLack(t, v.open(pg), fmt.Sprintf(`id="test-%d"`, ch), `id="new-channel"`, `id="new-rule"`, fmt.Sprintf(`id="edit-rule-%d"`, rule), `id="mute-form"`)
	}
	for _, forged := range []string{fmt.Sprintf("/channels/%d/test", ch), path + "/ack", fmt.Sprintf("/alert-rules/%d/delete", rule)} {
		if p := v.post(forged, nil); p.Code != http.StatusForbidden {
			t.Errorf("viewer's forged POST %s: %d, want 403", forged, p.Code)
		}
	}
	// A viewer of another group does not see them at all.
	vb := e.browser().login("viewerB")
	mustLack(t, vb.open("/channels"), "ops-hook")
	mustLack(t, vb.open("/alerts"), fmt.Sprintf(`id="alert-%d"`, alert))
	if p := vb.get(path); p.Code != http.StatusNotFound {
		t.Errorf("another group's viewer opening the alert: %d, want 404", p.Code)
	}
}

// A job's alarm fields are a channel and a rule shown read-only, each
// with a link to its job; the rule form does not offer the channel, and a
// forged edit or delete is the API's 409.
func TestJobAlarmFieldsShowReadOnly(t *testing.T) {
	e := newEnv(t)
	job := e.job("a", "echo")
	ctx := context.Background()
	if _, err := e.pool.Exec(ctx, `UPDATE jobs SET alarm_emails = '{ops@example.com}' WHERE id = $1`, job.ID); err != nil {
		t.Fatal(err)
	}
	var ch, rule int64
	if err := e.pool.QueryRow(ctx, `SELECT c.id, r.id FROM alert_channels c, alert_rules r
		WHERE c.managed_by_job = $1 AND r.managed_by_job = $1`, job.ID).Scan(&ch, &rule); err != nil {
		t.Fatal(err)
	}
	op := e.browser().login("operator")
	// (The apostrophe comes through the catalogue, escaped.)
	note := fmt.Sprintf(`<a href="/jobs/%d">job %d</a>&#39;s alarm fields`, job.ID, job.ID)
	p := op.open("/channels")
	mustContain(t, p, fmt.Sprintf(`id="managed-%d"`, ch), note, fmt.Sprintf(`id="test-%d"`, ch), "ops@example.com")
	mustLack(t, p, fmt.Sprintf(`id="edit-%d"`, ch), fmt.Sprintf(`id="delete-%d"`, ch))
	p = op.open("/alert-rules")
	mustContain(t, p, fmt.Sprintf(`id="managed-rule-%d"`, rule), note, "retries_exhausted")
	mustLack(t, p, fmt.Sprintf(`id="edit-rule-%d"`, rule), fmt.Sprintf(`id="delete-rule-%d"`, rule))
	mustLack(t, op.open("/alert-rules/new"), fmt.Sprintf(`id="rch-%d"`, ch))
	for _, forged := range []string{fmt.Sprintf("/channels/%d/delete", ch), fmt.Sprintf("/alert-rules/%d/delete", rule)} {
		if p := op.post(forged, nil); p.Code != http.StatusConflict || !strings.Contains(p.Body, "edit the job instead") {
			t.Errorf("operator's POST %s: %d, want 409 saying to edit the job\n%s", forged, p.Code, p.Body)
		}
	}
}
