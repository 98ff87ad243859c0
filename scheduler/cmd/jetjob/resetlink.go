package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
)

// usersResetLinkCmd is `users reset-link NAME [--ttl D]` (admin).
func (a *app) usersResetLinkCmd() *cobra.Command {
	var ttl time.Duration
	cmd := &cobra.Command{
		Use:   "reset-link NAME [--ttl 72h]",
		Short: "Issue a one-time link where a user chooses their password (admin)",
		Long: `Print a one-time link to the console page where the user chooses a new
password: for a user made without one (jetjob import xxl-job --users) or who
forgot theirs. It works once, until --ttl has passed (72h by default, at most
720h); a newer link of the user voids it. Hand it over as you would a
password. The scheduler keeps only a hash of it.`,
		Args: needArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if err := userArg(name); err != nil {
				return err
			}
			if ttl < 0 {
				return usagef("--ttl %s: must not be negative", ttl)
			}
			return show(a, cmd, func(c *client.Client, ctx context.Context) (*apiv1.PasswordLink, error) {
				l, err := c.PasswordLink(ctx, name, ttl)
				if err == nil {
					l.Path = strings.TrimSuffix(a.used.API, "/") + l.Path // the whole link, for -o json too
				}
				return l, err
			}, func(w io.Writer, l *apiv1.PasswordLink) error {
				_, err := fmt.Fprintf(w, "%s\nOne-time link for %s, until %s.\n", l.Path, l.User, fmtTime(l.ExpiresAt))
				return err
			})
		},
	}
	cmd.Flags().DurationVar(&ttl, "ttl", 0, "how long the link works (default 72h)")
	return cmd
}
