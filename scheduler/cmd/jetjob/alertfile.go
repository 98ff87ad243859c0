package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
	"github.com/jetjob/jetjob/scheduler/internal/jobfile"
)

// Alert channels and rules in jobs files (package jobfile, alerts.go):
// "jetjob export" writes each channel and rule the caller can read as a
// document of its own after the workflows, channels' credentials by
// reference; "jetjob apply -f" applies them after the workflows, channels
// first, creating or updating each by group and name. They are never
// pruned.

// alertDocs are the alert documents of a file.
type alertDocs struct {
	channels []jobfile.ChannelDoc
	rules    []jobfile.RuleDoc
}

// splitAlerts takes the alert documents out of a file, leaving blank lines
// in their place (the other documents' messages keep their line numbers).
func splitAlerts(name string, data []byte) ([]byte, alertDocs, error) {
	var docs alertDocs
	out, err := takeDocs(name, data, []string{jobfile.ChannelKind, jobfile.RuleKind}, func(where, kind string, doc []byte) error {
		if kind == jobfile.ChannelKind {
			d, err := jobfile.ParseChannel(where, doc)
			docs.channels = append(docs.channels, d)
			return err
		}
		d, err := jobfile.ParseRule(where, doc)
		docs.rules = append(docs.rules, d)
		return err
	})
	return out, docs, err
}

// exportAlerts appends to out the channels and rules (of group, when set;
// global ones only without) as YAML documents, in id order. Those a job's
// alarm fields make are left out: the job's document carries its fields.
func exportAlerts(ctx context.Context, c *client.Client, group string, out []byte) ([]byte, error) {
	chs, err := c.ListChannels(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading channels: %w", err)
	}
	byID := map[int64]apiv1.Channel{}
	for _, ch := range chs {
		byID[ch.ID] = ch
		if (group != "" && ch.Group != group) || ch.ManagedByJob != 0 {
			continue
		}
		b, err := jobfile.EncodeDoc(jobfile.ChannelOf(ch))
		if err != nil {
			return nil, fmt.Errorf("channel %s: %w", ch.Name, err)
		}
		out = append(append(out, "---\n"...), b...)
	}
	rules, err := c.ListAlertRules(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading alert rules: %w", err)
	}
	var jobs map[int64]jobfile.Key
	for _, r := range rules {
		if (group != "" && r.Group != group) || r.ManagedByJob != 0 {
			continue
		}
		jobKey := ""
		if r.JobID != 0 && jobs == nil {
			all, err := allJobs(ctx, c, "")
			if err != nil {
				return nil, err
			}
			jobs = map[int64]jobfile.Key{}
			for _, j := range all {
				jobs[j.ID] = jobfile.Key{Group: j.Group, Name: j.Name}
			}
		}
		if r.JobID != 0 {
			k, ok := jobs[r.JobID]
			if !ok {
				return nil, fmt.Errorf("rule %s: its job %d is not readable", r.Name, r.JobID)
			}
			jobKey = k.String()
		}
		d, err := jobfile.RuleOf(r, jobKey, byID)
		if err != nil {
			return nil, err
		}
		b, err := jobfile.EncodeDoc(d)
		if err != nil {
			return nil, fmt.Errorf("rule %s: %w", r.Name, err)
		}
		out = append(append(out, "---\n"...), b...)
	}
	return out, nil
}

// alertChange is what apply does with one channel or rule of a file.
type alertChange struct {
	Action string `json:"action"` // create, update, unchanged
	What   string `json:"what"`   // channel, rule
	Key    string `json:"key"`
	id     int64
	ch     apiv1.Channel
	rule   *jobfile.RuleDoc
	spec   apiv1.AlertRule
}

// planAlerts compares the file's channels and rules with the cluster's,
// reading the credentials the file names from the environment. A rule
// naming a channel the file creates is compared again when applied
// (executeAlerts).
func planAlerts(ctx context.Context, c *client.Client, docs alertDocs) ([]alertChange, error) {
	if len(docs.channels)+len(docs.rules) == 0 {
		return nil, nil
	}
	chs, err := c.ListChannels(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading channels: %w", err)
	}
	var out []alertChange
	for _, d := range docs.channels {
		ch := apiv1.Channel{Name: d.Name, Kind: d.Type, Group: d.Group, Target: d.Target, Template: d.Template}
		if d.TargetEnv != "" {
			ch.Target = os.Getenv(d.TargetEnv)
		}
		if d.SecretEnv != "" {
			ch.Secret = os.Getenv(d.SecretEnv)
		}
		change := alertChange{Action: "create", What: "channel", Key: d.Key(), ch: ch}
		for _, have := range chs {
			if have.Group != d.Group || have.Name != d.Name || have.ManagedByJob != 0 {
				continue
			}
			if have.Kind != d.Type {
				return nil, fmt.Errorf("channel %s is a %s channel, the file's a %s one: delete it to change its kind", d.Key(), have.Kind, d.Type)
			}
			change.Action, change.id = "update", have.ID
			if ch.Secret == "" && ch.Template == have.Template && (ch.Target == "" || d.Type == "email" && ch.Target == have.Target) {
				change.Action = "unchanged"
			}
		}
		if change.Action == "create" && ch.Target == "" {
			return nil, fmt.Errorf("channel %s: no target: set %s (the channel's URL; files never hold it)", d.Key(), d.TargetEnv)
		}
		out = append(out, change)
	}
	rules, err := c.ListAlertRules(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading alert rules: %w", err)
	}
	var jobs map[string]int64
	for i := range docs.rules {
		d := &docs.rules[i]
		change := alertChange{Action: "create", What: "rule", Key: d.Key(), rule: d}
		for _, have := range rules {
			if have.Group != d.Group || have.Name != d.Name || have.ManagedByJob != 0 {
				continue
			}
			change.Action, change.id, change.spec = "update", have.ID, have
			if jobs == nil {
				if jobs, err = jobIDs(ctx, c); err != nil {
					return nil, err
				}
			}
			// A rule naming a channel the file creates is compared
			// when applied.
			if want, err := resolveRule(d, chs, jobs); err == nil && want.JobID == have.JobID && sameRule(have, want) {
				change.Action = "unchanged"
			}
		}
		out = append(out, change)
	}
	return out, nil
}

