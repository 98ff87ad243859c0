package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/jetjob/jetjob/shared/stream"
	"github.com/jetjob/jetjob/shared/wire"
	"github.com/jetjob/jetjob/worker"
	"github.com/jetjob/jetjob/worker/builtin"
)

// usageError is a bad flag, environment variable or argument: exit status 2.
type usageError struct{ error }

// options are the flags; each has a JETJOB_* environment variable, used
// when the flag is not given.
type options struct {
	natsURL      string
	natsUser     string
	natsPassword string
	natsToken    string
	natsCreds    string
	tlsCA        string
	tlsCert      string
	tlsKey       string

	group         string
	id            string
	concurrency   int
	ackWait       time.Duration
	maxDeliver    int
	shutdownGrace time.Duration
	heartbeat     time.Duration
	replicas      int

	handlers   string
	shell      string
	allowHosts string

	logFormat string
	logLevel  string

	envOf map[string]string // flag name → environment variable
}

// Built-in handler names, as jobs name them.
const (
	handlerShell = "shell"
	handlerHTTP  = "http"
)

var knownHandlers = []string{handlerShell, handlerHTTP}

func (o *options) register(fs *pflag.FlagSet) {
	o.envOf = map[string]string{}
	bind := func(name, env, usage string) string {
		o.envOf[name] = env
		return usage + " (" + env + ")"
	}
	str := func(p *string, name, env, def, usage string) { fs.StringVar(p, name, def, bind(name, env, usage)) }
	num := func(p *int, name, env string, def int, usage string) { fs.IntVar(p, name, def, bind(name, env, usage)) }
	dur := func(p *time.Duration, name, env string, def time.Duration, usage string) {
		fs.DurationVar(p, name, def, bind(name, env, usage))
	}

	str(&o.natsURL, "nats-url", "JETJOB_NATS_URL", "nats://127.0.0.1:4222", "NATS server URL(s), comma-separated for a cluster")
	str(&o.natsUser, "nats-user", "JETJOB_NATS_USER", "", "NATS user name (with --nats-password)")
	str(&o.natsPassword, "nats-password", "JETJOB_NATS_PASSWORD", "", "NATS password; prefer the environment variable")
	str(&o.natsToken, "nats-token", "JETJOB_NATS_TOKEN", "", "NATS authentication token; prefer the environment variable")
	str(&o.natsCreds, "nats-creds", "JETJOB_NATS_CREDS", "", "NATS credentials file (JWT and NKey)")
	str(&o.tlsCA, "nats-tls-ca", "JETJOB_NATS_TLS_CA", "", "PEM file of the CA that signed the NATS server's certificate")
	str(&o.tlsCert, "nats-tls-cert", "JETJOB_NATS_TLS_CERT", "", "PEM client certificate for NATS (with --nats-tls-key)")
	str(&o.tlsKey, "nats-tls-key", "JETJOB_NATS_TLS_KEY", "", "PEM private key of --nats-tls-cert")

	str(&o.group, "group", "JETJOB_GROUP", "", "job group this worker serves; required")
	str(&o.id, "id", "JETJOB_WORKER_ID", "", "worker id, [A-Za-z0-9_-]{1,64}; default <host>-<pid>-<random>")
	num(&o.concurrency, "concurrency", "JETJOB_CONCURRENCY", worker.DefaultConcurrency, "runs executed at once")
	dur(&o.ackWait, "ack-wait", "JETJOB_ACK_WAIT", worker.DefaultAckWait, "redelivery delay of a trigger whose worker went silent; the same on every worker of the group")
	num(&o.maxDeliver, "max-deliver", "JETJOB_MAX_DELIVER", worker.DefaultMaxDeliver, "deliveries of one trigger before its run is LOST; the same on every worker of the group")
	dur(&o.shutdownGrace, "shutdown-grace", "JETJOB_SHUTDOWN_GRACE", worker.DefaultShutdownGrace, "on SIGTERM, how long running runs may finish before they are cancelled and handed back")
	dur(&o.heartbeat, "heartbeat-interval", "JETJOB_HEARTBEAT_INTERVAL", worker.DefaultHeartbeatInterval, "registry heartbeat interval, below the workers bucket TTL (15s)")
	num(&o.replicas, "stream-replicas", "JETJOB_STREAM_REPLICAS", 1, "JetStream replicas of streams the worker creates: 1, or 3 on a three-node cluster")

	str(&o.handlers, "handlers", "JETJOB_HANDLERS", "", "comma-separated built-in handlers to enable: shell, http; none by default, at least one required. "+
		"shell runs whatever command a job's params name")
	str(&o.shell, "shell", "JETJOB_SHELL", builtin.DefaultShell, "shell that runs the shell handler's command lines (as <shell> -c <params>)")
	str(&o.allowHosts, "http-allow-hosts", "JETJOB_HTTP_ALLOW_HOSTS", "", `comma-separated hosts the http handler may call: "api.example.com", "10.0.0.7:8080", "*.example.com", or "*" for any; required with http`)

	str(&o.logFormat, "log-format", "JETJOB_LOG_FORMAT", "json", "json or console")
	str(&o.logLevel, "log-level", "JETJOB_LOG_LEVEL", "info", "debug, info, warn or error")
}

