package main

import (
	"errors"
	"fmt"
	"net"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/jetjob/jetjob/internal/config"
	"github.com/jetjob/jetjob/internal/egress"
	"github.com/jetjob/jetjob/internal/natsconn"
	"github.com/jetjob/jetjob/internal/scrape"
	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/shared/trigsign"
	"github.com/jetjob/jetjob/shared/wire"
	"github.com/jetjob/jetjob/worker"
	"github.com/jetjob/jetjob/worker/builtin"
)

// options are the flags; each has a JETJOB_* environment variable and a
// key of the --config file (see package internal/config for the precedence).
type options struct {
	nats natsconn.Options

	group         string
	id            string
	concurrency   int
	ackWait       time.Duration
	maxDeliver    int
	shutdownGrace time.Duration
	heartbeat     time.Duration
	replicas      int

	handlers     string
	shell        string
	interpreters string
	passEnv      string
	shellReduce  bool
	allowHosts   string
	egressAllow  string

	logFormat string
	logLevel  string

	metricsListen    string
	metricsTokenFile string
	metricsToken     string // read from metricsTokenFile by validate

	triggerKeys     string
	triggerKeyFiles string
	acceptUnsigned  bool
	// verifier is built by validate from the two above; nil with
	// acceptUnsigned and no key.
	verifier *trigsign.Verifier

	set *config.Set
}

// Built-in handler names, as jobs name them.
const (
	handlerShell  = "shell"
	handlerHTTP   = "http"
	handlerScript = "script"
)

var knownHandlers = []string{handlerShell, handlerHTTP, handlerScript}

func (o *options) register(fs *pflag.FlagSet) {
	s := config.New(fs)
	o.set = s
	o.nats.Register(s, natsconn.DefaultURL)

	s.String(&o.group, "group", "JETJOB_GROUP", "", "job group this worker serves; required")
	s.String(&o.id, "id", "JETJOB_WORKER_ID", "", "worker id, [A-Za-z0-9_-]{1,64}; default <host>-<pid>-<random>")
	s.Int(&o.concurrency, "concurrency", "JETJOB_CONCURRENCY", worker.DefaultConcurrency, "runs executed at once")
	s.Duration(&o.ackWait, "ack-wait", "JETJOB_ACK_WAIT", worker.DefaultAckWait, "redelivery delay of a trigger whose worker went silent; the same on every worker of the group")
	s.Int(&o.maxDeliver, "max-deliver", "JETJOB_MAX_DELIVER", worker.DefaultMaxDeliver, "deliveries of one trigger before its run is LOST; the same on every worker of the group")
	s.Duration(&o.shutdownGrace, "shutdown-grace", "JETJOB_SHUTDOWN_GRACE", worker.DefaultShutdownGrace, "on SIGTERM, how long running runs may finish before they are cancelled (and end LOST; the job's retries decide what follows)")
	s.Duration(&o.heartbeat, "heartbeat-interval", "JETJOB_HEARTBEAT_INTERVAL", worker.DefaultHeartbeatInterval, "registry heartbeat interval, below the workers bucket TTL (15s)")
	s.Int(&o.replicas, "stream-replicas", "JETJOB_STREAM_REPLICAS", 1, "JetStream replicas of streams the worker creates: 1, or 3 on a three-node cluster")

	s.String(&o.handlers, "handlers", "JETJOB_HANDLERS", "", "comma-separated built-in handlers to enable: shell, http, script; none by default, at least one required. "+
		"shell runs whatever command a job's params name, script the stored script of a script job")
	s.String(&o.interpreters, "script-interpreters", "JETJOB_SCRIPT_INTERPRETERS", "", "comma-separated language=interpreter pairs replacing the script handler's "+
		`defaults (bash, python3, python2, node, php, powershell), e.g. "powershell=pwsh,python2=/opt/py27/bin/python"`)
	s.String(&o.shell, "shell", "JETJOB_SHELL", builtin.DefaultShell, "shell that runs the shell handler's command lines (as <shell> -c <params>)")
	s.String(&o.passEnv, "shell-pass-env", "JETJOB_SHELL_PASS_ENV", "", "comma-separated variables of the worker's environment that shell commands get besides "+
		strings.Join(builtin.BaseEnv, ", ")+" (never a JETJOB_* one)")
	s.Bool(&o.shellReduce, "shell-reduce", "JETJOB_SHELL_REDUCE", false, "register a reduce for the shell and script handlers: every job of theirs that maps "+
		"(JETJOB_MAP) gets a reduce run, its command run once more with the parts' outputs in the file JETJOB_OUTPUTS")
	s.String(&o.allowHosts, "http-allow-hosts", "JETJOB_HTTP_ALLOW_HOSTS", "", `comma-separated hosts the http handler may call: "api.example.com", "10.0.0.7:8080", "*.example.com", or "*" for any; required with http`)
	s.String(&o.egressAllow, "egress-allow", "JETJOB_EGRESS_ALLOW", "", "comma-separated internal addresses the http handler may reach through hosts "+
		`that --http-allow-hosts allows by wildcard: CIDRs, addresses with an optional port ("10.96.0.0/12"); `+
		"an exact host there may resolve to any address, a wildcard only to public ones unless allowed here")

	s.String(&o.logFormat, "log-format", "JETJOB_LOG_FORMAT", "json", "json or console")
	s.String(&o.logLevel, "log-level", "JETJOB_LOG_LEVEL", "info", "debug, info, warn or error")
	s.String(&o.metricsListen, "metrics-listen", "JETJOB_METRICS_LISTEN", DefaultMetricsListen,
		"address of /metrics, /healthz and /readyz (host:port), loopback by default (a pod sets :9091 for its probes); empty (--metrics-listen=) turns them off")
	s.String(&o.metricsTokenFile, "metrics-token-file", "JETJOB_METRICS_TOKEN_FILE", "",
		"file holding the scrape token: /metrics then answers only \"Authorization: Bearer <token>\" (the probes stay open)")

	s.String(&o.triggerKeys, "trigger-public-keys", "JETJOB_TRIGGER_PUBLIC_KEYS", "",
		"the schedulers' trigger public keys, base64, comma-separated (two while their key is rotated): only triggers they signed run")
	s.String(&o.triggerKeyFiles, "trigger-public-key-files", "JETJOB_TRIGGER_PUBLIC_KEY_FILES", "",
		"files of trigger public keys (PEM or base64), comma-separated; added to --trigger-public-keys")
	s.Bool(&o.acceptUnsigned, "insecure-accept-unsigned-triggers", "JETJOB_INSECURE_ACCEPT_UNSIGNED_TRIGGERS", false,
		"run triggers that carry no signature: anyone who may publish on the group's trigger subjects can then run its handlers "+
			"(signed triggers are still verified against the keys given)")
}

