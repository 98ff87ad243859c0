package alarm

import (
	"context"
	"crypto/tls"
	"fmt"
	"strings"

	mail "github.com/wneessen/go-mail"
)

// ImplicitTLSPort is the SMTP submission port that speaks TLS from the first
// byte (RFC 8314). Mail servers that offer only this port never answer the
// plaintext greeting STARTTLS needs, so the port alone decides the mode:
// there is no separate setting to get wrong.
const ImplicitTLSPort = 465

// implicitTLSPort is ImplicitTLSPort; tests point it at the port of their
// own TLS server, which needs no privilege to listen on.
var implicitTLSPort = ImplicitTLSPort

// sendMail sends m through the configured server. Port 465 gets implicit
// TLS; any other port plain SMTP, upgraded with STARTTLS (required, never
// opportunistic) when SMTP.StartTLS is set.
func (s *Sender) sendMail(ctx context.Context, m *mail.Msg) error {
	cfg := s.cfg.SMTP
	tlsConf := &tls.Config{ServerName: cfg.Host, MinVersion: tls.VersionTLS12, RootCAs: s.rootCAs}
	opts := []mail.Option{
		mail.WithPort(cfg.Port),
		mail.WithTLSConfig(tlsConf),
		mail.WithTimeout(s.cfg.Timeout),
	}
	switch {
	case cfg.Port == implicitTLSPort:
		opts = append(opts, mail.WithSSL())
	case cfg.StartTLS:
		opts = append(opts, mail.WithTLSPolicy(mail.TLSMandatory))
	default:
		opts = append(opts, mail.WithTLSPolicy(mail.NoTLS))
	}
	if cfg.User != "" {
		// PLAIN, as before; go-mail refuses it on a connection that is
		// neither encrypted nor to localhost, so a password never crosses
		// the network in the clear.
		opts = append(opts, mail.WithSMTPAuth(mail.SMTPAuthPlain),
			mail.WithUsername(cfg.User), mail.WithPassword(cfg.Password))
	}
	c, err := mail.NewClient(cfg.Host, opts...)
	if err != nil {
		return fmt.Errorf("SMTP client for %s:%d: %w", cfg.Host, cfg.Port, err)
	}
	if err := c.DialAndSendWithContext(ctx, m); err != nil {
		return fmt.Errorf("send to %s:%d: %w", cfg.Host, cfg.Port, err)
	}
	return nil
}

// message renders the mail. The subject carries the job name, which is any
// UTF-8: go-mail encodes it as an RFC 2047 encoded word when it is not plain
// ASCII, so mail clients show it as written instead of as mojibake. Line
// breaks are removed from header values so that a job name cannot inject
// headers.
func message(from string, to []string, subject, body string) (*mail.Msg, error) {
	m := mail.NewMsg()
	if err := m.From(from); err != nil {
		return nil, fmt.Errorf("from address %q: %w", from, err)
	}
	if err := m.To(to...); err != nil {
		return nil, fmt.Errorf("to addresses %q: %w", to, err)
	}
	m.Subject(strings.NewReplacer("\r", " ", "\n", " ").Replace(subject))
	m.SetDate()
	m.SetMessageID()
	m.SetUserAgent("jetjob-alarm/1")
	m.SetBodyString(mail.TypeTextPlain, body)
	return m, nil
}