// applyEnv sets every flag that was not given from its environment variable,
// if that is set and not empty: a flag wins over the environment.
func (o *options) applyEnv(fs *pflag.FlagSet) error {
	var errs []error
	fs.VisitAll(func(f *pflag.Flag) {
		env, ok := o.envOf[f.Name]
		if !ok || f.Changed {
			return
		}
		v := os.Getenv(env)
		if v == "" {
			return
		}
		if err := fs.Set(f.Name, v); err != nil {
			_ = f.Value.Set(f.DefValue) // a failed Set may have stored a zero
			want := map[string]string{"int": "an integer", "duration": "a duration like 30s or 1m"}[f.Value.Type()]
			if want == "" {
				want = "a valid value"
			}
			errs = append(errs, fmt.Errorf("%s=%q: want %s", env, v, want))
		}
	})
	return errors.Join(errs...)
}

// name is how an error names a setting: "--group / JETJOB_GROUP".
func (o *options) name(flag string) string { return "--" + flag + " / " + o.envOf[flag] }

// validate checks everything that can be checked before connecting and
// returns every problem at once.
func (o *options) validate() error {
	var errs []error
	bad := func(flag, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", o.name(flag), fmt.Sprintf(format, args...)))
	}

	if _, err := natsServers(o.natsURL); err != nil {
		bad("nats-url", "%v", err)
	}
	switch {
	case (o.natsUser == "") != (o.natsPassword == ""):
		bad("nats-user", "give both a user and a password (%s), or neither", o.name("nats-password"))
	}
	methods := 0
	for _, set := range []bool{o.natsUser != "", o.natsToken != "", o.natsCreds != ""} {
		if set {
			methods++
		}
	}
	if methods > 1 {
		errs = append(errs, fmt.Errorf("NATS authentication: choose one of %s, %s and %s",
			o.name("nats-user"), o.name("nats-token"), o.name("nats-creds")))
	}
	if o.natsCreds != "" {
		if err := readable(o.natsCreds); err != nil {
			bad("nats-creds", "%v", err)
		}
	}
	if o.tlsCA != "" {
		if pem, err := os.ReadFile(o.tlsCA); err != nil {
			bad("nats-tls-ca", "%v", err)
		} else if !x509.NewCertPool().AppendCertsFromPEM(pem) {
			bad("nats-tls-ca", "%s holds no PEM certificate", o.tlsCA)
		}
	}
	switch {
	case (o.tlsCert == "") != (o.tlsKey == ""):
		bad("nats-tls-cert", "give both a certificate and its key (%s), or neither", o.name("nats-tls-key"))
	case o.tlsCert != "":
		if _, err := tls.LoadX509KeyPair(o.tlsCert, o.tlsKey); err != nil {
			bad("nats-tls-cert", "%v", err)
		}
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
	hosts := o.allowHostList()
	if err := builtin.CheckAllowHosts(hosts); err != nil {
		bad("http-allow-hosts", "%v", err)
	}
	if slices.Contains(handlers, handlerHTTP) && len(hosts) == 0 {
		bad("http-allow-hosts", "empty, so the http handler would refuse every request: name the hosts it may call")
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

func (o *options) allowHostList() []string {
	var out []string
	for _, h := range strings.Split(o.allowHosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			out = append(out, h)
		}
	}
	return out
}

// natsServers splits and checks a comma-separated list of NATS URLs.
func natsServers(list string) ([]string, error) {
	var out []string
	for i, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		full := s
		if !strings.Contains(s, "://") {
			full = "nats://" + s
		}
		u, err := url.Parse(full)
		if err != nil {
			// Not quoted: the URL may hold a password.
			return nil, fmt.Errorf("URL %d of the list is not valid: %v", i+1, redactErr(err))
		}
		switch u.Scheme {
		case "nats", "tls", "ws", "wss":
		default:
			return nil, fmt.Errorf("%s: want a nats://, tls://, ws:// or wss:// URL", u.Redacted())
		}
		if u.Hostname() == "" {
			return nil, fmt.Errorf("%s: no host", u.Redacted())
		}
		out = append(out, full)
	}
	if len(out) == 0 {
		return nil, errors.New("no URL given")
	}
	return out, nil
}

// redactErr drops the URL (which may hold a password) from a url.Error.
func redactErr(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// redactedURLs is the URL list for logs, without passwords.
func redactedURLs(servers []string) string {
	out := make([]string, len(servers))
	for i, s := range servers {
		if u, err := url.Parse(s); err == nil {
			out[i] = u.Redacted()
		}
	}
	return strings.Join(out, ",")
}

func readable(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	return f.Close()
}
