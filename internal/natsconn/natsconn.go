// Package natsconn connects jetjob's processes to NATS: the settings of a
// connection (server URLs, authentication, TLS) with their flags and
// JETJOB_* variables, their checks, and a connection that waits out an
// unreachable server. The scheduler and the worker both use it, so a NATS
// that requires TLS or credentials is reached the same way by both, and no
// message of either ever shows a password.
package natsconn

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/config"
)

// DefaultURL is the server of a local development NATS.
const DefaultURL = "nats://127.0.0.1:4222"

// DefaultReconnectWait is the pause between reconnection attempts.
const DefaultReconnectWait = 500 * time.Millisecond

// Options are the settings of a connection. Zero values mean no
// authentication and no client certificate.
type Options struct {
	// URL is one or more server URLs, comma-separated (nats://, tls://,
	// ws://, wss://; a URL without a scheme is nats://). It may carry
	// user:password@ or token@.
	URL string
	// At most one of User+Password, Token and Creds.
	User, Password string
	Token          string
	Creds          string // credentials file (JWT and NKey seed)
	// TLSCA is a PEM file of the CA that signed the server's certificate;
	// setting it requires TLS (the system's roots are used otherwise, with
	// a tls:// URL or a server that requires TLS).
	TLSCA string
	// TLSCert and TLSKey are a PEM client certificate and its key, for a
	// server that verifies clients.
	TLSCert, TLSKey string

	// Name is the connection's name on the server (its monitoring pages).
	Name string
	// InboxPrefix replaces the client's _INBOX prefix of reply subjects
	// when set. Workers use stream.WorkerInboxPrefix(group): a group's
	// credential may subscribe only to its own inboxes (see
	// stream.WorkerPermissions).
	InboxPrefix string
	// ReconnectWait defaults to DefaultReconnectWait.
	ReconnectWait time.Duration
}

// Register binds the connection's flags and variables on s, defaultURL
// being --nats-url's default.
func (o *Options) Register(s *config.Set, defaultURL string) {
	s.String(&o.URL, "nats-url", "JETJOB_NATS_URL", defaultURL, "NATS server URL(s), comma-separated for a cluster; may carry user:password@ or token@", config.SecretURL())
	s.String(&o.User, "nats-user", "JETJOB_NATS_USER", "", "NATS user name (with --nats-password)")
	s.String(&o.Password, "nats-password", "JETJOB_NATS_PASSWORD", "", "NATS password; prefer the environment variable (a flag is visible to every local user)", config.Secret())
	s.String(&o.Token, "nats-token", "JETJOB_NATS_TOKEN", "", "NATS authentication token; prefer the environment variable", config.Secret())
	s.String(&o.Creds, "nats-creds", "JETJOB_NATS_CREDS", "", "NATS credentials file (JWT and NKey)")
	s.String(&o.TLSCA, "nats-tls-ca", "JETJOB_NATS_TLS_CA", "", "PEM file of the CA that signed the NATS server's certificate; requires TLS")
	s.String(&o.TLSCert, "nats-tls-cert", "JETJOB_NATS_TLS_CERT", "", "PEM client certificate for NATS (with --nats-tls-key)")
	s.String(&o.TLSKey, "nats-tls-key", "JETJOB_NATS_TLS_KEY", "", "PEM private key of --nats-tls-cert")
}

