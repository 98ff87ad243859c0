package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/backoff"
	"github.com/jetjob/jetjob/internal/config"
	"github.com/jetjob/jetjob/internal/gctune"
	"github.com/jetjob/jetjob/internal/natsconn"
	"github.com/jetjob/jetjob/internal/tracing"
	"github.com/jetjob/jetjob/internal/version"
	"github.com/jetjob/jetjob/scheduler"
	"github.com/jetjob/jetjob/scheduler/internal/sso"
	"github.com/jetjob/jetjob/scheduler/internal/store"
	"github.com/jetjob/jetjob/shared/trigsign"
)

func serveCmd() *cobra.Command {
	var (
		o       options
		dbURL   string
		conn    natsconn.Options
		migrate bool
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run a scheduler with its HTTP API",
		Long: `Run a scheduler with its HTTP API. Start as many as you like against the same
PostgreSQL and NATS; they share the work. API callers authenticate with a
user's API key or console session (create the first admin with
'jetjob-scheduler users create-admin'). JETJOB_API_TOKEN, if set, is a
break-glass admin key ("bootstrap"); --insecure-no-auth makes every request
an admin, for local use only.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := loadDB(cmd, o.set, &dbURL); err != nil {
				return err
			}
			// Without JETJOB_API_TOKEN only users' keys and sessions
			// authenticate (create the first admin with 'users create-admin').
			token := strings.TrimSpace(o.apiToken)
			if err := errors.Join(conn.Validate(o.set), o.validate()); err != nil {
				return usageError{Err: err}
			}
			signer, err := o.triggerSigner()
			if err != nil {
				return usageError{Err: err}
			}
			if signer == nil && !o.insecureUnsigned {
				return usageError{Err: fmt.Errorf("no trigger signing key: give %s (or JETJOB_TRIGGER_SIGNING_KEY; "+
					"`jetjob-scheduler trigger-key generate` makes one, docs/operations.md \"Trigger signing\"), "+
					"or publish unsigned triggers on purpose with %s",
					o.set.Name("trigger-signing-key"), o.set.Name("insecure-unsigned-triggers"))}
			}
			log, err := o.logger()
			if err != nil {
				return usageError{Err: err}
			}
			defer log.Sync() //nolint:errcheck
			log.Info("jetjob-scheduler starting", zap.String("version", version.Get().String()),
				zap.Strings("settings", o.set.Values()))
			metricsToken, err := o.metricsToken()
			if err != nil {
				return usageError{Err: err}
			}
			providers, err := o.ssoProviders()
			if err != nil {
				return usageError{Err: err}
			}
			conn.Name = "jetjob-scheduler"
			return serve(cmd.Context(), o, dbURL, conn, token, metricsToken, migrate, signer, providers, log)
		},
	}
	s := config.New(cmd.Flags())
	o.register(s, ":8080", "json")
	s.String(&dbURL, "database-url", "JETJOB_DATABASE_URL", "", "PostgreSQL URL", config.SecretURL())
	conn.Register(s, natsconn.DefaultURL)
	s.Bool(&migrate, "migrate", "JETJOB_MIGRATE", false, "apply database migrations at start")
	cmd.Long += "\n" + envHelp(s)
	return cmd
}

func serve(ctx context.Context, o options, dbURL string, conn natsconn.Options, token, metricsToken string, migrate bool, signer *trigsign.Signer,
	providers *sso.Providers, log *zap.Logger) error {
	stopTracing, err := tracing.Start(ctx, "jetjob-scheduler", log)
	if err != nil {
		return usageError{Err: err} // a bad OTEL_* variable
	}
	defer stopTracing() // after Run: flushes the spans of the stop too
	defer gctune.Start(ctx, log)()
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
	nc, err := natsconn.Connect(conn, log)
	if err != nil {
		return err
	}
	defer nc.Close()
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", o.listen, err)
	}
	mln, err := o.listenMetrics(metricsToken, log)
	if err != nil {
		ln.Close()
		return err
	}
	cfg := o.schedulerConfig(token)
	cfg.MetricsToken = metricsToken
	s, err := scheduler.New(cfg, scheduler.Deps{Pool: pool, NATS: nc, Listener: ln, MetricsListener: mln, Logger: log, TriggerSigner: signer, SSO: providers,
		TriggerPublicKeys: o.spentTriggerKeys()})
	if err != nil {
		closeListeners(ln, mln)
		return err
	}
	log.Info("API listening", zap.String("addr", ln.Addr().String()))
	return s.Run(ctx)
}

// migrateWithRetry waits for PostgreSQL, then applies the migrations.
func migrateWithRetry(ctx context.Context, pool *pgxpool.Pool, log *zap.Logger) error {
	if err := backoff.Retry(ctx, backoff.Policy{
		Backoff: backoff.Backoff{Initial: 200 * time.Millisecond, Max: 5 * time.Second},
		OnRetry: func(_ int, _ time.Duration, err error) { log.Warn("waiting for PostgreSQL", zap.Error(err)) },
	}, pool.Ping); err != nil {
		return err
	}
	applied, err := store.Migrate(ctx, pool)
	if err != nil {
		return err
	}
	log.Info("database migrated", zap.Ints("applied", applied))
	return nil
}
