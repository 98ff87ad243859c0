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

func (a *app) keysCmd() *cobra.Command {
	return parent(&cobra.Command{
		Use:     "keys",
		Aliases: []string{"key"},
		Short:   "Create, list and revoke API keys",
		Long: `API keys authenticate scripts and the CLI (--token, JETJOB_API_TOKEN, or the
key "jetjob login" saves). A key acts as its user, with the user's role;
anyone manages their own keys, an admin anyone's (--user).`,
	}, a.keysCreateCmd(), a.keysListCmd(), a.keysRevokeCmd())
}

// expiresAt reads --expires: a duration from now ("90d", "12h") or an RFC
// 3339 time, in the future; "never" (or empty) is no end.
func expiresAt(s string, now time.Time) (*time.Time, error) {
	if s == "" || s == "never" {
		return nil, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		if !t.After(now) {
			return nil, usagef("--expires %s is in the past", s)
		}
		return &t, nil
	}
	d, err := parseDays(s)
	if err != nil || d <= 0 {
		return nil, usagef("--expires %q: want a duration from now such as 90d, 36h or 30m, or an RFC 3339 time", s)
	}
	t := now.Add(d)
	return &t, nil
}

// defaultKeyName names a key made by command on this host.
func defaultKeyName(command string) string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		return "jetjob " + command
	}
	return "jetjob " + command + " on " + host
}

func (a *app) keysCreateCmd() *cobra.Command {
	var user, name, expires string
	cmd := &cobra.Command{
		Use:   "create [--user NAME] [--name N] [--expires 90d]",
		Short: "Create an API key and print its secret, once",
		Long: `Create an API key for yourself, or (admin) for --user. The secret is printed
this once and cannot be read again: store it at once. -o json prints the
key with its secret ("secret"), for scripts.`,
		Example: `  jetjob keys create --name 'nightly export' --expires 90d
  jetjob keys create --user viewer1 --name "viewer1 scripts" -o json`,
		Args: needArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			in := apiv1.KeyCreate{User: user, Name: strings.TrimSpace(name)}
			if user != "" {
				if err := userArg(user); err != nil {
					return err
				}
			}
			if !cmd.Flags().Changed("name") {
				in.Name = defaultKeyName("keys create")
			}
			if in.Name == "" {
				return usagef("--name: must not be empty (say what the key is for)")
			}
			at, err := expiresAt(expires, time.Now())
			if err != nil {
				return err
			}
			in.ExpiresAt = at
			return show(a, cmd, func(c *client.Client, ctx context.Context) (*apiv1.CreatedKey, error) {
				return c.CreateKey(ctx, in)
			}, func(w io.Writer, k *apiv1.CreatedKey) error {
				_, err := fmt.Fprintf(w, `Created API key %d (%s) of user %s, named %q; it %s.

    %s

This is the only time the secret is shown: store it now. Use it with
--token, JETJOB_API_TOKEN, or the header "Authorization: Bearer <secret>".
`, k.ID, k.Prefix, cell(k.User), cell(k.Name), expiry(k.ExpiresAt), k.Secret)
				return err
			})
		},
	}
	cmd.Flags().StringVar(&user, "user", "", "the key's user (default: you; another user needs an admin)")
	cmd.Flags().StringVar(&name, "name", "", `what the key is for (default "jetjob keys create on <host>")`)
	cmd.Flags().StringVar(&expires, "expires", "never", "end the key after this long (90d, 36h) or at an RFC 3339 time, or never")
	return cmd
}

func (a *app) keysListCmd() *cobra.Command {
	var user string
	cmd := &cobra.Command{
		Use:   "list [--user NAME]",
		Short: "List your API keys, or (admin) a user's",
		Args:  needArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if user != "" {
				if err := userArg(user); err != nil {
					return err
				}
			}
			now := time.Now()
			return show(a, cmd, func(c *client.Client, ctx context.Context) (*apiv1.KeyList, error) {
				return c.ListKeys(ctx, user)
			}, func(w io.Writer, list *apiv1.KeyList) error {
				t := newTable(w, "ID", "PREFIX", "NAME", "USER", "STATE", "CREATED", "EXPIRES", "LAST USED")
				for _, k := range list.Keys {
					t.row(strconv.FormatInt(k.ID, 10), k.Prefix, k.Name, k.User, keyState(k, now),
						fmtTime(k.CreatedAt), fmtTimePtr(k.ExpiresAt), fmtTimePtr(k.LastUsedAt))
				}
				return t.flush()
			})
		},
	}
	cmd.Flags().StringVar(&user, "user", "", "the user whose keys to list (default: you)")
	return cmd
}

// expiry says when a key ends, as a clause: "expires <time>" or "never
// expires".
func expiry(at *time.Time) string {
	if at == nil {
		return "never expires"
	}
	return "expires " + fmtTime(*at)
}

// keyState is active, revoked or expired.
func keyState(k apiv1.Key, now time.Time) string {
	switch {
	case k.RevokedAt != nil:
		return "revoked"
	case k.ExpiresAt != nil && !k.ExpiresAt.After(now):
		return "expired"
	}
	return "active"
}

func (a *app) keysRevokeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke an API key: requests with it are refused from then on",
		Args:  needArgs("ID"),
		RunE:  doneID(a, "key", (*client.Client).RevokeKey, "revoked"),
	}
}
