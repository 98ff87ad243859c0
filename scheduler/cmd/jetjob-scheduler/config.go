package main

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/config"
	"github.com/jetjob/jetjob/internal/egress"
	"github.com/jetjob/jetjob/internal/logging"
	"github.com/jetjob/jetjob/internal/scrape"
	"github.com/jetjob/jetjob/scheduler"
	"github.com/jetjob/jetjob/scheduler/internal/alarm"
	"github.com/jetjob/jetjob/scheduler/internal/alerts"
	"github.com/jetjob/jetjob/scheduler/internal/httplimit"
	"github.com/jetjob/jetjob/scheduler/internal/planner"
	"github.com/jetjob/jetjob/scheduler/internal/refs"
	"github.com/jetjob/jetjob/scheduler/internal/retention"
	jobsecrets "github.com/jetjob/jetjob/scheduler/internal/secrets"
	"github.com/jetjob/jetjob/scheduler/internal/sso"
	"github.com/jetjob/jetjob/scheduler/internal/store"
	"github.com/jetjob/jetjob/shared/trigsign"
	"github.com/jetjob/jetjob/shared/wire"
)

// options are the settings shared by serve and dev. Each flag has a JETJOB_*
// variable and a key of the --config file (package internal/config); the
// secrets below have only a variable.
type options struct {
	listen           string
	metricsListen    string
	metricsTokenFile string
	httpBodyTimeout  time.Duration
	httpMaxAnonymous int
	insecureNoAuth   bool
	shardCount       int
	schedulerID      string
	leaseTTL         time.Duration
	interval         time.Duration
	window           time.Duration
	maxLag           time.Duration
	misfireThreshold time.Duration
	maxCatchup       int
	maxChainRuns     int
	scriptVersions   int
	triggerBatch     int
	replicas         int
	dupWindow        time.Duration
	logRetention     time.Duration
	runRetention     time.Duration
	logFormat        string
	logLevel         string
	smtpHost         string
	smtpPort         int
	smtpUser         string
	smtpFrom         string
	smtpStartTLS     bool
	consoleURL       string
	egressAllow      string
	ssoConfig        string
	alertInterval    time.Duration
	alertAttempts    int
	alertBackoff     time.Duration
	alertParallel    int

	apiToken      string
	smtpPassword  string
	webhookSecret string

	triggerKeyFile    string
	secretsKeyFile    string
	secretsKey        string
	triggerKey        string
	triggerPublicKeys string
	insecureUnsigned  bool

	set *config.Set
}