// validate checks everything that can be checked before connecting and
// returns every problem at once.
func (o *options) validate() error {
	var errs []error
	bad := func(flag, format string, args ...any) { errs = append(errs, o.set.Errorf(flag, format, args...)) }

	if err := o.nats.Validate(o.set); err != nil {
		errs = append(errs, err)
	}

	if o.group == "" {
		bad("group", "required: the job group this worker serves")
	} else if !wire.ValidName(o.group) {
		bad("group", "%q: want 1-64 characters of [A-Za-z0-9_-]", o.group)
	}
	if o.id != "" && !wire.ValidName(o.id) {
		bad("id", "%q: want 1-64 characters of [A-Za-z0-9_-]", o.id)
	}
	if o.concurrency < 1 {
		bad("concurrency", "%d: want at least 1", o.concurrency)
	}
	if o.maxDeliver < 1 {
		bad("max-deliver", "%d: want at least 1", o.maxDeliver)
	}
	if o.ackWait < 100*time.Millisecond {
		bad("ack-wait", "%s: want at least 100ms", o.ackWait)
	}
	if o.shutdownGrace <= 0 {
		bad("shutdown-grace", "%s: want a positive duration", o.shutdownGrace)
	}
	if o.heartbeat <= 0 || o.heartbeat >= stream.DefaultWorkerTTL {
		bad("heartbeat-interval", "%s: want more than 0 and less than the workers bucket TTL %s", o.heartbeat, stream.DefaultWorkerTTL)
	}
	if err := (stream.Config{Replicas: o.replicas}).Validate(); err != nil || o.replicas < 1 {
		bad("stream-replicas", "%d: want 1 to 5", o.replicas)
	}

	handlers, err := o.handlerList()
	if err != nil {
		bad("handlers", "%v", err)
	}
	if slices.Contains(handlers, handlerShell) {
		if o.shell == "" {
			bad("shell", "must not be empty")
		} else if _, err := exec.LookPath(o.shell); err != nil {
			bad("shell", "%v", err)
		}
	}
	if slices.Contains(handlers, handlerShell) || slices.Contains(handlers, handlerScript) {
		if err := builtin.CheckPassEnv(o.passEnvList()); err != nil {
			bad("shell-pass-env", "%v", err)
		}
	}
	if _, err := o.interpreterMap(); err != nil {
		bad("script-interpreters", "%v", err)
	}
	hosts := o.allowHostList()
	if err := builtin.CheckAllowHosts(hosts); err != nil {
		bad("http-allow-hosts", "%v", err)
	}
	if err := (egress.Config{Allow: egress.ParseList(o.egressAllow)}).Validate(); err != nil {
		bad("egress-allow", "%v", err)
	}
	if slices.Contains(handlers, handlerHTTP) && len(hosts) == 0 {
		bad("http-allow-hosts", "empty, so the http handler would refuse every request: name the hosts it may call")
	}

	if o.metricsListen != "" {
		if err := checkListen(o.metricsListen); err != nil {
			bad("metrics-listen", "%q: %v", o.metricsListen, err)
		}
	}
	if o.metricsTokenFile != "" {
		tok, err := scrape.ReadTokenFile(o.metricsTokenFile)
		if err != nil {
			bad("metrics-token-file", "%v", err)
		}
		o.metricsToken = tok
	}
	if err := o.triggerVerifier(); err != nil {
		errs = append(errs, err)
	}

	switch o.logFormat {
	case "json", "console":
	default:
		bad("log-format", "%q: want json or console", o.logFormat)
	}
	switch strings.ToLower(o.logLevel) {
	case "debug", "info", "warn", "error":
	default:
		bad("log-level", "%q: want debug, info, warn or error", o.logLevel)
	}
	return errors.Join(errs...)
}

