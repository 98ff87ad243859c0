package jobfile

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// Alert channels and rules in jobs files (docs/alerts.md, "In jobs
// files"): one YAML document each, after the workflows, kind AlertChannel
// or AlertRule, named by group and name like everything else in the file.
//
// A channel's credentials never appear in a file: its signing secret, and
// the URL of every kind but email (a chat vendor's URL is the credential;
// a webhook's may carry a token), are named by reference, target_env and
// secret_env, environment variables "jetjob apply" reads them from. Export
// writes the references (JETJOB_CHANNEL_<GROUP>_<NAME>_TARGET / _SECRET);
// apply leaves a stored value as it is when its variable is unset.

// Kinds of the alert documents.
const (
	ChannelKind = "AlertChannel"
	RuleKind    = "AlertRule"
)

// GlobalPrefix marks a global channel in a rule's channels ("global:ops"),
// a group's channel being named by its name alone.
const GlobalPrefix = "global:"

// ChannelDoc is an alert channel as a file states it.
type ChannelDoc struct {
	APIVersion string `yaml:"apiVersion" json:"-"`
	Kind       string `yaml:"kind" json:"-"`
	// Group is the channel's group; empty: global.
	Group string `yaml:"group,omitempty" json:"group,omitempty"`
	Name  string `yaml:"name" json:"name"`
	// Type is the channel's kind (email, webhook, slack, …): kind is the
	// document's.
	Type string `yaml:"type" json:"type"`
	// Target is an email channel's addresses (other kinds: TargetEnv).
	Target    string `yaml:"target,omitempty" json:"target,omitempty"`
	TargetEnv string `yaml:"target_env,omitempty" json:"target_env,omitempty"`
	SecretEnv string `yaml:"secret_env,omitempty" json:"secret_env,omitempty"`
	Template  string `yaml:"template,omitempty" json:"template,omitempty"`
}

// Key is the channel's group/name ("name" alone for a global one).
func (d *ChannelDoc) Key() string { return keyOf(d.Group, d.Name) }

// RuleDoc is an alert rule as a file states it.
type RuleDoc struct {
	APIVersion string `yaml:"apiVersion" json:"-"`
	Kind       string `yaml:"kind" json:"-"`
	// Group is the rule's group (a job rule's: its job's); empty: every
	// job (global).
	Group string `yaml:"group,omitempty" json:"group,omitempty"`
	Name  string `yaml:"name" json:"name"`
	// Job names the one job the rule covers, as group/name.
	Job        string   `yaml:"job,omitempty" json:"job,omitempty"`
	Events     []string `yaml:"events" json:"events"`
	Threshold  int      `yaml:"threshold,omitempty" json:"threshold,omitempty"`
	Window     string   `yaml:"window,omitempty" json:"window,omitempty"`
	Renotify   string   `yaml:"renotify,omitempty" json:"renotify,omitempty"`
	SLA        string   `yaml:"sla,omitempty" json:"sla,omitempty"`
	PauseAfter int      `yaml:"pause_after,omitempty" json:"pause_after,omitempty"`
	// Channels are channel names: of the rule's group, or GlobalPrefix
	// and a global one's.
	Channels []string `yaml:"channels" json:"channels"`
}

// Key is the rule's group/name ("name" alone for a global one).
func (d *RuleDoc) Key() string { return keyOf(d.Group, d.Name) }

func keyOf(group, name string) string {
	if group == "" {
		return name
	}
	return group + "/" + name
}

// ChannelEnv is the environment variable export names for a channel's
// target or secret (what "TARGET" or "SECRET").
func ChannelEnv(group, name, what string) string {
	s := "JETJOB_CHANNEL_"
	if group != "" {
		s += group + "_"
	}
	s += name + "_" + what
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z':
			return r - 'a' + 'A'
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			return r
		}
		return '_'
	}, s)
}

// ChannelOf is the document of ch: its credentials by reference.
func ChannelOf(ch apiv1.Channel) ChannelDoc {
	d := ChannelDoc{APIVersion: APIVersion, Kind: ChannelKind, Group: ch.Group, Name: ch.Name, Type: ch.Kind, Template: ch.Template}
	if ch.Kind == "email" {
		d.Target = ch.Target
	} else {
		d.TargetEnv = ChannelEnv(ch.Group, ch.Name, "TARGET")
	}
	if ch.SecretSet {
		d.SecretEnv = ChannelEnv(ch.Group, ch.Name, "SECRET")
	}
	return d
}

