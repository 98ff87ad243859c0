package api_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
)

// A set-password link sets a user's password once: the user can then sign
// in with it, a second use is refused, an expired link is refused, and a
// new link voids the older one.
func TestPasswordLinks(t *testing.T) {
	srv, pool := server(t)
	ctx := context.Background()
	c, err := client.New(srv.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateUser(ctx, apiv1.UserCreate{Name: "imported"}); err != nil {
		t.Fatal(err)
	}
	l, err := c.PasswordLink(ctx, "imported", 0)
	if err != nil {
		t.Fatal(err)
	}
	if time.Until(l.ExpiresAt) < 71*time.Hour || time.Until(l.ExpiresAt) > 73*time.Hour {
		t.Errorf("expires at %s, want in 72 h", l.ExpiresAt)
	}
	if u, err := url.Parse(l.Path); err != nil || u.Path != "/set-password" || u.Query().Get("token") != l.Token {
		t.Errorf("path %q", l.Path)
	}
	var stored int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM password_links WHERE token_hash = sha256($1::bytea)`, []byte(l.Token)).Scan(&stored); err != nil || stored != 1 {
		t.Fatalf("the token's hash is stored %d times (%v)", stored, err)
	}
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM password_links WHERE encode(token_hash, 'escape') LIKE '%' || $1 || '%'`, l.Token).Scan(&stored); err != nil || stored != 0 {
		t.Fatalf("the token itself is stored (%d rows, %v)", stored, err)
	}

	anon, err := client.New(srv.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := anon.UsePasswordLink(ctx, l.Token, "short"); !isStatus(err, 400) {
		t.Fatalf("a password the policy refuses: %v, want 400", err)
	}
	if err := anon.UsePasswordLink(ctx, l.Token, "correct horse battery staple"); err != nil {
		t.Fatalf("first use: %v", err)
	}
	if _, _, err := anon.Login(ctx, "imported", "correct horse battery staple"); err != nil {
		t.Fatalf("sign in with the password set: %v", err)
	}
	if err := anon.UsePasswordLink(ctx, l.Token, "another long password"); !isStatus(err, 410) || !strings.Contains(err.Error(), "already used or expired") {
		t.Fatalf("second use: %v, want 410", err)
	}

	// Expired: a link of one minute, its expiry moved to the past.
	l2, err := c.PasswordLink(ctx, "imported", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE password_links SET expires_at = now() - interval '1 second' WHERE token_hash = sha256($1::bytea)`, []byte(l2.Token)); err != nil {
		t.Fatal(err)
	}
	if err := anon.UsePasswordLink(ctx, l2.Token, "another long password"); !isStatus(err, 410) {
		t.Fatalf("expired link: %v, want 410", err)
	}
	// A new link voids the one before.
	a, err := c.PasswordLink(ctx, "imported", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.PasswordLink(ctx, "imported", 0); err != nil {
		t.Fatal(err)
	}
	if err := anon.UsePasswordLink(ctx, a.Token, "another long password"); !isStatus(err, 410) {
		t.Fatalf("a link voided by a newer one: %v, want 410", err)
	}
	if _, err := c.PasswordLink(ctx, "nobody", 0); !isStatus(err, 404) {
		t.Fatalf("a link for no such user: %v, want 404", err)
	}
}
