package alarm

import (
	"context"
	"encoding/base64"
	"io"
	"mime"
	"mime/quotedprintable"
	"net/mail"
	"strings"
	"testing"
	"time"

	"github.com/jetjob/jetjob/scheduler/internal/smtptest"
)

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
			srv := smtptest.Start(t, smtptest.Options{Port: c.port, ImplicitTLS: c.implicit, STARTTLS: c.startTL})
			port := srv.Port
			if c.implicit {
				// Port 465 itself would need root to listen on: the
				// server's own port stands in for it.
				implicitTLSPort = port
				t.Cleanup(func() { implicitTLSPort = ImplicitTLSPort })
			}
			s := newSender(t, Config{Timeout: 10 * time.Second, SMTP: SMTP{Host: srv.IP.String(), Port: port,
				User: c.user, Password: "pw", From: "jetjob@example.com", StartTLS: c.startTL}})
			s.rootCAs = srv.Roots
			a := testAlarm()
			a.JobName = jobName
			a.Message = "line one\n.line starting with a dot\nÜbel: 失败"
			ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
			defer cancel()
			ch := Channel{Kind: KindEmail, Name: "job-7-alarm-email", Target: "ops@example.com, oncall@example.com"}
			if err := s.Notify(ctx, ch, a, "").Err; err != nil {
				t.Fatalf("send: %v", err)
			}
			msgs := srv.Messages()
			if len(msgs) != 1 {
				t.Fatalf("%d messages received, want 1", len(msgs))
			}
			got := msgs[0]
			if wantTLS := c.implicit || c.startTL; got.TLS != wantTLS {
				t.Errorf("message over TLS: %v, want %v", got.TLS, wantTLS)
			}
			if got.AuthUser != c.user {
				t.Errorf("authenticated as %q, want %q", got.AuthUser, c.user)
			}
			m, err := mail.ReadMessage(strings.NewReader(got.Data))
			if err != nil {
				t.Fatalf("received mail does not parse: %v\n%s", err, got.Data)
			}
			raw := m.Header.Get("Subject")
			if strings.ContainsFunc(raw, func(r rune) bool { return r > 0x7e }) || !strings.Contains(raw, "=?UTF-8?") {
				t.Errorf("raw Subject %q: want RFC 2047 encoded words, ASCII only", raw)
			}
			subj, err := new(mime.WordDecoder).DecodeHeader(raw)
			if want := "[jetjob] retries_exhausted: job " + jobName + " (7) run 1234"; err != nil || subj != want {
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
	srv := smtptest.Start(t, smtptest.Options{STARTTLS: true})
	s := newSender(t, Config{Timeout: 5 * time.Second, SMTP: SMTP{Host: srv.IP.String(), Port: srv.Port, StartTLS: true}})
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	if err := s.Notify(ctx, Channel{Kind: KindEmail, Target: "ops@example.com"}, testAlarm(), "").Err; err == nil {
		t.Error("mail sent over STARTTLS to an untrusted certificate")
	}
	if n := len(srv.Messages()); n != 0 {
		t.Errorf("%d messages received, want none", n)
	}
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
