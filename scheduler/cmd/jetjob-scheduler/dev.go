package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"syscall"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/config"
	"github.com/jetjob/jetjob/internal/gctune"
	"github.com/jetjob/jetjob/internal/localpg"
	"github.com/jetjob/jetjob/internal/natsconn"
	"github.com/jetjob/jetjob/internal/natsembed"
	"github.com/jetjob/jetjob/internal/tracing"
	"github.com/jetjob/jetjob/scheduler"
	"github.com/jetjob/jetjob/scheduler/client"
	jobsecrets "github.com/jetjob/jetjob/scheduler/internal/secrets"
	"github.com/jetjob/jetjob/shared/trigsign"
	"github.com/jetjob/jetjob/worker"
)

func devCmd() *cobra.Command {
	var (
		o        options
		dataDir  string
		natsPort int
		noDemo   bool
	)
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run a whole jetjob in one process: NATS, PostgreSQL, scheduler, worker, demo jobs",
		Long: `Run a whole jetjob in one process, for trying it out: an embedded NATS server
with JetStream, a throwaway PostgreSQL started from this machine's server
binaries (removed on exit), the scheduler with its HTTP API, and a worker of
group "demo" with demo handlers and two demo jobs. It creates the admin user
"admin" with a random password, which it prints, and writes the API address
and an admin API key to the CLI's config, so that 'jetjob' works in another
terminal with no flags. Ctrl-C stops everything.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := load(cmd, o.set); err != nil {
				return err
			}
			if err := o.validate(); err != nil {
				return usageError{Err: err}
			}
			log, err := o.logger()
			if err != nil {
				return usageError{Err: err}
			}
			defer log.Sync() //nolint:errcheck
			metricsToken, err := o.metricsToken()
			if err != nil {
				return usageError{Err: err}
			}
			return dev(cmd.Context(), o, metricsToken, dataDir, natsPort, noDemo, log)
		},
	}
	s := config.New(cmd.Flags())
	o.register(s, "127.0.0.1:8080", "console")
	s.String(&dataDir, "data-dir", "", "", "directory for NATS JetStream data (default: a temporary directory removed on exit)")
	s.Int(&natsPort, "nats-port", "", 0, "port of the embedded NATS server (default: a free port)")
	s.Bool(&noDemo, "no-demo", "", false, "do not create the demo group, jobs and worker")
	cmd.Long += "\n" + envHelp(s)
	return cmd
}

func dev(ctx context.Context, o options, metricsToken, dataDir string, natsPort int, noDemo bool, log *zap.Logger) error {
	stopTracing, err := tracing.Start(ctx, "jetjob-scheduler", log) // the demo worker's spans too
	if err != nil {
		return usageError{Err: err} // a bad OTEL_* variable
	}
	defer stopTracing()
	defer gctune.Start(ctx, log)()
	pg, err := localpg.Start(ctx, localpg.Options{Fast: true, Logger: log.Named("postgres")})
	if err != nil {
		return err
	}
	defer pg.Close()
	if err := pg.CreateDatabase(ctx, "jetjob", ""); err != nil {
		return err
	}
	pool, err := openPool(ctx, pg.URL("jetjob"))
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := migrateWithRetry(ctx, pool, log); err != nil {
		return err
	}

	if dataDir == "" {
		tmp, err := os.MkdirTemp("", "jetjob-dev-nats-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dataDir = tmp
	}
	ns, err := natsembed.Start(natsembed.Options{StoreDir: dataDir, Port: natsPort})
	if err != nil {
		return err
	}
	defer ns.Shutdown()
	nc, err := natsconn.Connect(natsconn.Options{URL: ns.ClientURL(), Name: "jetjob-scheduler-dev"}, log)
	if err != nil {
		return err
	}
	defer nc.Close()

	// dev makes up an admin and a password to log in with (printed: that
	// is how one tries the console), and an admin API key for the CLI
	// (written to its config). JETJOB_API_TOKEN, if set, stays a bootstrap
	// key and is never shown: it is a secret like any other.
	token := o.apiToken
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		return err
	}
	adminName, adminPassword := "admin", hex.EncodeToString(b)
	if err := createAdmin(ctx, pool, adminName, "jetjob dev admin", adminPassword); err != nil {
		return err
	}
	cliKey, err := createAdminKey(ctx, pool, adminName, "jetjob dev CLI")
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.listen)
	moved := "" // the banner says when the console is not where it was asked
	if errors.Is(err, syscall.EADDRINUSE) {
		log.Warn("address in use; picking a free port", zap.String("addr", o.listen))
		moved = fmt.Sprintf("  (%s was taken, so a free port was picked: pass --listen 127.0.0.1:PORT to choose one)\n", o.listen)
		ln, err = net.Listen("tcp", "127.0.0.1:0")
	}
	if err != nil {
		return fmt.Errorf("listen on %s: %w", o.listen, err)
	}
	mln, err := o.listenMetrics(metricsToken, log)
	if errors.Is(err, syscall.EADDRINUSE) {
		// As the API: a second dev (or another exporter) on the port
		// moves to a free one rather than failing.
		log.Warn("metrics address in use; picking a free port", zap.String("addr", o.metricsListen))
		o.metricsListen = "127.0.0.1:0"
		mln, err = o.listenMetrics(metricsToken, log)
	}
	if err != nil {
		ln.Close()
		return err
	}
	// dev signs its triggers like any scheduler: with the key given, or
	// one made up now. Its own worker accepts it; other workers pointed at
	// dev's NATS need the public key it prints.
	signer, keys, err := devTriggerKeys(o)
	if err != nil {
		closeListeners(ln, mln)
		return usageError{Err: err}
	}
	o.insecureNoAuth = false
	providers, err := o.ssoProviders()
	if err != nil {
		closeListeners(ln, mln)
		return usageError{Err: err}
	}
	cfg := o.schedulerConfig(token)
	if !cfg.Secrets.Configured() {
		// dev is a demo: a throwaway keyring, so that secrets work at
		// once; they do not open after a restart with another one.
		cfg.Secrets, _ = jobsecrets.ParseKeyring("dev:" + jobsecrets.GenerateKey())
		log.Info("dev: jobs' secrets are encrypted with a throwaway key generated for this process (secrets stored now do not open after a restart; set JETJOB_SECRETS_KEY to keep them)")
	}
	cfg.MetricsToken = metricsToken
	cfg.InsecureCookies = true // dev serves plain HTTP on a loopback address
	// Dev's own PostgreSQL and NATS are this process's listeners too: no
	// alarm webhook reaches them, even with loopback allowed
	// (--egress-allow 127.0.0.1) to try webhooks against a local receiver.
	loopback := netip.MustParseAddr("127.0.0.1")
	cfg.Egress.Self = append(cfg.Egress.Self,
		netip.AddrPortFrom(loopback, uint16(pg.Port())), netip.AddrPortFrom(loopback, uint16(ns.Port())))
	s, err := scheduler.New(cfg, scheduler.Deps{Pool: pool, NATS: nc, Listener: ln, MetricsListener: mln, Logger: log, TriggerSigner: signer, SSO: providers,
		TriggerPublicKeys: o.spentTriggerKeys()})
	if err != nil {
		closeListeners(ln, mln)
		return err
	}
	metricsURL := "(off: --metrics-listen is empty)"
	if mln != nil {
		metricsURL = "http://" + mln.Addr().String() + "/metrics"
	}

	apiURL := "http://" + ln.Addr().String()
	cfgPath, err := client.ConfigPath()
	if err == nil {
		err = client.SaveConfig(cfgPath, client.Config{API: apiURL, Token: cliKey})
	}
	if err != nil {
		log.Warn("could not write the CLI config; pass --api and --token to jetjob", zap.Error(err))
		cfgPath = "(not written)"
	}

	var demoIDs []int64
	var w *worker.Worker
	if !noDemo {
		if demoIDs, err = createDemoJobs(ctx, pool, o.shardCount); err != nil {
			return err
		}
		// One /metrics for the whole dev cluster: the worker's series too.
		// The demo handlers' lines are read in the console's run logs;
		// on this terminal they would scroll the sign-in banner away
		// within a minute. Their warnings and errors still show.
		if w, err = demoWorker(nc, keys, log.WithOptions(zap.IncreaseLevel(zap.WarnLevel)), s.Registry()); err != nil {
			return err
		}
	}

	fmt.Fprintf(os.Stderr, `
jetjob dev is running.
  Console:    %s/   (open it in a browser)
%s  sign in as: %s / %s
  API:        %s/api/v1   (an admin API key is in the CLI config, written to %s)
  Metrics:    %s
  NATS:       %s   (JetStream data in %s)
  PostgreSQL: %s
  Workers:    JETJOB_TRIGGER_PUBLIC_KEYS=%s
              (the key dev signs triggers with; another worker runs them only with it)
Try, in another terminal:
  bin/jetjob jobs list
  bin/jetjob runs list --job %s
Ctrl-C stops everything.

`, apiURL, moved, adminName, adminPassword, apiURL, cfgPath, metricsURL, ns.ClientURL(), dataDir, pg.URL("jetjob"),
		trigsign.EncodePublicKey(signer.PublicKey()), firstID(demoIDs))

	var wg sync.WaitGroup
	errs := make(chan error, 2)
	wg.Add(1)
	go func() { defer wg.Done(); errs <- s.Run(ctx) }()
	if w != nil {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- w.Run(ctx) }()
	}
	wg.Wait()
	close(errs)
	var first error
	for e := range errs {
		if e != nil && first == nil {
			first = e
		}
	}
	log.Info("dev stopped")
	return first
}

// devTriggerKeys is dev's trigger signer, from --trigger-signing-key or
// JETJOB_TRIGGER_SIGNING_KEY if given (a key that survives restarts, for
// workers started by hand), else a new key, and the verifier of its public
// key for the demo worker.
func devTriggerKeys(o options) (*trigsign.Signer, *trigsign.Verifier, error) {
	signer, err := o.triggerSigner()
	if err != nil {
		return nil, nil, err
	}
	if signer == nil {
		return trigsign.GeneratePair()
	}
	keys, err := trigsign.NewVerifier(signer.PublicKey())
	return signer, keys, err
}

func firstID(ids []int64) string {
	if len(ids) == 0 {
		return "<job id>"
	}
	return fmt.Sprint(ids[0])
}
