package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/scheduler"
	"github.com/jetjob/jetjob/scheduler/store"
)

func serveCmd() *cobra.Command {
	var (
		o         options
		dbURL     string
		natsURL   string
		natsCreds string
		migrate   bool
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run a scheduler with its HTTP API",
		Long: `Run a scheduler with its HTTP API. Start as many as you like against the same
PostgreSQL and NATS; they share the work. The API token comes from
JETJOB_API_TOKEN; without it the scheduler refuses to serve the API unless
--insecure-no-auth is given.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dbURL == "" {
				return usageError{errors.New("no database: set --database-url or JETJOB_DATABASE_URL")}
			}
			token := strings.TrimSpace(os.Getenv("JETJOB_API_TOKEN"))
			if token == "" && !o.insecureNoAuth {
				return usageError{errors.New("no API token: set JETJOB_API_TOKEN, or pass --insecure-no-auth to serve the API without authentication")}
			}
			if err := o.validate(); err != nil {
				return usageError{err}
			}
			log, err := o.logger()
			if err != nil {
				return usageError{err}
			}
			defer log.Sync() //nolint:errcheck
			return serve(cmd.Context(), o, dbURL, natsURL, natsCreds, token, migrate, log)
		},
	}
	fs := cmd.Flags()
	o.register(fs, ":8080")
	fs.StringVar(&dbURL, "database-url", env("JETJOB_DATABASE_URL", ""), "PostgreSQL URL (JETJOB_DATABASE_URL)")
	fs.StringVar(&natsURL, "nats-url", env("JETJOB_NATS_URL", "nats://127.0.0.1:4222"), "NATS URL(s), comma separated; user:password@ or token@ in the URL (JETJOB_NATS_URL)")
	fs.StringVar(&natsCreds, "nats-creds", env("JETJOB_NATS_CREDS", ""), "NATS credentials file (JETJOB_NATS_CREDS)")
	fs.BoolVar(&migrate, "migrate", os.Getenv("JETJOB_MIGRATE") == "true", "apply database migrations at start (JETJOB_MIGRATE=true)")
	return cmd
}

func serve(ctx context.Context, o options, dbURL, natsURL, natsCreds, token string, migrate bool, log *zap.Logger) error {
	pool, err := openPool(ctx, dbURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	if migrate {
		if err := migrateWithRetry(ctx, pool, log); err != nil {
			return err
		}
	}
	var extra []nats.Option
	if natsCreds != "" {
		extra = append(extra, nats.UserCredentials(natsCreds))
	}
	nc, err := connectNATS(natsURL, "jetjob-scheduler", log, extra...)
	if err != nil {
		return err
	}
	defer nc.Close()
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", o.listen, err)
	}
	s, err := scheduler.New(o.schedulerConfig(pool, nc, ln, token, log))
	if err != nil {
		ln.Close()
		return err
	}
	log.Info("API listening", zap.String("addr", ln.Addr().String()))
	return s.Run(ctx)
}

// migrateWithRetry waits for PostgreSQL, then applies the migrations.
func migrateWithRetry(ctx context.Context, pool *pgxpool.Pool, log *zap.Logger) error {
	backoff := 200 * time.Millisecond
	for {
		err := pool.Ping(ctx)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		log.Warn("waiting for PostgreSQL", zap.Error(err))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
	applied, err := store.Migrate(ctx, pool)
	if err != nil {
		return err
	}
	log.Info("database migrated", zap.Ints("applied", applied))
	return nil
}
