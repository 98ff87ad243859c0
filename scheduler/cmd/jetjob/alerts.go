package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
)

// The alert commands (docs/alerts.md): jetjob channels …, jetjob alerts …
// (with alerts rules …).

func (a *app) channelsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "channels", Aliases: []string{"channel"}, Short: "Where alert notices go: list, create, test, delete"}
	return parent(cmd,
		&cobra.Command{Use: "list", Short: "List the channels you may see (secrets are never shown)", Args: needArgs(),
			RunE: func(cmd *cobra.Command, _ []string) error {
				return show(a, cmd, (*client.Client).ListChannels, writeChannels)
			}},
		&cobra.Command{Use: "get ID", Short: "Show a channel", Args: needArgs("ID"),
			RunE: showID(a, "channel", (*client.Client).GetChannel, detail(channelKV))},
		a.channelsCreateCmd(),
		&cobra.Command{Use: "test ID", Short: "Send a test notice on a channel now and say how it went", Args: needArgs("ID"),
			RunE: showID(a, "channel", (*client.Client).TestChannel, func(w io.Writer, t *apiv1.ChannelTest) error {
				if t.Sent {
					_, err := fmt.Fprintf(w, "sent (HTTP %d)\n", t.Code)
					return err
				}
				return fmt.Errorf("not sent: %s", t.Error)
			})},
		&cobra.Command{Use: "delete ID", Short: "Delete a channel no rule names", Args: needArgs("ID"),
			RunE: doneID(a, "channel", (*client.Client).DeleteChannel, "deleted")},
	)
}

func (a *app) channelsCreateCmd() *cobra.Command {
	var ch apiv1.Channel
	var secretFile, templateFile string
	cmd := &cobra.Command{
		Use:   "create --name N --kind K --target URL [--group G] [--secret-file F] [--template-file F]",
		Short: "Create a channel: email, webhook, slack, teams, dingtalk, feishu or wecom",
		Long: `Create a channel. --target is the vendor's webhook URL (email: comma-separated
addresses). A signing secret (webhook, dingtalk, feishu) is read from
--secret-file ("-": standard input), so that it is not in the command line.
Without --group the channel is global (admins only).`,
		Args: needArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if ch.Secret, err = readArgFile(a, secretFile); err != nil {
				return err
			}
			if ch.Template, err = readArgFile(a, templateFile); err != nil {
				return err
			}
			return show(a, cmd, func(c *client.Client, ctx context.Context) (*apiv1.Channel, error) {
				return c.CreateChannel(ctx, ch)
			}, detail(channelKV))
		},
	}
	f := cmd.Flags()
	f.StringVar(&ch.Name, "name", "", "channel name")
	f.StringVar(&ch.Kind, "kind", "", "email, webhook, slack, teams, dingtalk, feishu or wecom")
	f.StringVar(&ch.Target, "target", "", "webhook URL, or email addresses")
	f.StringVar(&ch.Group, "group", "", "group (empty: global)")
	f.StringVar(&secretFile, "secret-file", "", `file holding the signing secret ("-": stdin)`)
	f.StringVar(&templateFile, "template-file", "", "file holding a Go text/template for the message body")
	return cmd
}

