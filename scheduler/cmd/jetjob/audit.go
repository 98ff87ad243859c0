package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
)

// The shapes of audit filters: a target is "<kind>:<id>" (job:12,
// user:alice), an action "<kind>.<verb>" (job.update). The server filters
// by equality, so a value of another shape would silently match nothing.
var (
	auditTarget = regexp.MustCompile(`^[a-z]+:\S+$`)
	auditAction = regexp.MustCompile(`^[a-z]+\.[a-z_]+$`)
)

// changesWidth is how many characters of a revision's changes a table shows.
const changesWidth = 80

func (a *app) auditCmd() *cobra.Command {
	var (
		since, until, after string
		opts                client.AuditOptions
	)
	cmd := &cobra.Command{
		Use:   "audit [--actor A] [--target T] [--action X] [--since T] [--until T] [--limit N] [--after CURSOR]",
		Short: "Read the audit log: who changed what, when and from where (admin)",
		Long: `Read the audit log, newest first: every change (jobs, runs killed, groups,
users, grants, keys, logins) with who made it, the credential used and the
client address. Filters combine. --since and --until take an RFC 3339 time
or a duration back from now (90m, 12h, 7d); --since is inclusive, --until
exclusive. Pass the printed --after cursor to read the next page; -o json
prints each entry with the documents before and after the change.`,
		Example: `  jetjob audit --since 24h
  jetjob audit --actor alice --action job.update
  jetjob audit --target job:12 -o json`,
		Args: needArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Target != "" && !auditTarget.MatchString(opts.Target) {
				return usagef("--target %q: want <kind>:<id>, e.g. job:12, run:99, group:billing, user:alice, key:7", opts.Target)
			}
			if opts.Action != "" && !auditAction.MatchString(opts.Action) {
				return usagef("--action %q: want <kind>.<verb>, e.g. job.update, user.create, key.revoke, session.login", opts.Action)
			}
			now := time.Now()
			for _, p := range []struct {
				flag, v string
				dst     *time.Time
			}{{"--since", since, &opts.From}, {"--until", until, &opts.To}} {
				if p.v == "" {
					continue
				}
				t, err := pastTime(p.flag, p.v, now)
				if err != nil {
					return err
				}
				*p.dst = t
			}
			if !opts.From.IsZero() && !opts.To.IsZero() && !opts.From.Before(opts.To) {
				return usagef("--since %s is not before --until %s", fmtTime(opts.From), fmtTime(opts.To))
			}
			if err := pageFlags(cmd, opts.Limit, after, &opts.Before); err != nil {
				return err
			}
			return show(a, cmd, func(c *client.Client, ctx context.Context) (*apiv1.AuditList, error) {
				return c.Audit(ctx, opts)
			}, func(w io.Writer, list *apiv1.AuditList) error {
				t := newTable(w, "TIME", "ACTOR", "AUTH", "ACTION", "TARGET", "CLIENT")
				for _, e := range list.Entries {
					t.row(fmtTime(e.At), e.Actor, e.Auth, e.Action, e.Target, e.Client)
				}
				return a.finishPage(t, list.Next, "entries")
			})
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&opts.Actor, "actor", "", "only changes by this user (bootstrap: the JETJOB_API_TOKEN)")
	fs.StringVar(&opts.Target, "target", "", "only changes of this target, e.g. job:12, user:alice")
	fs.StringVar(&opts.Action, "action", "", "only this action, e.g. job.update, key.create")
	fs.StringVar(&since, "since", "", "only changes at or after this time (RFC 3339, or a duration ago: 12h, 7d)")
	fs.StringVar(&until, "until", "", "only changes before this time (RFC 3339, or a duration ago)")
	fs.IntVar(&opts.Limit, "limit", 0, "page size, 1 to 1000 (server default 100 when 0)")
	fs.StringVar(&after, "after", "", "read the page after this cursor (printed with the previous page)")
	return cmd
}

