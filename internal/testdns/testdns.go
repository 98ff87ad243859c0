// Package testdns is a DNS server for tests: it answers A and AAAA queries
// for the names a test sets, over UDP on 127.0.0.1, and Resolver points a
// net.Resolver at it. Tests use it to make a host name resolve where they
// need (to a loopback address, to a private one, to something else on the
// second lookup) through the real resolver and dialer, with no change to
// the machine's /etc/hosts. It is for tests only: no non-test file
// imports it.
package testdns

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// Server answers queries for the names set with Set; every other name is
// NXDOMAIN.
type Server struct {
	conn net.PacketConn

	mu      sync.Mutex
	answers map[string][]netip.Addr // by lower-case name with the final dot
	queries map[string]int          // A queries seen, by name
}

// Start starts a server that stops when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{conn: conn, answers: map[string][]netip.Addr{}, queries: map[string]int{}}
	done := make(chan struct{})
	go func() { defer close(done); s.serve() }()
	t.Cleanup(func() { conn.Close(); <-done })
	return s
}

// Set makes name resolve to addrs from now on (none: NXDOMAIN).
func (s *Server) Set(name string, addrs ...netip.Addr) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answers[fqdn(name)] = addrs
}

// Lookups says how many A queries name has had.
func (s *Server) Lookups(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queries[fqdn(name)]
}

// Resolver sends every DNS query to the server. Names in /etc/hosts
// (localhost) still resolve from there first, as they do in production.
func (s *Server) Resolver() *net.Resolver {
	addr := s.conn.LocalAddr().String()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", addr)
	}}
}

func fqdn(name string) string { return strings.ToLower(strings.TrimSuffix(name, ".")) + "." }

func (s *Server) serve() {
	buf := make([]byte, 1500)
	for {
		n, from, err := s.conn.ReadFrom(buf)
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			continue
		}
		if reply, ok := s.answer(buf[:n]); ok {
			_, _ = s.conn.WriteTo(reply, from)
		}
	}
}

// answer builds the reply to one query; ok is false for what is not a
// query (then nothing is sent).
func (s *Server) answer(query []byte) (reply []byte, ok bool) {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil || h.Response {
		return nil, false
	}
	q, err := p.Question()
	if err != nil {
		return nil, false
	}
	name := strings.ToLower(q.Name.String())
	s.mu.Lock()
	addrs, known := s.answers[name]
	if q.Type == dnsmessage.TypeA {
		s.queries[name]++
	}
	s.mu.Unlock()

	rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired,
		RecursionAvailable: true}
	if !known || len(addrs) == 0 {
		rh.RCode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, rh)
	b.EnableCompression()
	if err := b.StartQuestions(); err != nil {
		return nil, false
	}
	if err := b.Question(q); err != nil {
		return nil, false
	}
	if err := b.StartAnswers(); err != nil {
		return nil, false
	}
	for _, a := range addrs {
		rr := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 0}
		switch {
		case q.Type == dnsmessage.TypeA && a.Is4():
			err = b.AResource(rr, dnsmessage.AResource{A: a.As4()})
		case q.Type == dnsmessage.TypeAAAA && a.Is6():
			err = b.AAAAResource(rr, dnsmessage.AAAAResource{AAAA: a.As16()})
		}
		if err != nil {
			return nil, false
		}
	}
	reply, err = b.Finish()
	return reply, err == nil
}
