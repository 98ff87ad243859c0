// Package smtptest is a small SMTP server for the tests of alarm emails:
// EHLO, STARTTLS or implicit TLS when asked for, AUTH PLAIN, MAIL, RCPT,
// DATA, RSET, NOOP and QUIT, recording every message it is given. It is
// for tests only: no non-test file imports it.
package smtptest

import (
	"bufio"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/jetjob/jetjob/internal/testpki"
)

// Message is one mail as the server received it.
type Message struct {
	// Data is the message, dot-unstuffed: headers, a blank line, the body.
	Data     string
	TLS      bool   // the DATA came over TLS
	AuthUser string // from AUTH PLAIN, "" if none
}

// Options say how the server talks.
type Options struct {
	// Port to listen on, 0 for any.
	Port int
	// ImplicitTLS speaks TLS from the first byte (as on port 465);
	// STARTTLS offers the upgrade after EHLO.
	ImplicitTLS, STARTTLS bool
}

// Server is a running server; it stops with the test.
type Server struct {
	// IP is the loopback address it listens on, one of its own; Port its
	// port.
	IP   net.IP
	Port int
	// Roots trusts the server's self-signed certificate.
	Roots *x509.CertPool

	o    Options
	ln   net.Listener
	cert tls.Certificate
	mu   sync.Mutex
	msgs []Message
}

// Start starts a server that lives until the test ends.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	ln, ip := listenLoopback(t, o.Port)
	cert, roots, err := testpki.SelfSigned(ip)
	if err != nil {
		t.Fatal(err)
	}
	if o.ImplicitTLS {
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}})
	}
	s := &Server{IP: ip, Port: ln.Addr().(*net.TCPAddr).Port, Roots: roots, o: o, ln: ln, cert: cert}
	t.Cleanup(func() { ln.Close() })
	go s.accept()
	return s
}

// Messages are the messages received so far.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.msgs...)
}

func (s *Server) accept() {
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			return
		}
		go s.serve(conn)
	}
}

func (s *Server) serve(conn net.Conn) {
	defer func() { conn.Close() }()
	_, isTLS := conn.(*tls.Conn)
	r := bufio.NewReader(conn)
	say := func(line string) { fmt.Fprintf(conn, "%s\r\n", line) }
	say("220 test ESMTP")
	var user string
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		cmd := strings.ToUpper(strings.TrimSpace(line))
		switch {
		case strings.HasPrefix(cmd, "EHLO"):
			if s.o.STARTTLS && !isTLS {
				say("250-test")
				say("250-STARTTLS")
				say("250 AUTH PLAIN")
			} else {
				say("250-test")
				say("250 AUTH PLAIN")
			}
		case strings.HasPrefix(cmd, "STARTTLS"):
			say("220 go ahead")
			tc := tls.Server(conn, &tls.Config{Certificates: []tls.Certificate{s.cert}})
			if err := tc.Handshake(); err != nil {
				return
			}
			conn, isTLS, r = tc, true, bufio.NewReader(tc)
		case strings.HasPrefix(cmd, "AUTH PLAIN"):
			// "AUTH PLAIN <base64 of \0user\0password>"
			fields := strings.Fields(strings.TrimSpace(line))
			if len(fields) == 3 {
				if dec, err := decodeBase64(fields[2]); err == nil {
					if parts := strings.Split(dec, "\x00"); len(parts) == 3 {
						user = parts[1]
					}
				}
			}
			say("235 ok")
		case strings.HasPrefix(cmd, "DATA"):
			say("354 go ahead")
			var b strings.Builder
			for {
				l, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if l == ".\r\n" {
					break
				}
				b.WriteString(strings.TrimPrefix(l, ".")) // dot-unstuffing
			}
			s.mu.Lock()
			s.msgs = append(s.msgs, Message{Data: b.String(), TLS: isTLS, AuthUser: user})
			s.mu.Unlock()
			say("250 queued")
		case strings.HasPrefix(cmd, "QUIT"):
			say("221 bye")
			return
		default: // HELO, MAIL, RCPT, RSET, NOOP
			say("250 ok")
		}
	}
}

func decodeBase64(s string) (string, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	return string(b), err
}

// listenLoopback listens on port (0: any) of a loopback address of its
// own (127.x.y.z), so that no other listener of the host is in the way.
func listenLoopback(t testing.TB, port int) (net.Listener, net.IP) {
	t.Helper()
	var lastErr error
	for range 20 {
		b := make([]byte, 3)
		_, _ = rand.Read(b)
		ip := net.IPv4(127, b[0]|1, b[1], b[2]|1)
		ln, err := net.Listen("tcp", net.JoinHostPort(ip.String(), fmt.Sprint(port)))
		if err == nil {
			return ln, ip
		}
		lastErr = err
	}
	t.Fatalf("no loopback address free for port %d: %v", port, lastErr)
	return nil, nil
}
