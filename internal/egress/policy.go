// Package egress decides where jetjob may connect when a user chooses the
// target: the scheduler's alarm webhooks (and any later user-chosen
// channel) and the worker's http handler. A user who may name a URL must
// not reach, through jetjob, what only jetjob's host can reach: its
// loopback services (PostgreSQL, NATS, the API itself), the cloud metadata
// endpoint, the private network behind it.
//
// One Policy makes the decision, for every connection, on the address
// actually being connected to: the Dialer's Control function sees the IP
// after DNS resolution, just before connect(2), so a name that resolves to
// a public address at validation and to 127.0.0.1 at delivery (DNS
// rebinding) is refused, and so is every redirect hop, since each new
// connection is checked again.
//
// By default every address that is not globally reachable is denied:
// loopback, private (RFC 1918, fc00::/7), shared (100.64.0.0/10, CGNAT),
// link-local (169.254.0.0/16 with the metadata endpoint 169.254.169.254,
// fe80::/10), unspecified, multicast, documentation, benchmarking and
// reserved ranges, IPv4-mapped and NAT64 IPv6 forms of all these, and the
// process's own listeners. An operator who needs internal targets allows
// them (Config.Allow): CIDRs, addresses with or without a port, and exact
// host names (whatever such a name resolves to is trusted, as the operator
// trusts their own DNS). The process's own listeners stay denied even
// then.
package egress

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// ErrDenied is what a connection the policy refuses fails with (errors.Is).
var ErrDenied = errors.New("denied by egress policy")

// DeniedError says which connection was refused and why.
type DeniedError struct {
	// Host is the name being connected to ("" when the address was given
	// as such).
	Host string
	// Addr is the address the connection would have gone to.
	Addr netip.AddrPort
	// Reason is the class of address, e.g. "loopback" or "private".
	Reason string
}

func (e *DeniedError) Error() string {
	target := e.Addr.String()
	if e.Host != "" && e.Host != e.Addr.Addr().String() {
		target = fmt.Sprintf("%s (%s)", e.Addr, e.Host)
	}
	return fmt.Sprintf("connect to %s: %s: %s", target, ErrDenied, e.what())
}

// selfReason is the Reason for the process's own listeners.
const selfReason = "this process's own listener"

// what names the refused target's class: "loopback address", or the
// process's own listener.
func (e *DeniedError) what() string {
	if e.Reason == selfReason {
		return e.Reason
	}
	return e.Reason + " address"
}

// Is makes errors.Is(err, ErrDenied) true.
func (e *DeniedError) Is(target error) bool { return target == ErrDenied }

// Config is what an operator allows beyond public addresses. The zero
// value is the default policy.
type Config struct {
	// Allow lists internal targets that may be reached. Each entry is one
	// of: a CIDR ("10.20.0.0/16", "fd00:1::/64"), an address ("10.0.0.7"),
	// an address and port ("10.0.0.7:8080", "[fd00::7]:443"), a host name
	// ("hooks.internal"), or a host name and port ("hooks.internal:8443").
	// A host name is matched exactly (case-insensitive) against the name
	// being connected to; there are no wildcards (a range is a CIDR).
	Allow []string
	// Self are the listeners of this process (its API, its metrics, in dev
	// mode its embedded NATS and PostgreSQL): never reachable, whatever
	// Allow says. An unspecified address (0.0.0.0, ::) stands for every
	// address of the host.
	Self []netip.AddrPort
	// Resolver resolves host names (nil: net.DefaultResolver). Tests point
	// it at their own DNS server.
	Resolver *net.Resolver
}

// ParseList splits a comma-separated allow-list, as --egress-allow and
// JETJOB_EGRESS_ALLOW give it; blanks around entries are dropped.
func ParseList(s string) []string {
	var out []string
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// Validate reports every entry of Allow that is not one of the accepted
// forms, so that a typo stops the process at start.
func (c Config) Validate() error {
	_, err := parseAllow(c.Allow)
	return err
}

// Policy decides whether a connection may be made. It is safe for
// concurrent use and does not change once made.
type Policy struct {
	prefixes []netip.Prefix
	addrs    []netip.AddrPort
	names    map[string][]uint16 // exact host name -> ports (0: any)
	self     []netip.AddrPort
	// local are the host's own addresses, for a Self listener on an
	// unspecified address.
	local    map[netip.Addr]bool
	resolver *net.Resolver
}

// New validates cfg and returns its policy.
func New(cfg Config) (*Policy, error) {
	p, err := parseAllow(cfg.Allow)
	if err != nil {
		return nil, err
	}
	for _, s := range cfg.Self {
		s = netip.AddrPortFrom(s.Addr().Unmap().WithZone(""), s.Port())
		p.self = append(p.self, s)
		if s.Addr().IsUnspecified() && p.local == nil {
			p.local = localAddrs()
		}
	}
	p.resolver = cfg.Resolver
	return p, nil
}

// Default is the policy with nothing allowed beyond public addresses and
// no listener of its own to protect.
func Default() *Policy {
	p, _ := New(Config{})
	return p
}

// localAddrs are the addresses of the host's interfaces. An error leaves
// the set empty: loopback, the usual way to one's own listeners, is
// recognised without it.
func localAddrs() map[netip.Addr]bool {
	out := map[netip.Addr]bool{}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok {
				out[ip.Unmap()] = true
			}
		}
	}
	return out
}

