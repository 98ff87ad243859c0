package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/jetjob/jetjob/internal/config"
	"github.com/jetjob/jetjob/scheduler/internal/alarm"
	"github.com/jetjob/jetjob/shared/wire"
)

// webhookSecretCmd prints a group's alarm webhook secret, for the group's
// receivers: each group's alarms are signed with a key derived from
// JETJOB_WEBHOOK_SECRET (alarm.GroupSecret), so a receiver never holds
// the master key nor another group's.
func webhookSecretCmd() *cobra.Command {
	var (
		master string
		set    *config.Set
	)
	cmd := &cobra.Command{
		Use:   "webhook-secret GROUP",
		Short: "Print the secret a group's alarm webhook receivers verify with",
		Long: `Print the Standard Webhooks secret ("whsec_...") that the alarms of GROUP are
signed with: HMAC-SHA256 of "jetjob-webhook:GROUP" under JETJOB_WEBHOOK_SECRET,
base64-encoded (docs/jobs.md, "Verifying alarm webhooks"). Give it to that
group's receivers only; it verifies none of another group's alarms.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := load(cmd, set); err != nil {
				return err
			}
			if err := wire.CheckName("group", args[0]); err != nil {
				return usageError{Err: err}
			}
			if master == "" {
				return usageError{Err: errors.New("JETJOB_WEBHOOK_SECRET is not set: without it alarms are not signed")}
			}
			secret, err := alarm.GroupSecret(master, args[0])
			if err != nil {
				return usageError{Err: fmt.Errorf("JETJOB_WEBHOOK_SECRET: %w", err)}
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), secret)
			return err
		},
	}
	set = config.New(cmd.Flags())
	set.Env(&master, "JETJOB_WEBHOOK_SECRET", "key that signs alarm webhooks", config.Secret())
	cmd.Long += "\n" + envHelp(set)
	return cmd
}
