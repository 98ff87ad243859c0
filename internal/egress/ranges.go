package egress

import "net/netip"

// reserved are the ranges that are not globally reachable (the IANA
// special-purpose address registries), with the reason a refusal names.
// The order matters only for the reason: the metadata endpoints come
// before the ranges that hold them.
var reserved = []struct {
	prefix netip.Prefix
	reason string
}{
	// Cloud instance metadata: credentials of the host's role, the
	// first thing a server-side request forgery goes for.
	{netip.MustParsePrefix("169.254.169.254/32"), "cloud metadata"},
	{netip.MustParsePrefix("fd00:ec2::254/128"), "cloud metadata"},  // AWS over IPv6
	{netip.MustParsePrefix("100.100.100.200/32"), "cloud metadata"}, // Alibaba Cloud

	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified"}, // "this network": 0.0.0.0 reaches the host itself
	{netip.MustParsePrefix("10.0.0.0/8"), "private"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared (CGNAT)"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private"},
	{netip.MustParsePrefix("192.0.0.0/24"), "reserved"},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation"},
	{netip.MustParsePrefix("192.88.99.0/24"), "reserved"}, // 6to4 relay anycast, deprecated
	{netip.MustParsePrefix("192.168.0.0/16"), "private"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"}, // with the broadcast address

	{netip.MustParsePrefix("::/128"), "unspecified"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("::/96"), "reserved"},    // IPv4-compatible, deprecated
	{netip.MustParsePrefix("100::/64"), "reserved"}, // discard-only
	// Local-use NAT64, where the IPv4 address may sit at several offsets:
	// refused whole (the well-known prefix below is checked by its IPv4).
	{netip.MustParsePrefix("64:ff9b:1::/48"), "reserved"},
	{netip.MustParsePrefix("2001:db8::/32"), "documentation"},
	{netip.MustParsePrefix("fc00::/7"), "private"}, // unique local
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("fec0::/10"), "private"}, // site-local, deprecated
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
}

// Address forms of IPv6 that carry an IPv4 address a gateway translates
// to: such an address is what its IPv4 address is. (IPv4-mapped
// addresses, ::ffff:a.b.c.d, are unmapped before any check.)
var (
	nat64  = netip.MustParsePrefix("64:ff9b::/96") // well-known prefix: IPv4 in the last 32 bits
	sixTo4 = netip.MustParsePrefix("2002::/16")    // 6to4: IPv4 right after the prefix
)

// Reserved returns why a is not a public address ("loopback", "private",
// "cloud metadata", ...), or "" when it is one. It is the default deny
// list of every Policy.
func Reserved(a netip.Addr) string {
	a = a.Unmap().WithZone("")
	if !a.IsValid() {
		return "invalid"
	}
	for _, r := range reserved {
		if r.prefix.Contains(a) {
			return r.reason
		}
	}
	b := a.As16()
	var v4 netip.Addr
	switch {
	case nat64.Contains(a):
		v4 = netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	case sixTo4.Contains(a):
		v4 = netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]})
	default:
		return ""
	}
	if reason := Reserved(v4); reason != "" {
		return reason + " (IPv4 in IPv6)"
	}
	return ""
}