// register binds the shared settings on s; listen and log format defaults
// differ between serve (production) and dev (a terminal).
func (o *options) register(s *config.Set, defListen, defLogFormat string) {
	o.set = s
	s.String(&o.listen, "listen", "JETJOB_LISTEN", defListen, "HTTP API address")
	s.String(&o.metricsListen, "metrics-listen", "JETJOB_METRICS_LISTEN", DefaultMetricsListen,
		"address of /metrics alone (host:port), loopback by default: metrics name every group and handler; empty (--metrics-listen=) turns it off")
	s.String(&o.metricsTokenFile, "metrics-token-file", "JETJOB_METRICS_TOKEN_FILE", "",
		"file holding the scrape token: /metrics then answers only \"Authorization: Bearer <token>\", on the metrics listener and on --listen (which serves no /metrics without it)")
	s.Duration(&o.httpBodyTimeout, "http-body-timeout", "JETJOB_HTTP_BODY_TIMEOUT", httplimit.DefaultBodyTimeout,
		"how long a client may take to send a request's body; a slower one is answered 408 and disconnected")
	s.Int(&o.httpMaxAnonymous, "http-max-anonymous", "JETJOB_HTTP_MAX_ANONYMOUS", httplimit.DefaultMaxAnonymous,
		"requests with a body and without valid credentials (logins, forged keys) served at once; more answer 503")
	s.Bool(&o.insecureNoAuth, "insecure-no-auth", "", false, "every API request is an admin, unauthenticated (local use only, never in production)")
	s.Int(&o.shardCount, "shard-count", "JETJOB_SHARD_COUNT", 0, "shards of a new cluster, default 64; fixed once the cluster exists")
	s.String(&o.schedulerID, "scheduler-id", "JETJOB_SCHEDULER_ID", "", "this instance's id in shard leases, default host-pid-random")
	s.Duration(&o.leaseTTL, "lease-ttl", "JETJOB_LEASE_TTL", 0, "shard lease TTL: a dead scheduler's shards move within it, default 10s")
	s.Duration(&o.interval, "planning-interval", "JETJOB_PLANNING_INTERVAL", 0, "pause between planning passes, default 1s")
	s.Duration(&o.window, "planning-window", "JETJOB_PLANNING_WINDOW", 0, "how far ahead fires are planned, default 5s")
	s.Duration(&o.maxLag, "planning-max-lag", "JETJOB_PLANNING_MAX_LAG", 0, "how far dispatch or the results applier may fall behind before planning waits for them, default 1s; from a quarter of it on, planning looks less far ahead; a worker group twice as far behind has its skip and fire_once jobs left out")
	s.Duration(&o.misfireThreshold, "misfire-threshold", "JETJOB_MISFIRE_THRESHOLD", 0, "how late a fire may be before its misfire policy applies, default 5s")
	s.Int(&o.maxCatchup, "max-catchup", "JETJOB_MAX_CATCHUP", 0, "missed fires handled per job and pass, default 100")
	s.Int(&o.scriptVersions, "script-versions", "JETJOB_SCRIPT_VERSIONS", store.DefaultScriptVersions, "versions of each script job's script kept (1 to 10000); saving one prunes the older")
	s.Int(&o.maxChainRuns, "max-chain-runs", "JETJOB_MAX_CHAIN_RUNS", 0, fmt.Sprintf("runs one fire may cause through child jobs, 1 to %d, default %d: longer or wider links are refused, and no child runs past it", refs.MaxRunsLimit, refs.DefaultMaxRuns))
	s.Int(&o.triggerBatch, "trigger-batch", "JETJOB_TRIGGER_BATCH", 0, fmt.Sprintf("runs of a group due at the same instant that share one trigger message, 1 to %d, default %d; 1: every run alone (always while tracing is on)", wire.MaxBatchRuns, planner.DefaultTriggerBatch))
	s.Int(&o.replicas, "stream-replicas", "JETJOB_STREAM_REPLICAS", 0, "JetStream replicas, 1 or 3, default 1")
	s.Duration(&o.dupWindow, "duplicate-window", "JETJOB_DUPLICATE_WINDOW", 0, "JetStream duplicate window for triggers, default 2m")
	s.String(&o.smtpHost, "smtp-host", "JETJOB_SMTP_HOST", "", "SMTP server for alarm emails; empty disables email")
	s.Int(&o.smtpPort, "smtp-port", "JETJOB_SMTP_PORT", 587, "SMTP port")
	s.String(&o.smtpUser, "smtp-user", "JETJOB_SMTP_USER", "", "SMTP user; the password comes from JETJOB_SMTP_PASSWORD")
	s.String(&o.smtpFrom, "smtp-from", "JETJOB_SMTP_FROM", "", "sender address of alarm emails, default jetjob@<smtp-host>")
	s.Bool(&o.smtpStartTLS, "smtp-starttls", "JETJOB_SMTP_STARTTLS", true, "use STARTTLS")
	s.String(&o.consoleURL, "console-url", "JETJOB_CONSOLE_URL", "", "base URL for links in alarms")
	s.String(&o.egressAllow, "egress-allow", "JETJOB_EGRESS_ALLOW", "", "comma-separated internal targets alarm webhooks may reach: "+
		`CIDRs, addresses with an optional port, exact host names with an optional port ("10.20.0.0/16,hooks.internal:8443"); `+
		"by default only public addresses, never loopback, private, link-local or metadata ones, nor the scheduler's own listeners")
	s.String(&o.ssoConfig, "sso-config", "JETJOB_SSO_CONFIG", "",
		"YAML file of the identity providers users may sign in through (OIDC, LDAP) and the mapping of their groups to roles and grants "+
			"(docs/sso.md); client secrets and the LDAP bind password come from files it names or JETJOB_SSO_* variables")
	s.Duration(&o.alertInterval, "alert-interval", "JETJOB_ALERT_INTERVAL", 0, "pause between the alert engine's rounds (outbox, SLA sweep, due deliveries), default 1s")
	s.Int(&o.alertAttempts, "alert-attempts", "JETJOB_ALERT_ATTEMPTS", 0, "attempts per alert delivery before it is recorded failed, default 5")
	s.Duration(&o.alertBackoff, "alert-retry-backoff", "JETJOB_ALERT_RETRY_BACKOFF", 0, "wait before an alert delivery's first retry, doubled each time up to 10m (a receiver's Retry-After when longer), default 5s")
	s.Int(&o.alertParallel, "alert-parallel", "JETJOB_ALERT_PARALLEL", 0, "alert deliveries sent at once, default 8")
	s.Duration(&o.logRetention, "log-retention", "JETJOB_LOG_RETENTION", 0, "how long run log lines are kept in JETJOB_LOGS, default 720h")
	s.Duration(&o.runRetention, "run-retention", "JETJOB_RUN_RETENTION", retention.DefaultRetention, "how long runs are kept in job_runs; older days are dropped once rolled up into the daily report, which is kept")
	s.String(&o.logFormat, "log-format", "JETJOB_LOG_FORMAT", defLogFormat, "json or console")
	s.String(&o.logLevel, "log-level", "JETJOB_LOG_LEVEL", "info", "debug, info, warn or error")

	s.String(&o.triggerKeyFile, "trigger-signing-key", "JETJOB_TRIGGER_SIGNING_KEY_FILE", "",
		"file of the Ed25519 private key that signs triggers (PEM, or base64 of its seed; `jetjob-scheduler trigger-key generate` makes one); "+
			"workers run only triggers signed by a key they accept")
	s.String(&o.triggerPublicKeys, "trigger-public-keys", "JETJOB_TRIGGER_PUBLIC_KEYS", "",
		"more trigger public keys (base64 or PEM, comma-separated) whose triggers this scheduler believes when they come back spent "+
			"and ends their runs LOST, besides its signing key's own: the previous key while it is rotated (the workers' list will do)")
	s.Bool(&o.insecureUnsigned, "insecure-unsigned-triggers", "JETJOB_INSECURE_UNSIGNED_TRIGGERS", false,
		"publish triggers unsigned when no signing key is given: only workers that accept unsigned triggers run them")

	s.Env(&o.apiToken, "JETJOB_API_TOKEN", "break-glass bootstrap admin key of the API (optional: users have their own keys)", config.Secret())
	s.Env(&o.triggerKey, "JETJOB_TRIGGER_SIGNING_KEY", "the trigger signing key itself (PEM, or base64 of its seed), instead of --trigger-signing-key's file", config.Secret())
	s.Env(&o.smtpPassword, "JETJOB_SMTP_PASSWORD", "SMTP password of --smtp-user", config.Secret())
	s.Env(&o.webhookSecret, "JETJOB_WEBHOOK_SECRET", "key that signs alarm webhooks", config.Secret())
	registerSecretsKey(s, &o.secretsKey, &o.secretsKeyFile)
}