func (a *app) jobsHistoryCmd() *cobra.Command {
	var (
		after string
		opts  client.AuditOptions
	)
	cmd := &cobra.Command{
		Use:   "history ID",
		Short: "Show a job's revisions, newest first: who changed what",
		Long: `Show a job's revisions (create, update, enable, disable, delete), newest
first, with who made each, the version it produced and the fields it changed.
-o json prints the job's documents before and after each revision.`,
		Args: needArgs("ID"),
		RunE: onID("job", func(cmd *cobra.Command, id int64) error {
			if err := pageFlags(cmd, opts.Limit, after, &opts.Before); err != nil {
				return err
			}
			return show(a, cmd, func(c *client.Client, ctx context.Context) (*apiv1.AuditList, error) {
				return c.JobHistory(ctx, id, opts)
			}, func(w io.Writer, list *apiv1.AuditList) error {
				t := newTable(w, "TIME", "ACTOR", "ACTION", "VERSION", "CHANGES")
				for _, e := range list.Entries {
					t.row(fmtTime(e.At), e.Actor, e.Action, revisionVersion(e), truncate(cell(changes(e)), changesWidth))
				}
				return a.finishPage(t, list.Next, "revisions")
			})
		}),
	}
	cmd.Flags().IntVar(&opts.Limit, "limit", 0, "page size, 1 to 1000 (server default 100 when 0)")
	cmd.Flags().StringVar(&after, "after", "", "read the page after this cursor (printed with the previous page)")
	return cmd
}

// pageFlags checks --limit and reads the --after cursor into before.
func pageFlags(cmd *cobra.Command, limit int, after string, before *int64) error {
	if limit < 0 || limit > 1000 {
		return usagef("--limit %d: want 1 to 1000 (0: the server's default)", limit)
	}
	if !cmd.Flags().Changed("after") {
		return nil
	}
	n, err := strconv.ParseInt(after, 10, 64)
	if err != nil || n <= 0 {
		return usagef("invalid --after %q: want the cursor printed with the previous page (a positive integer)", after)
	}
	*before = n
	return nil
}

// finishPage flushes a table of audit entries and announces the next page.
func (a *app) finishPage(t *table, next int64, what string) error {
	if err := t.flush(); err != nil {
		return err
	}
	if next != 0 {
		fmt.Fprintf(a.stderr, "more %s: pass --after %d for the next page\n", what, next)
	}
	return nil
}

// pastTime reads an RFC 3339 time, or a duration back from now ("90m",
// "7d").
func pastTime(flag, s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	d, err := parseDays(s)
	if err != nil || d <= 0 {
		return time.Time{}, usagef("%s %q: want an RFC 3339 time such as 2026-11-22T00:00:00Z, or a positive duration ago such as 90m, 12h or 7d", flag, s)
	}
	return now.Add(-d), nil
}

// parseDays is time.ParseDuration that also takes days, as a leading "Nd"
// ("90d", "1d12h"): a day is 24 hours.
func parseDays(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	days, rest, found := strings.Cut(s, "d")
	if !found {
		return time.ParseDuration(s)
	}
	n, err := strconv.ParseInt(days, 10, 64)
	if err != nil || n < 0 || n > 100*366 {
		return 0, fmt.Errorf("invalid duration %q", s)
	}
	d := time.Duration(n) * 24 * time.Hour
	if rest != "" {
		r, err := time.ParseDuration(rest)
		if err != nil || r < 0 {
			return 0, fmt.Errorf("invalid duration %q", s)
		}
		d += r
	}
	return d, nil
}

// revisionVersion is the job version a revision produced ("-" for a delete).
func revisionVersion(e apiv1.AuditEntry) string {
	var doc struct {
		Version int64 `json:"version"`
	}
	if len(e.After) == 0 || json.Unmarshal(e.After, &doc) != nil || doc.Version == 0 {
		return "-"
	}
	return strconv.FormatInt(doc.Version, 10)
}

// changes lists the fields a revision changed: "field: old → new" for
// short values, the field's name alone for long ones; "created" and
// "deleted" when one side is absent.
func changes(e apiv1.AuditEntry) string {
	switch {
	case len(e.Before) == 0 && len(e.After) == 0:
		return ""
	case len(e.Before) == 0:
		return "created"
	case len(e.After) == 0:
		return "deleted"
	}
	fields, err := e.Changes()
	if err != nil {
		return "?"
	}
	var out []string
	for _, f := range fields {
		old, cur := compact(f.Before), compact(f.After)
		if len(old)+len(cur) <= 40 {
			out = append(out, fmt.Sprintf("%s: %s → %s", f.Field, old, cur))
		} else {
			out = append(out, f.Field)
		}
	}
	return strings.Join(out, "; ")
}

// compact is a JSON value on one line, "-" when absent.
func compact(v json.RawMessage) string {
	if len(v) == 0 {
		return "-"
	}
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return string(v)
	}
	return b.String()
}