// writeAlertPlan prints the channel and rule lines of a plan.
func writeAlertPlan(w io.Writer, changes []alertChange) error {
	return writePlanLines(w, changes, func(ch alertChange) (string, string, string) {
		return ch.Action, ch.What, ch.Key
	})
}

// executeAlerts applies the channels, then the rules (their channels and
// jobs resolved by name now that they exist); a rule that states the
// cluster's as it is is left alone.
func executeAlerts(ctx context.Context, c *client.Client, out io.Writer, changes []alertChange) error {
	for _, ch := range changes {
		switch {
		case ch.What != "channel" || ch.Action == "unchanged":
		case ch.Action == "create":
			got, err := c.CreateChannel(ctx, ch.ch)
			if err != nil {
				return fmt.Errorf("creating channel %s: %w", ch.Key, err)
			}
			fmt.Fprintf(out, "created channel %s (id %d)\n", cell(ch.Key), got.ID)
		default:
			if _, err := c.UpdateChannel(ctx, ch.id, ch.ch); err != nil {
				return fmt.Errorf("updating channel %s: %w", ch.Key, err)
			}
			fmt.Fprintf(out, "updated channel %s\n", cell(ch.Key))
		}
	}
	var chs []apiv1.Channel
	var jobs map[string]int64
	for _, ch := range changes {
		if ch.What != "rule" || ch.Action == "unchanged" {
			continue
		}
		if chs == nil {
			var err error
			if chs, err = c.ListChannels(ctx); err != nil {
				return fmt.Errorf("reading channels: %w", err)
			}
			if jobs, err = jobIDs(ctx, c); err != nil {
				return err
			}
		}
		spec, err := resolveRule(ch.rule, chs, jobs)
		if err != nil {
			return err
		}
		jobID := spec.JobID
		if ch.Action == "create" {
			got, err := c.CreateAlertRule(ctx, spec)
			if err != nil {
				return fmt.Errorf("creating rule %s: %w", ch.Key, err)
			}
			fmt.Fprintf(out, "created rule %s (id %d)\n", cell(ch.Key), got.ID)
			continue
		}
		if ch.spec.JobID != jobID {
			return fmt.Errorf("rule %s covers job %d, the file's job %q: a rule's job cannot change (delete the rule first)", ch.Key, ch.spec.JobID, ch.rule.Job)
		}
		if sameRule(ch.spec, spec) {
			continue
		}
		if _, err := c.UpdateAlertRule(ctx, ch.id, spec); err != nil {
			return fmt.Errorf("updating rule %s: %w", ch.Key, err)
		}
		fmt.Fprintf(out, "updated rule %s\n", cell(ch.Key))
	}
	return nil
}

// resolveRule is a rule document as the API takes it: its channels and
// job named by their ids in chs and jobs (group/name → id).
func resolveRule(d *jobfile.RuleDoc, chs []apiv1.Channel, jobs map[string]int64) (apiv1.AlertRule, error) {
	var ids []int64
	for _, name := range d.Channels {
		group, cname := d.Group, name
		if g, ok := strings.CutPrefix(name, jobfile.GlobalPrefix); ok {
			group, cname = "", g
		}
		i := slices.IndexFunc(chs, func(c apiv1.Channel) bool { return c.Group == group && c.Name == cname })
		if i < 0 {
			return apiv1.AlertRule{}, fmt.Errorf("rule %s: no channel %s", d.Key(), name)
		}
		ids = append(ids, chs[i].ID)
	}
	var jobID int64
	if d.Job != "" {
		id, ok := jobs[d.Job]
		if !ok {
			return apiv1.AlertRule{}, fmt.Errorf("rule %s: no job %s", d.Key(), d.Job)
		}
		jobID = id
	}
	return d.Spec(jobID, ids), nil
}

// jobIDs are the cluster's jobs' ids by group/name.
func jobIDs(ctx context.Context, c *client.Client) (map[string]int64, error) {
	all, err := allJobs(ctx, c, "")
	if err != nil {
		return nil, err
	}
	out := make(map[string]int64, len(all))
	for _, j := range all {
		out[j.Group+"/"+j.Name] = j.ID
	}
	return out, nil
}

// sameRule reports whether want states have's settings as they are.
func sameRule(have, want apiv1.AlertRule) bool {
	a, b := slices.Clone(have.Channels), slices.Clone(want.Channels)
	slices.Sort(a)
	slices.Sort(b)
	return have.Name == want.Name && slices.Equal(have.Events, want.Events) && max(have.Threshold, 1) == want.Threshold &&
		have.Window == want.Window && have.Renotify == want.Renotify && have.SLA == want.SLA && have.PauseAfter == want.PauseAfter &&
		slices.Equal(a, b)
}