// Validate checks the settings before anything connects and returns every
// problem, each naming its flag and variable as s does.
func (o *Options) Validate(s *config.Set) error {
	var errs []error
	bad := func(flag, format string, args ...any) { errs = append(errs, s.Errorf(flag, format, args...)) }

	if _, err := Servers(o.URL); err != nil {
		bad("nats-url", "%v", err)
	}
	if (o.User == "") != (o.Password == "") {
		bad("nats-user", "give both a user and a password (%s), or neither", s.Name("nats-password"))
	}
	methods := 0
	for _, set := range []bool{o.User != "", o.Token != "", o.Creds != ""} {
		if set {
			methods++
		}
	}
	if methods > 1 {
		errs = append(errs, fmt.Errorf("NATS authentication: choose one of %s, %s and %s",
			s.Name("nats-user"), s.Name("nats-token"), s.Name("nats-creds")))
	}
	if o.Creds != "" {
		if err := readable(o.Creds); err != nil {
			bad("nats-creds", "%v", err)
		}
	}
	if o.TLSCA != "" {
		if pem, err := os.ReadFile(o.TLSCA); err != nil {
			bad("nats-tls-ca", "%v", err)
		} else if !x509.NewCertPool().AppendCertsFromPEM(pem) {
			bad("nats-tls-ca", "%s holds no PEM certificate", o.TLSCA)
		}
	}
	switch {
	case (o.TLSCert == "") != (o.TLSKey == ""):
		bad("nats-tls-cert", "give both a certificate and its key (%s), or neither", s.Name("nats-tls-key"))
	case o.TLSCert != "":
		if _, err := tls.LoadX509KeyPair(o.TLSCert, o.TLSKey); err != nil {
			bad("nats-tls-cert", "%v", err)
		}
	}
	return errors.Join(errs...)
}

// Connect returns a connection that reconnects forever: with
// RetryOnFailedConnect an unreachable server at start is not an error but
// waited out, like a server lost later. extra options come last and so win.
func Connect(o Options, log *zap.Logger, extra ...nats.Option) (*nats.Conn, error) {
	servers, err := Servers(o.URL)
	if err != nil {
		return nil, fmt.Errorf("NATS URL: %w", err)
	}
	wait := o.ReconnectWait
	if wait <= 0 {
		wait = DefaultReconnectWait
	}
	opts := []nats.Option{
		nats.Name(o.Name),
		nats.RetryOnFailedConnect(true),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(wait),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("NATS disconnected; reconnecting", zap.Error(err))
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			log.Info("NATS reconnected", zap.String("url", nc.ConnectedUrlRedacted()))
		}),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			log.Warn("NATS error", zap.Error(err))
		}),
	}
	switch {
	case o.User != "":
		opts = append(opts, nats.UserInfo(o.User, o.Password))
	case o.Token != "":
		opts = append(opts, nats.Token(o.Token))
	case o.Creds != "":
		opts = append(opts, nats.UserCredentials(o.Creds))
	}
	if o.InboxPrefix != "" {
		opts = append(opts, nats.CustomInboxPrefix(o.InboxPrefix))
	}
	if o.TLSCA != "" {
		opts = append(opts, nats.RootCAs(o.TLSCA))
	}
	if o.TLSCert != "" {
		opts = append(opts, nats.ClientCert(o.TLSCert, o.TLSKey))
	}
	opts = append(opts, extra...)
	nc, err := nats.Connect(strings.Join(servers, ","), opts...)
	if err != nil {
		return nil, fmt.Errorf("NATS at %s: %w", Redacted(o.URL), err)
	}
	return nc, nil
}

// Servers splits and checks a comma-separated list of NATS URLs; a URL
// without a scheme gets nats://. Errors never quote a URL's password.
func Servers(list string) ([]string, error) {
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
			return nil, fmt.Errorf("%s: want a nats://, tls://, ws:// or wss:// URL", config.RedactURLs(full))
		}
		if u.Hostname() == "" {
			return nil, fmt.Errorf("%s: no host", config.RedactURLs(full))
		}
		out = append(out, full)
	}
	if len(out) == 0 {
		return nil, errors.New("no URL given")
	}
	return out, nil
}

// Redacted is a URL list for logs and messages, passwords and tokens
// replaced by "xxxxx" (see config.RedactURLs).
func Redacted(list string) string {
	var out []string
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if !strings.Contains(s, "://") {
			s = "nats://" + s
		}
		out = append(out, s)
	}
	return config.RedactURLs(strings.Join(out, ","))
}

// redactErr drops the URL (which may hold a password) from a url.Error.
func redactErr(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func readable(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	return f.Close()
}
