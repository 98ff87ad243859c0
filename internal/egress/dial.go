package egress

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"syscall"
	"time"
)

// MaxRedirects is how many redirects a Client follows; each one is a new
// connection, checked like the first.
const MaxRedirects = 5

// ErrTooManyRedirects ends a request that was redirected more than
// MaxRedirects times.
var ErrTooManyRedirects = fmt.Errorf("stopped after %d redirects", MaxRedirects)

// connectTimeout bounds one connection attempt when the caller's context
// sets no deadline.
const connectTimeout = 30 * time.Second

// DialContext connects to addr (host:port) over TCP if the policy allows
// the address the connection goes to. The check runs in the dialer's
// Control function, after name resolution and before connect(2), on the
// address being connected to: what a name resolved to in an earlier
// check cannot differ from what is used. When a name has several
// addresses, a refused one is skipped like an unreachable one.
func (p *Policy) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return nil, fmt.Errorf("egress: network %q: only TCP is allowed", network)
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("egress: %w", err)
	}
	d := net.Dialer{Timeout: connectTimeout, KeepAlive: 30 * time.Second, Resolver: p.resolver,
		Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return &DeniedError{Host: host, Reason: "unparsable"}
			}
			return p.decide(host, ap)
		}}
	return d.DialContext(ctx, network, addr)
}

// Transport is an HTTP transport whose every connection goes through
// DialContext. It uses no proxy: a proxy would make the connections the
// policy sees be to the proxy, not to the target.
func (p *Policy) Transport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	t.DialContext = p.DialContext
	t.DialTLSContext = nil
	t.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	return t
}

// Client is an HTTP client of the policy: Transport, redirects checked by
// CheckRedirect, and timeout bounding each request (0: none; the request's
// context still applies).
func (p *Policy) Client(timeout time.Duration) *http.Client {
	return &http.Client{Transport: p.Transport(), CheckRedirect: p.CheckRedirect, Timeout: timeout}
}

// CheckRedirect is the http.Client hook: at most MaxRedirects hops, each
// to http or https, and a hop to an address the policy denies is refused
// before its request is made (a hop to a name is refused when its
// connection is, as any connection).
func (p *Policy) CheckRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > MaxRedirects {
		return ErrTooManyRedirects
	}
	u := req.URL
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("redirect to a %s URL refused: only http and https", u.Scheme)
	}
	if a, err := netip.ParseAddr(u.Hostname()); err == nil {
		if err := p.CheckHost(u.Hostname(), netip.AddrPortFrom(a, port(u))); err != nil {
			return fmt.Errorf("redirect refused: %w", err)
		}
	}
	return nil
}

// CheckURL is the check a URL can have before any connection: one whose
// host is an IP address is refused if that address is; a host name passes
// (what it resolves to is checked when connecting). It is for refusing a
// target as soon as a user names it, with a clear error; the connection's
// check is the one that protects.
func (p *Policy) CheckURL(u *url.URL) error {
	a, err := netip.ParseAddr(u.Hostname())
	if err != nil {
		return nil
	}
	return p.CheckHost(u.Hostname(), netip.AddrPortFrom(a, port(u)))
}

// port is u's port, or its scheme's.
func port(u *url.URL) uint16 {
	if ps := u.Port(); ps != "" {
		if n, err := strconv.ParseUint(ps, 10, 16); err == nil {
			return uint16(n)
		}
	}
	if u.Scheme == "https" {
		return 443
	}
	return 80
}

// Summary is a short account of a request error that is safe to show to
// anyone who may see the target's outcome: a class of failure, never
// text the target sent nor the addresses a name resolved to (the full
// error is for the operator's logs).
func Summary(err error) string {
	var (
		denied *DeniedError
		dnsErr *net.DNSError
		netErr net.Error
		tlsErr *tls.CertificateVerificationError
		recErr tls.RecordHeaderError
	)
	switch {
	case err == nil:
		return ""
	case errors.As(err, &denied):
		return fmt.Sprintf("%s (%s)", ErrDenied, denied.what())
	case errors.Is(err, ErrTooManyRedirects):
		return ErrTooManyRedirects.Error()
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return "timed out"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.As(err, &dnsErr):
		return "host name did not resolve"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "connection reset"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "host unreachable"
	case errors.As(err, &tlsErr):
		return "TLS certificate not trusted"
	case errors.As(err, &recErr):
		return "TLS handshake failed (not a TLS server?)"
	}
	return "request failed"
}
