package main

import (
	"github.com/spf13/cobra"

	"github.com/jetjob/jetjob/internal/config"
)

func migrateCmd() *cobra.Command {
	var (
		dbURL     string
		logFormat string
		set       *config.Set
	)
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply the database migrations embedded in this binary and exit",
		Long: `Apply the database migrations embedded in this binary and exit. Safe to run
from several processes at once (an advisory lock serialises them) and
safe to repeat: applied migrations are skipped.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := loadDB(cmd, set, &dbURL); err != nil {
				return err
			}
			o := options{logFormat: logFormat, logLevel: "info"}
			log, err := o.logger()
			if err != nil {
				return usageError{Err: err}
			}
			pool, err := openPool(cmd.Context(), dbURL)
			if err != nil {
				return err
			}
			defer pool.Close()
			return migrateWithRetry(cmd.Context(), pool, log)
		},
	}
	set = config.New(cmd.Flags())
	set.String(&dbURL, "database-url", "JETJOB_DATABASE_URL", "", "PostgreSQL URL", config.SecretURL())
	set.String(&logFormat, "log-format", "JETJOB_LOG_FORMAT", "console", "json or console")
	return cmd
}