// parseAllow parses the entries of Config.Allow into a Policy.
func parseAllow(entries []string) (*Policy, error) {
	p := &Policy{names: map[string][]uint16{}}
	var errs []error
	for _, e := range entries {
		bad := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("egress allow entry %q: %s", e, fmt.Sprintf(format, args...)))
		}
		e := strings.TrimSpace(e)
		if strings.Contains(e, "://") {
			bad("want a host or address, not a URL")
			continue
		}
		if pre, err := netip.ParsePrefix(e); err == nil {
			p.prefixes = append(p.prefixes, unmapPrefix(pre.Masked()))
			continue
		} else if strings.Contains(e, "/") {
			bad("not a CIDR (want e.g. 10.0.0.0/8 or fd00::/8): %v", err)
			continue
		}
		if a, err := netip.ParseAddr(e); err == nil {
			a = a.Unmap().WithZone("")
			p.prefixes = append(p.prefixes, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		if ap, err := netip.ParseAddrPort(e); err == nil {
			if ap.Port() == 0 {
				bad("port 0")
				continue
			}
			p.addrs = append(p.addrs, netip.AddrPortFrom(ap.Addr().Unmap().WithZone(""), ap.Port()))
			continue
		}
		host, port := e, uint16(0)
		if h, ps, err := net.SplitHostPort(e); err == nil {
			n, err := strconv.ParseUint(ps, 10, 16)
			if err != nil || n == 0 {
				bad("port %q: want 1 to 65535", ps)
				continue
			}
			host, port = h, uint16(n)
		}
		name, err := hostName(host)
		if err != nil {
			bad("%v", err)
			continue
		}
		if !slices.Contains(p.names[name], port) {
			p.names[name] = append(p.names[name], port)
		}
	}
	return p, errors.Join(errs...)
}

// hostName checks an exact DNS host name and returns it in the form
// names are compared in: lower case, no final dot.
func hostName(h string) (string, error) {
	const want = "want a CIDR, an IP address (with an optional :port) or an exact host name (with an optional :port)"
	h = strings.ToLower(strings.TrimSuffix(h, "."))
	switch {
	case h == "":
		return "", errors.New("empty; " + want)
	case strings.Contains(h, "*"):
		return "", errors.New("wildcards are not allowed (a range of addresses is a CIDR); " + want)
	case len(h) > 253:
		return "", errors.New("host name longer than 253 characters")
	}
	labels := strings.Split(h, ".")
	if strings.Trim(labels[len(labels)-1], "0123456789") == "" {
		// 300.1.1.1 or 10.1: neither an address nor a name.
		return "", fmt.Errorf("%q is not an IP address nor a host name; %s", h, want)
	}
	for _, label := range labels {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return "", fmt.Errorf("%q is not a host name; %s", h, want)
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return "", fmt.Errorf("%q is not a host name; %s", h, want)
			}
		}
	}
	return h, nil
}

// unmapPrefix writes an IPv4-mapped IPv6 prefix (::ffff:10.0.0.0/104) as
// the IPv4 prefix it is, since addresses are unmapped before they are
// compared.
func unmapPrefix(p netip.Prefix) netip.Prefix {
	if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
		return netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p
}

// Check decides whether a connection to addr may be made, addr given as
// such (not reached through a host name). A refusal is a *DeniedError.
func (p *Policy) Check(addr netip.AddrPort) error { return p.decide("", addr) }

// CheckHost decides whether a connection to addr may be made when addr is
// what host resolved to (host may also be the address itself). A host
// name allowed exactly in Config.Allow may resolve to any address but the
// process's own listeners.
func (p *Policy) CheckHost(host string, addr netip.AddrPort) error { return p.decide(host, addr) }

// decide is the one decision: the process's own listeners are refused,
// then what the operator allowed passes, then any address that is not
// globally reachable is refused.
func (p *Policy) decide(host string, ap netip.AddrPort) error {
	a := ap.Addr().Unmap().WithZone("")
	ap = netip.AddrPortFrom(a, ap.Port())
	if !a.IsValid() {
		return &DeniedError{Host: host, Addr: ap, Reason: "invalid"}
	}
	if p.isSelf(ap) {
		return &DeniedError{Host: host, Addr: ap, Reason: selfReason}
	}
	if p.allowed(host, ap) {
		return nil
	}
	if reason := Reserved(a); reason != "" {
		return &DeniedError{Host: host, Addr: ap, Reason: reason}
	}
	return nil
}

func (p *Policy) isSelf(ap netip.AddrPort) bool {
	a := ap.Addr()
	for _, s := range p.self {
		if s.Port() != ap.Port() {
			continue
		}
		if s.Addr() == a {
			return true
		}
		// A listener on 0.0.0.0 or :: (dual-stack) answers on every
		// address of the host, all of 127/8 included.
		if s.Addr().IsUnspecified() && (a.IsLoopback() || a.IsUnspecified() || p.local[a]) {
			return true
		}
	}
	return false
}

func (p *Policy) allowed(host string, ap netip.AddrPort) bool {
	for _, pre := range p.prefixes {
		if pre.Contains(ap.Addr()) {
			return true
		}
	}
	if slices.Contains(p.addrs, ap) {
		return true
	}
	if host == "" {
		return false
	}
	ports, ok := p.names[strings.ToLower(strings.TrimSuffix(host, "."))]
	return ok && (slices.Contains(ports, 0) || slices.Contains(ports, ap.Port()))
}