// RuleOf is the document of r, its job named by jobKey ("" for none) and
// its channels by channels (id → channel).
func RuleOf(r apiv1.AlertRule, jobKey string, channels map[int64]apiv1.Channel) (RuleDoc, error) {
	d := RuleDoc{APIVersion: APIVersion, Kind: RuleKind, Group: r.Group, Name: r.Name, Job: jobKey, Events: r.Events,
		Window: durationDoc(r.Window), Renotify: durationDoc(r.Renotify), SLA: durationDoc(r.SLA), PauseAfter: r.PauseAfter}
	if r.Threshold > 1 {
		d.Threshold = r.Threshold
	}
	for _, id := range r.Channels {
		ch, ok := channels[id]
		if !ok {
			return d, fmt.Errorf("rule %s: channel %d is not readable: it cannot be named in a file", d.Key(), id)
		}
		if ch.Group == "" {
			d.Channels = append(d.Channels, GlobalPrefix+ch.Name)
		} else {
			d.Channels = append(d.Channels, ch.Name)
		}
	}
	return d, nil
}

func durationDoc(d apiv1.Duration) string {
	if d == 0 {
		return ""
	}
	return time.Duration(d).String()
}

// EncodeDoc writes one alert document (a ChannelDoc or a RuleDoc).
func EncodeDoc(doc any) ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// ParseChannel reads an AlertChannel document strictly: an unknown field
// is an error naming it; name prefixes every error.
func ParseChannel(name string, data []byte) (ChannelDoc, error) {
	var d ChannelDoc
	if err := strictYAML(data, &d); err != nil {
		return d, fmt.Errorf("%s: %w", name, err)
	}
	switch {
	case d.APIVersion != APIVersion:
		return d, fmt.Errorf("%s: apiVersion %q: want %s", name, d.APIVersion, APIVersion)
	case d.Name == "" || d.Type == "":
		return d, fmt.Errorf("%s: channel %q: name and type are required", name, d.Name)
	case d.Target != "" && d.TargetEnv != "":
		return d, fmt.Errorf("%s: channel %s: target and target_env: give one", name, d.Key())
	case d.Target != "" && d.Type != "email":
		return d, fmt.Errorf("%s: channel %s: a %s channel's URL is a credential: name it with target_env, not in the file", name, d.Key(), d.Type)
	}
	return d, nil
}

// ParseRule reads an AlertRule document strictly.
func ParseRule(name string, data []byte) (RuleDoc, error) {
	var d RuleDoc
	if err := strictYAML(data, &d); err != nil {
		return d, fmt.Errorf("%s: %w", name, err)
	}
	if d.APIVersion != APIVersion {
		return d, fmt.Errorf("%s: apiVersion %q: want %s", name, d.APIVersion, APIVersion)
	}
	if d.Name == "" || len(d.Events) == 0 || len(d.Channels) == 0 {
		return d, fmt.Errorf("%s: rule %q: name, events and channels are required", name, d.Name)
	}
	for _, s := range []string{d.Window, d.Renotify, d.SLA} {
		if s == "" {
			continue
		}
		if _, err := time.ParseDuration(s); err != nil {
			return d, fmt.Errorf("%s: rule %s: %q: want a duration like 10m", name, d.Key(), s)
		}
	}
	return d, nil
}

// Spec is the rule document as the API takes it, with its job's and
// channels' ids resolved by the caller.
func (d *RuleDoc) Spec(jobID int64, channels []int64) apiv1.AlertRule {
	dur := func(s string) apiv1.Duration {
		v, _ := time.ParseDuration(s) // checked by ParseRule
		return apiv1.Duration(v)
	}
	return apiv1.AlertRule{Name: d.Name, Group: d.Group, JobID: jobID, Events: d.Events, Threshold: max(d.Threshold, 1),
		Window: dur(d.Window), Renotify: dur(d.Renotify), SLA: dur(d.SLA), PauseAfter: d.PauseAfter, Channels: channels}
}

func strictYAML(data []byte, out any) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	return dec.Decode(out)
}