// registerSecretsKey adds the settings of the keyring jobs' secrets are
// encrypted with: the key itself from the environment only (a flag's
// value is in the process list), or a file.
func registerSecretsKey(s *config.Set, key, file *string) {
	s.String(file, "secrets-key-file", "JETJOB_SECRETS_KEY_FILE", "",
		"file holding the keyring of jobs' secrets: base64 of 32 random bytes, or id:base64,... with the primary first (docs/jobs.md, \"Secrets\"); the same on every scheduler")
	s.Env(key, "JETJOB_SECRETS_KEY", "the keyring of jobs' secrets itself, instead of --secrets-key-file's file", config.Secret())
}

// keyring reads the secrets keyring (empty when none is given).
func (o *options) keyring() (jobsecrets.Keyring, error) {
	return jobsecrets.LoadKeyring(o.secretsKey, o.secretsKeyFile)
}

// envHelp is the help's paragraph on the settings that only the
// environment gives.
func envHelp(s *config.Set) string {
	return "\nSecrets, from the environment only (never shown):\n" + s.EnvUsage()
}

// load applies the environment and the config file; a key of the file may
// name a flag of any of the binary's commands, so that one file serves
// serve, migrate and dev.
func load(cmd *cobra.Command, s *config.Set) error {
	var names []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(cmd.Root())
	if err := s.Load(os.LookupEnv, names...); err != nil {
		return usageError{Err: err}
	}
	return nil
}

