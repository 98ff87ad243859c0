// Package httplimit bounds what one HTTP client can hold of the
// scheduler's listener, the API's and the console's alike: how long it may
// take to send a request's headers and its body, how long an idle
// connection stays open, and how many requests without valid credentials
// may be reading a body at once.
//
// A body is read under a deadline of its own, set when the handler starts
// and lifted once the body has been read to its end. It is not the
// http.Server's ReadTimeout: that deadline would stay on the connection
// while the handler runs and cut long answers short (a run's log followed
// live streams for as long as the run lasts), because net/http cancels a
// request's context when a read of its connection times out.
//
// Requests with a body and without valid credentials (a login, a console
// form before its session is checked, a forged cookie) share a budget of
// MaxAnonymous: past it they answer 503 at once and the connection closes,
// so that a flood of slow bodies holds at most that many handlers, and
// each for at most BodyTimeout. Signed-in users and API keys are not
// counted against it, and neither are the probes (/healthz, /readyz):
// they are served during such a flood. Requests without a body cannot hold
// a handler by sending slowly and are not counted either.
package httplimit

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Defaults of Config's zero values.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultBodyTimeout       = 30 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultMaxAnonymous      = 64
)

// Config bounds the listener's clients. Zero values mean the defaults.
type Config struct {
	// ReadHeaderTimeout bounds reading a request line and its headers.
	ReadHeaderTimeout time.Duration
	// BodyTimeout bounds reading a request's body, from when its handler
	// starts: a body not received by then fails to read (the API answers
	// 408) and the connection is closed.
	BodyTimeout time.Duration
	// IdleTimeout closes a kept-alive connection that sends no next
	// request for this long.
	IdleTimeout time.Duration
	// MaxAnonymous is how many requests with a body and without valid
	// credentials are served at once; more answer 503.
	MaxAnonymous int
	// AlwaysServe are paths never counted against MaxAnonymous (the
	// probes).
	AlwaysServe []string
}

// Validate says which field is wrong.
func (c Config) Validate() error {
	var errs []error
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"ReadHeaderTimeout", c.ReadHeaderTimeout}, {"BodyTimeout", c.BodyTimeout}, {"IdleTimeout", c.IdleTimeout}} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("httplimit: %s %s: want a positive duration (0: the default)", d.name, d.v))
		}
	}
	if c.MaxAnonymous < 0 {
		errs = append(errs, fmt.Errorf("httplimit: MaxAnonymous %d: want a positive number (0: the default, %d)", c.MaxAnonymous, DefaultMaxAnonymous))
	}
	return errors.Join(errs...)
}

func (c Config) withDefaults() Config {
	c.ReadHeaderTimeout = cmp.Or(c.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	c.BodyTimeout = cmp.Or(c.BodyTimeout, DefaultBodyTimeout)
	c.IdleTimeout = cmp.Or(c.IdleTimeout, DefaultIdleTimeout)
	c.MaxAnonymous = cmp.Or(c.MaxAnonymous, DefaultMaxAnonymous)
	return c
}

// Server returns an http.Server for h with the connection-level bounds:
// header and idle timeouts. No ReadTimeout or WriteTimeout: see the
// package doc; h should be a Limiter for the body's bound.
func Server(cfg Config, h http.Handler) *http.Server {
	cfg = cfg.withDefaults()
	return &http.Server{Handler: h, ReadHeaderTimeout: cfg.ReadHeaderTimeout, IdleTimeout: cfg.IdleTimeout}
}

// Limiter is the request-level half: the body's deadline and the budget of
// anonymous requests. It must wrap the handler the server calls directly
// (the deadline is set through the server's own ResponseWriter).
type Limiter struct {
	cfg           Config
	next          http.Handler
	authenticated func(*http.Request) bool
	anonymous     chan struct{}
	limited       *prometheus.CounterVec
}

// New returns a Limiter in front of next. authenticated reports whether a
// request carries valid credentials; it is asked only for requests with a
// body. nil counts every request with a body as anonymous.
func New(cfg Config, next http.Handler, authenticated func(*http.Request) bool) *Limiter {
	cfg = cfg.withDefaults()
	if authenticated == nil {
		authenticated = func(*http.Request) bool { return false }
	}
	return &Limiter{cfg: cfg, next: next, authenticated: authenticated,
		anonymous: make(chan struct{}, cfg.MaxAnonymous),
		limited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "jetjob_http_limited_total",
			Help: "HTTP requests cut short by the listener's limits: anonymous_budget (503, too many requests with a body and without valid credentials at once), body_timeout (the body was not received in time).",
		}, []string{"reason"}),
	}
}

// Collector is the Limiter's counter, for the scheduler's registry.
func (l *Limiter) Collector() prometheus.Collector { return l.limited }

// ServeHTTP implements http.Handler.
func (l *Limiter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Body == nil || r.Body == http.NoBody {
		l.next.ServeHTTP(w, r)
		return
	}
	rc := http.NewResponseController(w)
	if err := rc.SetReadDeadline(time.Now().Add(l.cfg.BodyTimeout)); err == nil {
		r.Body = &deadlineBody{ReadCloser: r.Body, lift: func() { _ = rc.SetReadDeadline(time.Time{}) },
			timedOut: l.limited.WithLabelValues("body_timeout").Inc}
	}
	if !slices.Contains(l.cfg.AlwaysServe, r.URL.Path) && !l.authenticated(r) {
		select {
		case l.anonymous <- struct{}{}:
			defer func() { <-l.anonymous }()
		default:
			l.limited.WithLabelValues("anonymous_budget").Inc()
			// Close rather than read the rest of the body to reuse
			// the connection: its sender is what is being refused.
			w.Header().Set("Connection", "close")
			w.Header().Set("Retry-After", "1")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, `{"error": "too many requests without credentials at once: retry shortly, or sign in"}`+"\n")
			return
		}
	}
	l.next.ServeHTTP(w, r)
}

// deadlineBody lifts the read deadline once the body has been read to its
// end, so that the connection's later reads (net/http watches it for the
// client going away while the handler runs) are not cut by it.
type deadlineBody struct {
	io.ReadCloser
	once     sync.Once
	lift     func()
	timedOut func()
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.once.Do(func() {
			if errors.Is(err, io.EOF) {
				b.lift()
			} else if isTimeout(err) {
				b.timedOut()
			}
		})
	}
	return n, err
}

func isTimeout(err error) bool {
	var te interface{ Timeout() bool }
	return errors.As(err, &te) && te.Timeout()
}
