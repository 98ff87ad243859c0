// Command jetjob-scheduler runs jetjob's scheduling center.
//
//	jetjob-scheduler serve     the scheduler and its HTTP API (production)
//	jetjob-scheduler migrate   apply the database migrations and exit
//	jetjob-scheduler dev       everything in one process, for trying jetjob
//
// Every flag can also be set through the JETJOB_* environment variable its
// help names.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := rootCmd().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "jetjob-scheduler:", err)
		var ue usageError
		if errors.As(err, &ue) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// usageError is a bad flag or argument (exit status 2).
type usageError struct{ error }

func rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "jetjob-scheduler",
		Short:         "jetjob's scheduling center: plans, fires and records jobs",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		if len(envErrs) > 0 {
			return usageError{errors.Join(envErrs...)}
		}
		return nil
	}
	root.AddCommand(serveCmd(), migrateCmd(), devCmd())
	return root
}
