package alarm

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/smtp"
	"strconv"
	"strings"
	"time"
)

// email sends the alarm as a plain-text mail to every address.
func (s *Sender) email(ctx context.Context, to []string, a *Alarm) error {
	cfg := s.cfg.SMTP
	addr := net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port))
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	}
	c, err := smtp.NewClient(conn, cfg.Host)
	if err != nil {
		conn.Close()
		return err
	}
	defer c.Close()
	if cfg.StartTLS {
		if err := c.StartTLS(&tls.Config{ServerName: cfg.Host}); err != nil {
			return fmt.Errorf("STARTTLS: %w", err)
		}
	}
	if cfg.User != "" {
		if err := c.Auth(smtp.PlainAuth("", cfg.User, cfg.Password, cfg.Host)); err != nil {
			return fmt.Errorf("auth: %w", err)
		}
	}
	if err := c.Mail(cfg.From); err != nil {
		return err
	}
	for _, rcpt := range to {
		if err := c.Rcpt(rcpt); err != nil {
			return fmt.Errorf("RCPT %s: %w", rcpt, err)
		}
	}
	w, err := c.Data()
	if err != nil {
		return err
	}
	if _, err := w.Write(message(cfg.From, to, a)); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return c.Quit()
}

// message renders the mail. Header values come from job names and run
// messages: line breaks are removed so they cannot inject headers.
func message(from string, to []string, a *Alarm) []byte {
	oneLine := func(s string) string { return strings.NewReplacer("\r", " ", "\n", " ").Replace(s) }
	var b strings.Builder
	fmt.Fprintf(&b, "From: %s\r\n", from)
	fmt.Fprintf(&b, "To: %s\r\n", strings.Join(to, ", "))
	fmt.Fprintf(&b, "Subject: [jetjob] %s: job %s (%d) run %d\r\n", a.Status, oneLine(a.JobName), a.JobID, a.RunID)
	fmt.Fprintf(&b, "Date: %s\r\n", time.Now().Format(time.RFC1123Z))
	b.WriteString("Content-Type: text/plain; charset=utf-8\r\n\r\n")
	fmt.Fprintf(&b, "Job:        %s (id %d, group %s)\r\n", oneLine(a.JobName), a.JobID, a.Group)
	fmt.Fprintf(&b, "Run:        %d (%s, attempt %d)\r\n", a.RunID, a.TriggerType, a.Attempt)
	fmt.Fprintf(&b, "Status:     %s\r\n", a.Status)
	fmt.Fprintf(&b, "Scheduled:  %s\r\n", a.ScheduledAt.UTC().Format(time.RFC3339))
	fmt.Fprintf(&b, "Finished:   %s\r\n", a.FinishedAt.UTC().Format(time.RFC3339))
	if a.ConsoleLink != "" {
		fmt.Fprintf(&b, "Console:    %s\r\n", a.ConsoleLink)
	}
	b.WriteString("\r\nMessage:\r\n")
	// net/smtp's data writer dot-stuffs lines that start with a dot.
	for _, line := range strings.Split(a.Message, "\n") {
		b.WriteString(strings.TrimRight(line, "\r") + "\r\n")
	}
	return []byte(b.String())
}