// triggerVerifier builds o.verifier from the trigger public keys given, and
// refuses to go on with none unless unsigned triggers are accepted on
// purpose: a worker, a shell worker above all, must not run whatever
// anyone allowed to publish a trigger sends.
func (o *options) triggerVerifier() error {
	keys, err := trigsign.ParsePublicKeys(o.triggerKeys)
	if err != nil {
		return o.set.Errorf("trigger-public-keys", "%v", err)
	}
	for _, f := range strings.Split(o.triggerKeyFiles, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		k, err := trigsign.LoadPublicKeyFile(f)
		if err != nil {
			return o.set.Errorf("trigger-public-key-files", "%v", err)
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		if o.acceptUnsigned {
			return nil
		}
		return fmt.Errorf("no trigger public key: give the schedulers' (%s or %s; `jetjob-scheduler trigger-key public` prints it), "+
			"or run unsigned triggers on purpose with %s", o.set.Name("trigger-public-keys"), o.set.Name("trigger-public-key-files"),
			o.set.Name("insecure-accept-unsigned-triggers"))
	}
	v, err := trigsign.NewVerifier(keys...)
	if err != nil {
		return o.set.Errorf("trigger-public-keys", "%v", err)
	}
	o.verifier = v
	return nil
}

// handlerList parses --handlers: known names, at least one.
func (o *options) handlerList() ([]string, error) {
	var out []string
	for _, h := range strings.Split(o.handlers, ",") {
		h = strings.ToLower(strings.TrimSpace(h))
		if h == "" {
			continue
		}
		if !slices.Contains(knownHandlers, h) {
			return nil, fmt.Errorf("unknown handler %q: want a comma-separated list of %s", h, strings.Join(knownHandlers, ", "))
		}
		if !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no handler enabled: name the built-in handlers to run, %s "+
			"(shell runs whatever command a job's params name, so it is never enabled by default)", strings.Join(knownHandlers, ", "))
	}
	return out, nil
}

func (o *options) passEnvList() []string { return list(o.passEnv) }

// interpreterMap parses --script-interpreters.
func (o *options) interpreterMap() (map[string]string, error) {
	m := map[string]string{}
	for _, kv := range list(o.interpreters) {
		l, in, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("%q: want language=interpreter", kv)
		}
		m[strings.TrimSpace(l)] = strings.TrimSpace(in)
	}
	return m, builtin.CheckInterpreters(m)
}

// list splits a comma-separated setting, leaving out empty entries.
func list(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

func (o *options) allowHostList() []string {
	var out []string
	for _, h := range strings.Split(o.allowHosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			out = append(out, h)
		}
	}
	return out
}

// checkListen checks a listen address before anything starts: host:port
// with a port number (0 picks a free one), the host optional.
func checkListen(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("want host:port or :port: %w", err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("port %q: want a number from 0 to 65535", port)
	}
	return nil
}
