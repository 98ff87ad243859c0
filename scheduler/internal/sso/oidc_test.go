package sso_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jetjob/jetjob/scheduler/internal/oidctest"
	"github.com/jetjob/jetjob/scheduler/internal/sso"
)

// provider is a real OpenID Provider and our client of it, verifying
// with the provider's published keys (discovery, JWKS).
func provider(t *testing.T) (*oidctest.Provider, *sso.OIDC) {
	t.Helper()
	op := oidctest.Start(t, oidctest.Options{ClientID: "jetjob", ClientSecret: "s"})
	c := &sso.Config{PublicURL: "https://jetjob.example.test", OIDC: []sso.OIDCConfig{{ID: "corp", Issuer: op.Issuer, ClientID: "jetjob"}}}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	o, err := sso.NewOIDC(c.OIDC[0], c.ClockSkew)
	if err != nil {
		t.Fatal(err)
	}
	return op, o
}

// claims are a valid ID token's claims for o's client.
func claims(op *oidctest.Provider) map[string]any {
	now := time.Now()
	return map[string]any{"iss": op.Issuer, "sub": "sub-1", "aud": "jetjob", "iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(),
		"nonce": "n-1", "preferred_username": "alice", "name": "Alice", "groups": []string{"jj-ops", "staff"}}
}

// Each way an ID token can be wrong is refused with its own reason; a
// token that expired within the allowed clock skew is still good.
func TestVerifyRefusesBadIDTokens(t *testing.T) {
	t.Parallel()
	op, o := provider(t)
	id, err := o.Verify(t.Context(), op.Sign(t, claims(op), true), "n-1", true)
	if err != nil || id.Name != "alice" || id.Subject != "sub-1" || len(id.Groups) != 2 || id.DisplayName != "Alice" {
		t.Fatalf("a good token: %+v, %v", id, err)
	}
	skewed := claims(op)
	skewed["exp"] = time.Now().Add(-30 * time.Second).Unix()
	if _, err := o.Verify(t.Context(), op.Sign(t, skewed, true), "n-1", true); err != nil {
		t.Fatalf("a token expired 30 s ago, within the 1 m skew: %v", err)
	}
	for _, c := range []struct {
		name   string
		edit   func(map[string]any)
		good   bool
		nonce  string
		reason string
	}{
		{"wrong audience", func(c map[string]any) { c["aud"] = "another-client" }, true, "n-1", "wrong audience"},
		{"expired", func(c map[string]any) { c["exp"] = time.Now().Add(-5 * time.Minute).Unix() }, true, "n-1", "expired at"},
		{"bad signature", func(map[string]any) {}, false, "n-1", "signature does not verify"},
		{"unknown issuer", func(c map[string]any) { c["iss"] = "https://idp.evil.example" }, true, "n-1", "unknown issuer"},
		{"nonce mismatch", func(map[string]any) {}, true, "n-2", "nonce does not match"},
		{"no user name", func(c map[string]any) { delete(c, "preferred_username") }, true, "n-1", `no "preferred_username" claim`},
	} {
		cl := claims(op)
		c.edit(cl)
		_, err := o.Verify(t.Context(), op.Sign(t, cl, c.good), c.nonce, true)
		var ref *sso.Refused
		if !errors.As(err, &ref) || !strings.Contains(ref.Reason, c.reason) {
			t.Errorf("%s: %v, want a refusal saying %q", c.name, err, c.reason)
		}
	}
}

// A key rotation at the provider is followed: a token signed with a key
// id not seen before makes the client fetch the provider's keys again.
func TestVerifyFollowsKeyRotation(t *testing.T) {
	t.Parallel()
	op, o := provider(t)
	if _, err := o.Verify(t.Context(), op.Sign(t, claims(op), true), "n-1", true); err != nil {
		t.Fatal(err)
	}
	op.RotateKey(t)
	if _, err := o.Verify(t.Context(), op.Sign(t, claims(op), true), "n-1", true); err != nil {
		t.Fatalf("a token signed with the new key: %v", err)
	}
}