// loadDB is load for a command that works on the database: it also
// refuses a missing --database-url.
func loadDB(cmd *cobra.Command, s *config.Set, dbURL *string) error {
	if err := load(cmd, s); err != nil {
		return err
	}
	if *dbURL == "" {
		return usageError{Err: errors.New("no database: set --database-url or JETJOB_DATABASE_URL")}
	}
	return nil
}

func (o *options) logger() (*zap.Logger, error) { return logging.New(o.logFormat, o.logLevel) }

// validate checks the flags that have no safe reading when wrong.
func (o *options) validate() error {
	var errs []error
	if o.runRetention <= 0 {
		// 0 would not mean "keep forever" but "drop every finished day":
		// refused rather than guessed.
		errs = append(errs, o.set.Errorf("run-retention", "%s: want a positive duration such as 720h (30 days)", o.runRetention))
	}
	if o.scriptVersions < 1 || o.scriptVersions > 10000 {
		errs = append(errs, o.set.Errorf("script-versions", "%d: want 1 to 10000", o.scriptVersions))
	}
	if err := refs.ValidateMaxRuns(o.maxChainRuns); err != nil {
		errs = append(errs, o.set.Errorf("max-chain-runs", "%d: want 1 to %d (0: the default, %d)", o.maxChainRuns, refs.MaxRunsLimit, refs.DefaultMaxRuns))
	}
	if err := (egress.Config{Allow: egress.ParseList(o.egressAllow)}).Validate(); err != nil {
		errs = append(errs, o.set.Errorf("egress-allow", "%v", err))
	}
	if _, err := trigsign.ParsePublicKeys(o.triggerPublicKeys); err != nil {
		errs = append(errs, o.set.Errorf("trigger-public-keys", "%v", err))
	}
	if _, err := o.keyring(); err != nil {
		errs = append(errs, o.set.Errorf("secrets-key-file", "%v", err))
	}
	if o.httpBodyTimeout <= 0 {
		errs = append(errs, o.set.Errorf("http-body-timeout", "%s: want a positive duration such as 30s", o.httpBodyTimeout))
	}
	if o.httpMaxAnonymous <= 0 {
		errs = append(errs, o.set.Errorf("http-max-anonymous", "%d: want a positive number", o.httpMaxAnonymous))
	}
	if o.triggerBatch < 0 || o.triggerBatch > wire.MaxBatchRuns {
		// Workers refuse a message of more runs than wire.MaxBatchRuns.
		errs = append(errs, o.set.Errorf("trigger-batch", "%d: want 1 to %d (1: every run alone; 0: the default, %d)",
			o.triggerBatch, wire.MaxBatchRuns, planner.DefaultTriggerBatch))
	}
	return errors.Join(errs...)
}

// DefaultMetricsListen is --metrics-listen's default: the loopback
// interface, so that metrics (which name every group and handler) are not
// readable from the network unless an operator publishes them, with a
// scrape token or behind a fence of their own.
const DefaultMetricsListen = "127.0.0.1:9464"

// metricsToken reads --metrics-token-file; "" when none is given.
func (o *options) metricsToken() (string, error) {
	if o.metricsTokenFile == "" {
		return "", nil
	}
	tok, err := scrape.ReadTokenFile(o.metricsTokenFile)
	if err != nil {
		return "", o.set.Errorf("metrics-token-file", "%v", err)
	}
	return tok, nil
}

// listenMetrics opens --metrics-listen (nil when it is off) and warns when
// it serves metrics beyond the loopback interface without a token.
func (o *options) listenMetrics(token string, log *zap.Logger) (net.Listener, error) {
	if o.metricsListen == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", o.metricsListen)
	if err != nil {
		return nil, fmt.Errorf("--metrics-listen %s: %w", o.metricsListen, err)
	}
	log.Info("metrics listening", zap.String("addr", ln.Addr().String()), zap.Bool("token", token != ""))
	if w := scrape.Warning(o.metricsListen, token); w != "" {
		log.Warn(w)
	}
	return ln, nil
}

// closeListeners closes what a start that failed leaves open: the API's
// listener and the metrics one, if any.
func closeListeners(ln, mln net.Listener) {
	ln.Close()
	if mln != nil {
		mln.Close()
	}
}