// readArgFile reads a file a flag names ("-": standard input), trimmed of
// its final newline; "" reads nothing.
func readArgFile(a *app, name string) (string, error) {
	if name == "" {
		return "", nil
	}
	var b []byte
	var err error
	if name == "-" {
		b, err = io.ReadAll(a.stdin)
	} else {
		b, err = os.ReadFile(name)
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", name, err)
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

func writeChannels(w io.Writer, cs []apiv1.Channel) error {
	t := newTable(w, "ID", "NAME", "KIND", "GROUP", "TARGET", "SECRET")
	for _, c := range cs {
		t.row(strconv.FormatInt(c.ID, 10), c.Name, c.Kind, orDash(c.Group), c.Target, yesNo(c.SecretSet))
	}
	return t.flush()
}

func channelKV(c *apiv1.Channel) *kv {
	k := &kv{}
	k.add("id", strconv.FormatInt(c.ID, 10))
	k.add("name", c.Name)
	k.add("kind", c.Kind)
	k.add("group", orDash(c.Group))
	k.add("target", c.Target)
	k.add("secret", yesNo(c.SecretSet))
	if c.Template != "" {
		k.add("template", c.Template)
	}
	k.add("created", c.CreatedBy+" "+fmtTime(c.CreatedAt))
	return k
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (a *app) alertsCmd() *cobra.Command {
	var group string
	var all bool
	list := &cobra.Command{Use: "list [--group G] [--all]", Short: "List open alerts (--all: closed and pending too)", Args: needArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return show(a, cmd, func(c *client.Client, ctx context.Context) ([]apiv1.Alert, error) {
				return c.ListAlerts(ctx, group, !all, 0)
			}, writeAlerts)
		}}
	list.Flags().StringVar(&group, "group", "", "only this group")
	list.Flags().BoolVar(&all, "all", false, "closed and pending alerts too")
	cmd := &cobra.Command{Use: "alerts", Aliases: []string{"alert"}, Short: "Alerts and their rules: list, acknowledge, mute"}
	return parent(cmd, list,
		&cobra.Command{Use: "get ID", Short: "Show an alert with its deliveries and their attempts", Args: needArgs("ID"),
			RunE: showID(a, "alert", (*client.Client).GetAlert, writeAlert)},
		&cobra.Command{Use: "ack ID", Short: "Acknowledge an alert: no more notices until it closes", Args: needArgs("ID"),
			RunE: doneID(a, "alert", (*client.Client).AckAlert, "acknowledged")},
		a.muteCmd("alert", (*client.Client).MuteAlert),
		a.rulesCmd(),
	)
}

// muteCmd silences a what ("alert", "rule") for a while.
func (a *app) muteCmd(what string, mute func(*client.Client, context.Context, int64, apiv1.Mute) error) *cobra.Command {
	var forD time.Duration
	var reason string
	cmd := &cobra.Command{Use: "mute ID --for D [--reason R]", Short: "Silence a " + what + " for a while (--for 0 lifts it)",
		Args: needArgs("ID"),
		RunE: onID(what, func(cmd *cobra.Command, id int64) error {
			if forD < 0 {
				return usagef("--for %s: want a positive duration, or 0 to lift the silence", forD)
			}
			m := apiv1.Mute{Reason: reason}
			if forD > 0 {
				m.Until = time.Now().Add(forD).UTC()
			}
			return a.done(cmd, func(c *client.Client, ctx context.Context) error { return mute(c, ctx, id, m) },
				"%s %d muted until %s", what, id, fmtTime(m.Until))
		}),
	}
	cmd.Flags().DurationVar(&forD, "for", time.Hour, "how long")
	cmd.Flags().StringVar(&reason, "reason", "", "why (shown with the silence)")
	return cmd
}

func (a *app) rulesCmd() *cobra.Command {
	var r apiv1.AlertRule
	var events string
	var window, renotify, sla time.Duration
	create := &cobra.Command{
		Use:   "create --name N (--job ID | --group G) --events E,… --channels ID,… [--threshold N --window D] [--renotify D]",
		Short: "Create a rule: which events of which jobs go to which channels",
		Args:  needArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, e := range strings.Split(events, ",") {
				if e = strings.TrimSpace(e); e != "" {
					r.Events = append(r.Events, e)
				}
			}
			r.Window, r.Renotify, r.SLA = apiv1.Duration(window), apiv1.Duration(renotify), apiv1.Duration(sla)
			return show(a, cmd, func(c *client.Client, ctx context.Context) (*apiv1.AlertRule, error) {
				return c.CreateAlertRule(ctx, r)
			}, detail(ruleKV))
		},
	}
	f := create.Flags()
	f.StringVar(&r.Name, "name", "", "rule name")
	f.Int64Var(&r.JobID, "job", 0, "the job it covers")
	f.StringVar(&r.Group, "group", "", "the group whose jobs it covers (neither --job nor --group: every job, admins)")
	f.StringVar(&events, "events", "failed,recovered", "failed, timed_out, lost, retries_exhausted, recovered, succeeded, missed, late_start, running_long")
	f.Int64SliceVar(&r.Channels, "channels", nil, "channel ids")
	f.IntVar(&r.Threshold, "threshold", 1, "events within --window that open the alert")
	f.DurationVar(&window, "window", 0, "the threshold's window (0: since the alert began)")
	f.DurationVar(&renotify, "renotify", 0, "tell an open alert again this often (0: never)")
	f.DurationVar(&sla, "sla", 0, "for late_start and running_long: how late a start or how long a run is tolerated")
	f.IntVar(&r.PauseAfter, "pause-after", 0, "disable the job after this many consecutive failures (0: never)")
	cmd := &cobra.Command{Use: "rules", Aliases: []string{"rule"}, Short: "Alert rules: list, create, mute, delete"}
	return parent(cmd,
		&cobra.Command{Use: "list", Short: "List the rules you may see", Args: needArgs(),
			RunE: func(cmd *cobra.Command, _ []string) error {
				return show(a, cmd, (*client.Client).ListAlertRules, writeRules)
			}},
		create,
		a.muteCmd("rule", (*client.Client).MuteAlertRule),
		&cobra.Command{Use: "delete ID", Short: "Delete a rule and its alerts", Args: needArgs("ID"),
			RunE: doneID(a, "rule", (*client.Client).DeleteAlertRule, "deleted")},
	)
}

func ruleScope(r *apiv1.AlertRule) string {
	switch {
	case r.JobID != 0:
		return fmt.Sprintf("job %d", r.JobID)
	case r.Group != "":
		return "group " + r.Group
	}
	return "every job"
}

func writeRules(w io.Writer, rs []apiv1.AlertRule) error {
	t := newTable(w, "ID", "NAME", "COVERS", "EVENTS", "THRESHOLD", "RENOTIFY", "CHANNELS", "MUTED UNTIL")
	for _, r := range rs {
		t.row(strconv.FormatInt(r.ID, 10), r.Name, ruleScope(&r), strings.Join(r.Events, ","),
			fmt.Sprintf("%d in %s", max(r.Threshold, 1), time.Duration(r.Window)), time.Duration(r.Renotify).String(),
			fmt.Sprint(r.Channels), fmtTimePtr(r.MutedUntil))
	}
	return t.flush()
}

func ruleKV(r *apiv1.AlertRule) *kv {
	k := &kv{}
	k.add("id", strconv.FormatInt(r.ID, 10))
	k.add("name", r.Name)
	k.add("covers", ruleScope(r))
	k.add("events", strings.Join(r.Events, ","))
	k.add("threshold", fmt.Sprintf("%d in %s", max(r.Threshold, 1), time.Duration(r.Window)))
	k.add("renotify", time.Duration(r.Renotify).String())
	k.add("channels", fmt.Sprint(r.Channels))
	if r.PauseAfter > 0 {
		k.add("pause after", strconv.Itoa(r.PauseAfter))
	}
	return k
}

func writeAlerts(w io.Writer, as []apiv1.Alert) error {
	t := newTable(w, "ID", "STATE", "RULE", "JOB", "GROUP", "COUNT", "LAST", "LAST EVENT", "ACKED", "MUTED UNTIL")
	for _, al := range as {
		t.row(strconv.FormatInt(al.ID, 10), al.State, al.Rule, strconv.FormatInt(al.JobID, 10), al.Group,
			strconv.Itoa(al.Count), fmtTime(al.LastAt), al.LastEvent, orDash(al.AckedBy), fmtTimePtr(al.MutedUntil))
	}
	return t.flush()
}

func writeAlert(w io.Writer, al *apiv1.Alert) error {
	k := &kv{}
	k.add("id", strconv.FormatInt(al.ID, 10))
	k.add("state", al.State)
	k.add("rule", fmt.Sprintf("%s (%d)", al.Rule, al.RuleID))
	k.add("job", fmt.Sprintf("%d (group %s)", al.JobID, al.Group))
	k.add("count", fmt.Sprintf("%d since %s", al.Count, fmtTime(al.FirstAt)))
	k.add("last", fmt.Sprintf("%s run %d %s: %s", al.LastEvent, al.LastRunID, al.LastStatus, al.LastMessage))
	if al.AckedBy != "" {
		k.add("acknowledged", al.AckedBy+" "+fmtTimePtr(al.AckedAt))
	}
	if al.MutedUntil != nil {
		k.add("muted", fmt.Sprintf("until %s by %s: %s", fmtTimePtr(al.MutedUntil), al.MutedBy, al.MuteReason))
	}
	if err := k.write(w); err != nil {
		return err
	}
	if len(al.Deliveries) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	t := newTable(w, "DELIVERY", "CHANNEL", "EVENT", "STATE", "ATTEMPT", "AT", "RESULT", "CODE", "ERROR")
	for _, d := range al.Deliveries {
		if len(d.Attempts) == 0 {
			t.row(strconv.FormatInt(d.ID, 10), strconv.FormatInt(d.ChannelID, 10), d.Event, d.State, "-", "-", "-", "-", "-")
		}
		for _, at := range d.Attempts {
			t.row(strconv.FormatInt(d.ID, 10), strconv.FormatInt(d.ChannelID, 10), d.Event, d.State, strconv.Itoa(at.N),
				fmtTime(at.At), at.Result, strconv.Itoa(at.Code), orDash(at.Error))
		}
	}
	return t.flush()
}
