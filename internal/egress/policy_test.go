package egress

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

// The decision, without any connection: what the default denies and why,
// what each form of allow entry lets through, and that the process's own
// listeners stay denied whatever is allowed.
func TestDecide(t *testing.T) {
	def := Default()
	allow, err := New(Config{Allow: []string{"10.0.0.0/8", "192.168.1.5", "172.16.0.9:8080", "[fd00::9]:443",
		"hooks.internal", "API.internal:8443", "::ffff:192.168.7.0/120"}})
	if err != nil {
		t.Fatal(err)
	}
	self, err := New(Config{Allow: []string{"127.0.0.0/8", "::1", "10.0.0.0/8", "hooks.internal"},
		Self: []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:8080"), netip.MustParseAddrPort("[::]:9090")}})
	if err != nil {
		t.Fatal(err)
	}
	self.local = map[netip.Addr]bool{netip.MustParseAddr("10.1.1.1"): true} // as if an interface had it

	cases := []struct {
		name   string
		p      *Policy
		host   string
		addr   string
		reason string // "" allowed
	}{
		// Public addresses pass by default.
		{"public IPv4", def, "", "93.184.215.14:443", ""},
		{"public IPv6", def, "", "[2606:4700::1111]:443", ""},
		{"next to 172.16/12", def, "", "172.32.0.1:80", ""},
		{"next to CGNAT", def, "", "100.128.0.1:80", ""},
		{"NAT64 of a public address", def, "", "[64:ff9b::808:808]:53", ""},
		{"public name", def, "example.com", "93.184.215.14:443", ""},

		// Everything else is denied, with its class.
		{"loopback", def, "", "127.0.0.1:5432", "loopback"},
		{"loopback, all of 127/8", def, "", "127.1.2.3:80", "loopback"},
		{"IPv6 loopback", def, "", "[::1]:80", "loopback"},
		{"IPv4-mapped loopback", def, "", "[::ffff:127.0.0.1]:80", "loopback"},
		{"name resolving to loopback", def, "localhost", "127.0.0.1:80", "loopback"},
		{"unspecified", def, "", "0.0.0.0:80", "unspecified"},
		{"this network", def, "", "0.1.2.3:80", "unspecified"},
		{"IPv6 unspecified", def, "", "[::]:80", "unspecified"},
		{"10/8", def, "", "10.1.2.3:80", "private"},
		{"172.16/12", def, "", "172.31.255.255:80", "private"},
		{"192.168/16", def, "", "192.168.1.1:80", "private"},
		{"IPv4-mapped private", def, "", "[::ffff:10.0.0.1]:80", "private"},
		{"CGNAT", def, "", "100.64.0.1:80", "shared (CGNAT)"},
		{"metadata", def, "", "169.254.169.254:80", "cloud metadata"},
		{"IPv4-mapped metadata", def, "", "[::ffff:169.254.169.254]:80", "cloud metadata"},
		{"AWS IPv6 metadata", def, "", "[fd00:ec2::254]:80", "cloud metadata"},
		{"Alibaba metadata", def, "", "100.100.100.200:80", "cloud metadata"},
		{"link-local", def, "", "169.254.1.1:80", "link-local"},
		{"IPv6 link-local", def, "", "[fe80::1]:80", "link-local"},
		{"IPv6 link-local with zone", def, "", "[fe80::1%eth0]:80", "link-local"},
		{"unique local", def, "", "[fd12:3456::1]:80", "private"},
		{"fc00::/7 low half", def, "", "[fc00::1]:80", "private"},
		{"site-local", def, "", "[fec0::1]:80", "private"},
		{"multicast", def, "", "224.0.0.1:80", "multicast"},
		{"IPv6 multicast", def, "", "[ff02::1]:80", "multicast"},
		{"broadcast", def, "", "255.255.255.255:80", "reserved"},
		{"class E", def, "", "240.0.0.1:80", "reserved"},
		{"documentation", def, "", "192.0.2.1:80", "documentation"},
		{"benchmarking", def, "", "198.18.0.1:80", "benchmarking"},
		{"IPv4-compatible", def, "", "[::127.0.0.1]:80", "reserved"},
		{"NAT64 of loopback", def, "", "[64:ff9b::127.0.0.1]:80", "loopback (IPv4 in IPv6)"},
		{"NAT64 of metadata", def, "", "[64:ff9b::a9fe:a9fe]:80", "cloud metadata (IPv4 in IPv6)"},
		{"local-use NAT64", def, "", "[64:ff9b:1::1]:80", "reserved"},
		{"6to4 of loopback", def, "", "[2002:7f00:1::1]:80", "loopback (IPv4 in IPv6)"},
		{"6to4 of private", def, "", "[2002:c0a8:101::1]:80", "private (IPv4 in IPv6)"},

		// Allow entries.
		{"CIDR", allow, "", "10.9.9.9:80", ""},
		{"address, any port", allow, "", "192.168.1.5:1", ""},
		{"next address", allow, "", "192.168.1.6:80", "private"},
		{"address and port", allow, "", "172.16.0.9:8080", ""},
		{"address, other port", allow, "", "172.16.0.9:8081", "private"},
		{"IPv6 address and port", allow, "", "[fd00::9]:443", ""},
		{"IPv4-mapped CIDR", allow, "", "192.168.7.9:80", ""},
		{"exact name to loopback", allow, "hooks.internal", "127.0.0.1:9", ""},
		{"exact name, case and final dot", allow, "HOOKS.Internal.", "10.0.0.1:9", ""},
		{"the name's address, named as such", allow, "", "127.0.0.1:9", "loopback"},
		{"subdomain of an allowed name", allow, "evil.hooks.internal", "127.0.0.1:9", "loopback"},
		{"name and port", allow, "api.internal", "127.0.0.1:8443", ""},
		{"name, other port", allow, "api.internal", "127.0.0.1:8444", "loopback"},
		{"metadata not in the allowed CIDR", allow, "", "169.254.169.254:80", "cloud metadata"},

		// Own listeners.
		{"own listener", self, "", "127.0.0.1:8080", "this process's own listener"},
		{"own listener by an allowed name", self, "hooks.internal", "127.0.0.1:8080", "this process's own listener"},
		{"another port of an allowed range", self, "", "127.0.0.1:8081", ""},
		{"listener on ::, by 127.0.0.5", self, "", "127.0.0.5:9090", "this process's own listener"},
		{"listener on ::, by ::1", self, "", "[::1]:9090", "this process's own listener"},
		{"listener on ::, by 0.0.0.0", self, "", "0.0.0.0:9090", "this process's own listener"},
		{"listener on ::, by an interface address", self, "", "10.1.1.1:9090", "this process's own listener"},
		{"listener on ::, by an IPv4-mapped address", self, "", "[::ffff:10.1.1.1]:9090", "this process's own listener"},
		{"another host's same port", self, "", "10.1.1.2:9090", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.p.CheckHost(c.host, netip.MustParseAddrPort(c.addr))
			var d *DeniedError
			switch {
			case c.reason == "" && err != nil:
				t.Errorf("%s via %q: %v, want allowed", c.addr, c.host, err)
			case c.reason == "":
			case !errors.Is(err, ErrDenied) || !errors.As(err, &d):
				t.Errorf("%s via %q: %v, want a *DeniedError (%s)", c.addr, c.host, err, c.reason)
			case d.Reason != c.reason:
				t.Errorf("%s via %q: reason %q, want %q (%v)", c.addr, c.host, d.Reason, c.reason, err)
			}
			if c.host == "" {
				if got := c.p.Check(netip.MustParseAddrPort(c.addr)); (got == nil) != (err == nil) {
					t.Errorf("Check(%s) = %v but CheckHost(\"\", ...) = %v", c.addr, got, err)
				}
			}
		})
	}
}

// A refusal says where and why, naming the policy, in one line.
func TestDeniedErrorText(t *testing.T) {
	err := Default().CheckHost("db.example.com", netip.MustParseAddrPort("10.0.0.5:5432"))
	if want := "connect to 10.0.0.5:5432 (db.example.com): denied by egress policy: private address"; err == nil || err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}

// Allow entries are checked at start: every wrong one is named.
func TestConfigValidate(t *testing.T) {
	good := []string{"10.0.0.0/8", "fd00::/8", "10.0.0.7", "::1", "10.0.0.7:8080", "[fd00::7]:443",
		"hooks.internal", "hooks.internal:8443", "localhost", "my_host.corp.", "fe80::1%eth0"}
	if err := (Config{Allow: good}).Validate(); err != nil {
		t.Errorf("valid entries refused: %v", err)
	}
	for entry, want := range map[string]string{
		"*.example.com":        "wildcards are not allowed",
		"*":                    "wildcards are not allowed",
		"10.0.0.0/33":          "not a CIDR",
		"10.0.0.1:0":           "port 0",
		"hooks.internal:0":     `port "0"`,
		"hooks.internal:99999": `port "99999"`,
		"300.1.1.1":            "not an IP address nor a host name",
		"http://x.example":     "not a URL",
		"a b":                  "not a host name",
		"-a.example":           "not a host name",
		"a..example":           "not a host name",
	} {
		err := Config{Allow: []string{"10.0.0.0/8", entry}}.Validate()
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `"`+entry+`"`) {
			t.Errorf("entry %q: %v, want an error naming it with %q", entry, err, want)
		}
	}
	if err := (Config{Allow: []string{"*", "10.0.0.1:0"}}).Validate(); err == nil || strings.Count(err.Error(), "egress allow entry") != 2 {
		t.Errorf("two bad entries: %v, want both named", err)
	}
}

func TestParseList(t *testing.T) {
	got := ParseList(" 10.0.0.0/8, hooks.internal:8443 ,,")
	if len(got) != 2 || got[0] != "10.0.0.0/8" || got[1] != "hooks.internal:8443" {
		t.Errorf("ParseList = %q", got)
	}
	if got := ParseList(""); got != nil {
		t.Errorf("ParseList(\"\") = %q, want none", got)
	}
}