// triggerSigner is the signer of the key --trigger-signing-key's file or
// JETJOB_TRIGGER_SIGNING_KEY holds (not both); nil when neither is given.
func (o *options) triggerSigner() (*trigsign.Signer, error) {
	var priv ed25519.PrivateKey
	var err error
	switch {
	case o.triggerKeyFile != "" && o.triggerKey != "":
		return nil, fmt.Errorf("%s and JETJOB_TRIGGER_SIGNING_KEY: give the trigger signing key once", o.set.Name("trigger-signing-key"))
	case o.triggerKeyFile != "":
		if priv, err = trigsign.LoadPrivateKeyFile(o.triggerKeyFile); err != nil {
			return nil, o.set.Errorf("trigger-signing-key", "%v", err)
		}
	case o.triggerKey != "":
		if priv, err = trigsign.ParsePrivateKey([]byte(o.triggerKey)); err != nil {
			return nil, fmt.Errorf("JETJOB_TRIGGER_SIGNING_KEY: %w", err)
		}
	default:
		return nil, nil
	}
	return trigsign.NewSigner(priv)
}

// ssoProviders reads --sso-config; nil when none is given.
func (o *options) ssoProviders() (*sso.Providers, error) {
	if o.ssoConfig == "" {
		return nil, nil
	}
	cfg, err := sso.LoadFile(o.ssoConfig, os.LookupEnv)
	if err != nil {
		return nil, o.set.Errorf("sso-config", "%v", err)
	}
	return sso.New(cfg)
}

// spentTriggerKeys are the keys of --trigger-public-keys (validated).
func (o *options) spentTriggerKeys() []ed25519.PublicKey {
	keys, _ := trigsign.ParsePublicKeys(o.triggerPublicKeys)
	return keys
}

// schedulerConfig builds the scheduler's config from the flags and the
// bootstrap API token (the scrape token is the caller's to add).
func (o *options) schedulerConfig(token string) scheduler.Config {
	c := scheduler.Config{APIToken: token, InsecureNoAuth: o.insecureNoAuth, ShardCount: o.shardCount, MaxChainRuns: o.maxChainRuns, ScriptVersions: o.scriptVersions}
	c.HTTP.BodyTimeout = o.httpBodyTimeout
	c.HTTP.MaxAnonymous = o.httpMaxAnonymous
	c.Lease.ID = o.schedulerID
	c.Lease.TTL = o.leaseTTL
	c.Planner.Interval = o.interval
	c.Planner.Window = o.window
	c.Planner.MaxLag = o.maxLag
	c.Planner.MisfireThreshold = o.misfireThreshold
	c.Planner.MaxCatchup = o.maxCatchup
	c.Planner.TriggerBatch = o.triggerBatch
	c.Alarm.SMTP = alarm.SMTP{Host: o.smtpHost, Port: o.smtpPort, User: o.smtpUser,
		Password: o.smtpPassword, From: o.smtpFrom, StartTLS: o.smtpStartTLS}
	c.Alarm.WebhookSecret = o.webhookSecret
	c.Secrets, _ = o.keyring() // checked by validate
	c.Alarm.ConsoleURL = o.consoleURL
	c.Egress.Allow = egress.ParseList(o.egressAllow)
	c.Alerts = alerts.Config{Interval: o.alertInterval, Attempts: o.alertAttempts, Backoff: o.alertBackoff, Parallel: o.alertParallel}
	c.Streams.Replicas = o.replicas
	c.Streams.DuplicateWindow = o.dupWindow
	c.Streams.LogMaxAge = o.logRetention
	c.Retention.Retention = o.runRetention
	return c
}

// openPool configures a pool that stays warm: the first query on a fresh
// connection is slow, and planning must not pay that.
func openPool(ctx context.Context, url string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx's message redacts the password, but a URL it cannot parse
		// may not be redactable: name the setting instead.
		return nil, errors.New("--database-url / JETJOB_DATABASE_URL: not a valid PostgreSQL URL or connection string")
	}
	cfg.MinConns = 4
	if cfg.MaxConns < 16 {
		cfg.MaxConns = 16
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("database: %w", err)
	}
	return pool, nil
}
