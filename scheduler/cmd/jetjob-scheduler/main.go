// Command jetjob-scheduler runs jetjob's scheduling center.
//
//	jetjob-scheduler serve     the scheduler and its HTTP API (production)
//	jetjob-scheduler migrate   apply the database migrations and exit
//	jetjob-scheduler dev       everything in one process, for trying jetjob
//	jetjob-scheduler users create-admin NAME   the first admin user
//	jetjob-scheduler webhook-secret GROUP      the secret GROUP's alarm receivers verify with
//	jetjob-scheduler trigger-key generate --out FILE   a trigger signing key
//
// Every flag can also be set through the JETJOB_* environment variable its
// help names, or in the YAML file --config names; a flag wins over its
// variable, the variable over the file (package internal/config).
package main

import (
	"github.com/spf13/cobra"

	"github.com/jetjob/jetjob/internal/cmdmain"
	"github.com/jetjob/jetjob/internal/version"
)

func main() { cmdmain.Main(rootCmd(), cmdmain.Options{}) }

// usageError is a bad flag or argument (exit status 2).
type usageError = cmdmain.UsageError

func rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "jetjob-scheduler",
		Short:         "jetjob's scheduling center: plans, fires and records jobs",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version.Get().String(),
	}
	root.SetVersionTemplate("jetjob-scheduler {{.Version}}\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{Err: err} })
	root.AddCommand(serveCmd(), migrateCmd(), devCmd(), usersCmd(), webhookSecretCmd(), triggerKeyCmd(), secretsCmd())
	return root
}
