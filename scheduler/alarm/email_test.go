package alarm

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"fmt"
	"io"
	"math/big"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"strings"
	"sync"
	"testing"
	"time"
)

// selfSigned makes a certificate for ip and a pool that trusts it.
func selfSigned(t *testing.T, ip net.IP) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "jetjob test smtp"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{ip}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

// received is one mail as the SMTP server saw it.
type received struct {
	data     string
	tls      bool   // the DATA came over TLS
	authUser string // from AUTH PLAIN, "" if none
}

// smtpServer is a small SMTP server: EHLO, optional STARTTLS, AUTH PLAIN,
// MAIL, RCPT, DATA, RSET, NOOP, QUIT.
type smtpServer struct {
	ln       net.Listener
	cert     tls.Certificate
	starttls bool
	mu       sync.Mutex
	msgs     []received
}

func (s *smtpServer) accept() {
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			return
		}
		go s.serve(conn)
	}
}

func (s *smtpServer) serve(conn net.Conn) {
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
			if s.starttls && !isTLS {
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
			s.msgs = append(s.msgs, received{data: b.String(), tls: isTLS, authUser: user})
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

func (s *smtpServer) messages() []received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]received(nil), s.msgs...)
}

// listenLoopback listens on port (0: any) of a loopback address of its
// own (127.x.y.z), so that no other listener of the host is in the way.
func listenLoopback(t *testing.T, port int) (net.Listener, net.IP) {
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

func startSMTPServer(t *testing.T, port int, implicitTLS, starttls bool) (*smtpServer, net.IP, *x509.CertPool) {
	t.Helper()
	ln, ip := listenLoopback(t, port)
	cert, pool := selfSigned(t, ip)
	if implicitTLS {
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}})
	}
	s := &smtpServer{ln: ln, cert: cert, starttls: starttls}
	t.Cleanup(func() { ln.Close() })
	go s.accept()
	return s, ip, pool
}

// An alarm for a job whose name is not ASCII reaches the mail server over
// implicit TLS on port 465, over STARTTLS, and over plain SMTP, with a
// Subject header encoded per RFC 2047 that decodes back to the job name.
func TestAlarmEmail(t *testing.T) {
	const jobName = "報告-täglich"
	cases := []struct {
		name              string
		port              int
		implicit, startTL bool
		user              string
	}{
		{"implicit TLS on 465", 0, true, false, "alarms"},
		{"STARTTLS", 0, false, true, "alarms"},
		{"plain", 0, false, false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv, ip, roots := startSMTPServer(t, c.port, c.implicit, c.startTL)
			port := srv.ln.Addr().(*net.TCPAddr).Port
			if c.implicit {
				// Port 465 itself would need root to listen on: the
				// server's own port stands in for it.
				implicitTLSPort = port
				t.Cleanup(func() { implicitTLSPort = ImplicitTLSPort })
			}
			s := newSender(t, Config{Timeout: 10 * time.Second, SMTP: SMTP{Host: ip.String(), Port: port,
				User: c.user, Password: "pw", From: "jetjob@example.com", StartTLS: c.startTL}})
			s.rootCAs = roots
			a := testAlarm()
			a.JobName = jobName
			a.Message = "line one\n.line starting with a dot\nÜbel: 失败"
			ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
			defer cancel()
			if err := s.email(ctx, []string{"ops@example.com", "oncall@example.com"}, a); err != nil {
				t.Fatalf("send: %v", err)
			}
			msgs := srv.messages()
			if len(msgs) != 1 {
				t.Fatalf("%d messages received, want 1", len(msgs))
			}
			got := msgs[0]
			if wantTLS := c.implicit || c.startTL; got.tls != wantTLS {
				t.Errorf("message over TLS: %v, want %v", got.tls, wantTLS)
			}
			if got.authUser != c.user {
				t.Errorf("authenticated as %q, want %q", got.authUser, c.user)
			}
			m, err := mail.ReadMessage(strings.NewReader(got.data))
			if err != nil {
				t.Fatalf("received mail does not parse: %v\n%s", err, got.data)
			}
			raw := m.Header.Get("Subject")
			if strings.ContainsFunc(raw, func(r rune) bool { return r > 0x7e }) || !strings.Contains(raw, "=?UTF-8?") {
				t.Errorf("raw Subject %q: want RFC 2047 encoded words, ASCII only", raw)
			}
			subj, err := new(mime.WordDecoder).DecodeHeader(raw)
			if want := "[jetjob] FAILED: job " + jobName + " (7) run 1234"; err != nil || subj != want {
				t.Errorf("decoded Subject %q (%v), want %q", subj, err, want)
			}
			to, err := m.Header.AddressList("To")
			if err != nil || len(to) != 2 || to[0].Address != "ops@example.com" || to[1].Address != "oncall@example.com" {
				t.Errorf("To %v (%v)", to, err)
			}
			body, err := decodedBody(m)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"Job:        " + jobName, "\n.line starting with a dot", "Übel: 失败"} {
				if !strings.Contains(body, want) {
					t.Errorf("body lacks %q:\n%s", want, body)
				}
			}
		})
	}
}

// A STARTTLS server whose certificate the sender does not trust gets no
// mail, rather than the alarm going out over an unverified connection.
func TestAlarmEmailRefusesUntrustedCertificate(t *testing.T) {
	srv, ip, _ := startSMTPServer(t, 0, false, true)
	port := srv.ln.Addr().(*net.TCPAddr).Port
	s := newSender(t, Config{Timeout: 5 * time.Second, SMTP: SMTP{Host: ip.String(), Port: port, StartTLS: true}})
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	if err := s.email(ctx, []string{"ops@example.com"}, testAlarm()); err == nil {
		t.Error("mail sent over STARTTLS to an untrusted certificate")
	}
	if n := len(srv.messages()); n != 0 {
		t.Errorf("%d messages received, want none", n)
	}
}

func decodeBase64(s string) (string, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	return string(b), err
}

// decodedBody returns the text of a single-part mail, undoing its
// Content-Transfer-Encoding.
func decodedBody(m *mail.Message) (string, error) {
	var r io.Reader = m.Body
	switch strings.ToLower(m.Header.Get("Content-Transfer-Encoding")) {
	case "quoted-printable":
		r = quotedprintable.NewReader(r)
	case "base64":
		r = base64.NewDecoder(base64.StdEncoding, r)
	}
	b, err := io.ReadAll(r)
	return strings.ReplaceAll(string(b), "\r\n", "\n"), err
}
