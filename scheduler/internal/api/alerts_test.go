package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/alarm"
	"github.com/jetjob/jetjob/scheduler/internal/alerts"
	"github.com/jetjob/jetjob/scheduler/internal/auth"
)

// channelSpec is a generic webhook channel of group ("" global) on a
// loopback URL (which the default egress policy refuses to reach).
func channelSpec(group, name string) apiv1.Channel {
	return apiv1.Channel{Name: name, Kind: "webhook", Group: group, Target: "https://127.0.0.1:1/hook?token=t0p",
		Secret: "whsec_c2VjcmV0LXNpZ25pbmcta2V5"}
}

// channel creates a channel of group ("" global) and returns its id.
func (e *env) channel(group string) int64 {
	e.t.Helper()
	c := channelSpec(group, fmt.Sprint("c", e.next()))
	ch, err := alerts.CreateChannel(context.Background(), e.pool, alarm.Channel{Name: c.Name, Kind: alarm.Kind(c.Kind),
		Group: group, Target: c.Target, Secret: c.Secret}, "admin")
	if err != nil {
		e.t.Fatal(err)
	}
	return ch.ID
}

// alertRule creates a rule of group on a channel of it and returns its id.
func (e *env) alertRule(group string) int64 {
	e.t.Helper()
	ch := e.channel(group)
	var id int64
	err := pgx.BeginFunc(context.Background(), e.pool, func(tx pgx.Tx) error {
		r, err := alerts.CreateRule(context.Background(), tx, alerts.Rule{Name: fmt.Sprint("r", e.next()), Group: group,
			Events: []alarm.Event{alarm.EventFailed}, Channels: []int64{ch}}, &auth.Principal{Name: "admin", Admin: true})
		id = r.ID
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return id
}

// openAlert creates an open alert of a new rule of group on the plain job.
func (e *env) openAlert(group string) int64 {
	e.t.Helper()
	rule := e.alertRule(group)
	var id int64
	if err := e.pool.QueryRow(context.Background(), `INSERT INTO alerts (rule_id, job_id, group_name, state, count, first_at, last_at, opened_at)
		VALUES ($1, $2, $3, 'open', 3, now(), now(), now()) RETURNING id`, rule, e.plain.ID, group).Scan(&id); err != nil {
		e.t.Fatal(err)
	}
	return id
}

// A channel's secret is never answered, and a chat vendor's URL (its
// credential) is shown as its scheme and host; "send test" answers how
// the attempt went (here: the egress policy refused loopback).
func TestChannelSecretNeverShown(t *testing.T) {
	e := newEnv(t)
	code, body := e.do("operator", "POST", "/api/v1/channels", apiv1.Channel{Name: "ops", Kind: "slack", Group: "a",
		Target: "https://hooks.slack.com/services/T000/B000/XXXXSECRET"})
	var created apiv1.Channel
	if code != s201 || strings.Contains(string(body), "XXXXSECRET") || json.Unmarshal(body, &created) != nil ||
		created.Target != "https://hooks.slack.com/…" {
		t.Fatalf("create slack channel: %d %s", code, body)
	}
	id := e.channel("a")
	for _, path := range []string{fmt.Sprintf("/api/v1/channels/%d", id), "/api/v1/channels"} {
		code, body := e.do("viewerA", "GET", path, nil)
		if code != s200 || strings.Contains(string(body), "c2VjcmV0") || strings.Contains(string(body), "t0p") ||
			!strings.Contains(string(body), `"secret_set": true`) {
			t.Errorf("GET %s: %d %s: want no secret and no query, secret_set", path, code, body)
		}
	}
	code, body = e.do("operator", "POST", fmt.Sprintf("/api/v1/channels/%d/test", id), nil)
	var res apiv1.ChannelTest
	if code != s200 || json.Unmarshal(body, &res) != nil || res.Sent || !strings.Contains(res.Error, "denied by egress policy") {
		t.Errorf("send test to loopback: %d %s, want not sent, refused by the egress policy", code, body)
	}
}

// A rule may name only channels its author may: an operator of a names
// a's channels from a's rules; not b's (answered like a missing channel),
// not a global one (admins'), and no rule of a names b's channel even for
// an admin.
func TestRuleChannelReferences(t *testing.T) {
	e := newEnv(t)
	chA, chB, global := e.channel("a"), e.channel("b"), e.channel("")
	rule := func(who, group string, ch int64) (int, string) {
		code, body := e.do(who, "POST", "/api/v1/alert-rules", apiv1.AlertRule{Name: fmt.Sprint("r", e.next()), Group: group,
			Events: []string{"failed", "recovered"}, Threshold: 3, Window: apiv1.Duration(60e9), Channels: []int64{ch}})
		return code, string(body)
	}
	if code, body := rule("operator", "a", chA); code != s201 {
		t.Errorf("operator naming a's channel: %d %s", code, body)
	}
	codeB, bodyB := rule("operator", "a", chB)
	codeMissing, bodyMissing := rule("operator", "a", 999999)
	if codeB != s400 || codeMissing != s400 || !sameAnswer([]byte(bodyB), chB, []byte(bodyMissing), 999999) {
		t.Errorf("operator naming b's channel: %d %s; a missing one: %d %s; want the same 400", codeB, bodyB, codeMissing, bodyMissing)
	}
	if code, body := rule("operator", "a", global); code != s403 {
		t.Errorf("operator naming a global channel: %d %s, want 403", code, body)
	}
	if code, body := rule("admin", "a", chB); code != s400 || !strings.Contains(body, "belongs to group b") {
		t.Errorf("admin naming b's channel from a's rule: %d %s, want 400", code, body)
	}
	if code, body := rule("admin", "", global); code != s201 {
		t.Errorf("admin's global rule on a global channel: %d %s", code, body)
	}
	// A channel a rule names cannot be deleted.
	if code, body := e.do("operator", "DELETE", fmt.Sprintf("/api/v1/channels/%d", chA), nil); code != s409 {
		t.Errorf("deleting a channel a rule names: %d %s, want 409", code, body)
	}
}

// Editing a rule keeps its scope and asks MayName only of the channels it
// adds: an operator tunes a rule an admin pointed at a global channel
// (which stays), but cannot add another group's or a global channel.
func TestRuleUpdate(t *testing.T) {
	e := newEnv(t)
	chA, chB, global, global2 := e.channel("a"), e.channel("b"), e.channel(""), e.channel("")
	code, body := e.do("admin", "POST", "/api/v1/alert-rules", apiv1.AlertRule{Name: "tuned", Group: "a",
		Events: []string{"failed"}, Channels: []int64{global, chA}})
	var rule apiv1.AlertRule
	if code != s201 || json.Unmarshal(body, &rule) != nil {
		t.Fatalf("admin's rule: %d %s", code, body)
	}
	put := func(chs ...int64) (int, string) {
		code, body := e.do("operator", "PUT", fmt.Sprintf("/api/v1/alert-rules/%d", rule.ID), apiv1.AlertRule{Name: "tuned-2",
			Group: "b", Events: []string{"failed", "recovered"}, Threshold: 4, Window: apiv1.Duration(60e9), Channels: chs})
		return code, string(body)
	}
	code, got := put(global, chA)
	var out apiv1.AlertRule
	if code != s200 || json.Unmarshal([]byte(got), &out) != nil || out.Name != "tuned-2" || out.Group != "a" || out.Threshold != 4 ||
		len(out.Events) != 2 || fmt.Sprint(out.Channels) != fmt.Sprint([]int64{chA, global}) /* by id */ {
		t.Fatalf("operator tuning the rule: %d %s", code, got)
	}
	if code, got := put(global, chA, chB); code != s400 {
		t.Errorf("operator adding b's channel: %d %s, want 400", code, got)
	}
	if code, got := put(global2); code != s403 {
		t.Errorf("operator adding a global channel: %d %s, want 403", code, got)
	}
	if code, got := put(chA); code != s200 || json.Unmarshal([]byte(got), &out) != nil || fmt.Sprint(out.Channels) != fmt.Sprint([]int64{chA}) {
		t.Errorf("operator dropping the global channel: %d %s", code, got)
	}
}

// Every write of a channel or a rule is audited in its transaction: the
// action on kind:<id>, the item's group, and its documents before (none
// for a create and a channel's update) and after (none for a delete).
func TestChannelAndRuleWritesAudited(t *testing.T) {
	e := newEnv(t)
	want := func(action, target, group, before, after string) {
		t.Helper()
		a := lastAudit(t, e, action)
		if a.Target != target || a.Group != group || fmt.Sprint(field(t, a.Before, "name")) != before || fmt.Sprint(field(t, a.After, "name")) != after {
			t.Errorf("%s: target %q group %q before %s after %s; want %q %q, names %s → %s", action, a.Target, a.Group, a.Before, a.After,
				target, group, before, after)
		}
	}
	code, body := e.do("operator", "POST", "/api/v1/channels", channelSpec("a", "hook"))
	var ch apiv1.Channel
	if code != s201 || json.Unmarshal(body, &ch) != nil {
		t.Fatalf("create channel: %d %s", code, body)
	}
	want("channel.create", fmt.Sprintf("channel:%d", ch.ID), "a", "<nil>", "hook")
	if code, body := e.do("operator", "PUT", fmt.Sprintf("/api/v1/channels/%d", ch.ID), apiv1.Channel{Name: "hook-2", Target: ch.Target}); code != s200 {
		t.Fatalf("update channel: %d %s", code, body)
	}
	want("channel.update", fmt.Sprintf("channel:%d", ch.ID), "a", "<nil>", "hook-2")

	code, body = e.do("operator", "POST", "/api/v1/alert-rules", apiv1.AlertRule{Name: "r", Group: "a", Events: []string{"failed"}, Channels: []int64{ch.ID}})
	var rule apiv1.AlertRule
	if code != s201 || json.Unmarshal(body, &rule) != nil {
		t.Fatalf("create rule: %d %s", code, body)
	}
	want("alert_rule.create", fmt.Sprintf("alert_rule:%d", rule.ID), "a", "<nil>", "r")
	if code, body := e.do("operator", "PUT", fmt.Sprintf("/api/v1/alert-rules/%d", rule.ID), apiv1.AlertRule{Name: "r-2", Events: []string{"failed"}, Channels: []int64{ch.ID}}); code != s200 {
		t.Fatalf("update rule: %d %s", code, body)
	}
	want("alert_rule.update", fmt.Sprintf("alert_rule:%d", rule.ID), "a", "r", "r-2")
	if code, body := e.do("operator", "PUT", "/api/v1/alert-rules/999999", apiv1.AlertRule{Name: "x", Events: []string{"failed"}}); code != s404 {
		t.Errorf("update of no rule: %d %s, want 404", code, body)
	}

	if code, body := e.do("operator", "DELETE", fmt.Sprintf("/api/v1/alert-rules/%d", rule.ID), nil); code != s204 {
		t.Fatalf("delete rule: %d %s", code, body)
	}
	want("alert_rule.delete", fmt.Sprintf("alert_rule:%d", rule.ID), "a", "r-2", "<nil>")
	if code, body := e.do("operator", "DELETE", fmt.Sprintf("/api/v1/channels/%d", ch.ID), nil); code != s204 {
		t.Fatalf("delete channel: %d %s", code, body)
	}
	want("channel.delete", fmt.Sprintf("channel:%d", ch.ID), "a", "hook-2", "<nil>")
}
