package sso

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// Identity is who a provider says signed in.
type Identity struct {
	// Provider is the configuration's id of the provider.
	Provider string
	// Subject is the provider's stable name for the user (OIDC sub,
	// LDAP DN).
	Subject string
	// Name is the jetjob user name (the username claim, the LDAP login).
	Name        string
	DisplayName string
	Groups      []string
}

// Refused is a sign-in refused for a reason the user may read and the
// audit log keeps: never a token or a password.
type Refused struct {
	Provider string
	Reason   string
}

func (e *Refused) Error() string {
	return fmt.Sprintf("sign-in with %s refused: %s", e.Provider, e.Reason)
}

func refused(provider, format string, args ...any) *Refused {
	return &Refused{Provider: provider, Reason: fmt.Sprintf(format, args...)}
}

// OIDC is one OpenID provider. Discovery happens on first use (and again
// after a failure), so that a scheduler starts while its provider is
// down; go-oidc then fetches the provider's keys as tokens name them,
// which follows a key rotation.
type OIDC struct {
	cfg    OIDCConfig
	skew   time.Duration
	client *http.Client
	// now is the verifier's clock (tests move it).
	now func() time.Time

	mu   sync.Mutex
	prov *oidc.Provider
	meta struct {
		EndSession string `json:"end_session_endpoint"`
	}
}

// NewOIDC returns provider cfg, its ID tokens checked with skew of
// clock difference.
func NewOIDC(cfg OIDCConfig, skew time.Duration) (*OIDC, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("oidc %s: ca_file: %w", cfg.ID, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("oidc %s: ca_file %s holds no PEM certificate", cfg.ID, cfg.CAFile)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &OIDC{cfg: cfg, skew: skew, now: time.Now, client: &http.Client{Transport: tr, Timeout: 15 * time.Second}}, nil
}

// ID and Name are the configuration's.
func (o *OIDC) ID() string   { return o.cfg.ID }
func (o *OIDC) Name() string { return o.cfg.Name }

// Mapping is the provider's group mapping.
func (o *OIDC) Mapping() Mapping { return o.cfg.Mapping }

// SetClock replaces the verifier's clock (tests of expiry).
func (o *OIDC) SetClock(now func() time.Time) { o.now = now }

func (o *OIDC) ctx(ctx context.Context) context.Context { return oidc.ClientContext(ctx, o.client) }

// provider discovers the provider once. Its key set lives as long as the
// provider, so it gets a context no request ends.
func (o *OIDC) provider(ctx context.Context) (*oidc.Provider, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.prov != nil {
		return o.prov, nil
	}
	p, err := oidc.NewProvider(o.ctx(context.WithoutCancel(ctx)), o.cfg.Issuer)
	if err != nil {
		return nil, fmt.Errorf("oidc %s: discovery at %s: %w", o.cfg.ID, o.cfg.Issuer, err)
	}
	if err := p.Claims(&o.meta); err != nil {
		return nil, fmt.Errorf("oidc %s: discovery document: %w", o.cfg.ID, err)
	}
	o.prov = p
	return p, nil
}

func (o *OIDC) oauth(p *oidc.Provider, redirect string) *oauth2.Config {
	return &oauth2.Config{ClientID: o.cfg.ClientID, ClientSecret: o.cfg.ClientSecret, Endpoint: p.Endpoint(),
		RedirectURL: redirect, Scopes: append([]string{oidc.ScopeOpenID, "profile", "email"}, o.cfg.Scopes...)}
}

// AuthURL is where the browser goes to sign in: an authorization code
// request with state, nonce and the PKCE challenge of verifier.
func (o *OIDC) AuthURL(ctx context.Context, redirect, state, nonce, verifier string) (string, error) {
	p, err := o.provider(ctx)
	if err != nil {
		return "", err
	}
	return o.oauth(p, redirect).AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier)), nil
}

// Exchange redeems an authorization code (with the PKCE verifier) and
// verifies the ID token it brings against nonce.
func (o *OIDC) Exchange(ctx context.Context, code, redirect, verifier, nonce string) (Identity, error) {
	p, err := o.provider(ctx)
	if err != nil {
		return Identity{}, err
	}
	tok, err := o.oauth(p, redirect).Exchange(o.ctx(ctx), code, oauth2.VerifierOption(verifier))
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.ErrorCode != "" {
			return Identity{}, refused(o.cfg.ID, "the provider refused the authorization code (%s)", re.ErrorCode)
		}
		return Identity{}, fmt.Errorf("oidc %s: token request: %w", o.cfg.ID, err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return Identity{}, refused(o.cfg.ID, "the provider's answer holds no ID token")
	}
	return o.Verify(ctx, raw, nonce, true)
}

// Verify checks an ID token: signature against the provider's keys,
// issuer, audience (our client id) and expiry (with the clock skew
// allowed); with checkNonce, its nonce must be nonce. It returns who the
// token names.
func (o *OIDC) Verify(ctx context.Context, raw, nonce string, checkNonce bool) (Identity, error) {
	p, err := o.provider(ctx)
	if err != nil {
		return Identity{}, err
	}
	v := p.Verifier(&oidc.Config{ClientID: o.cfg.ClientID, Now: func() time.Time { return o.now().Add(-o.skew) }})
	idt, err := v.Verify(o.ctx(ctx), raw)
	if err != nil {
		return Identity{}, o.classify(err)
	}
	if checkNonce && subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(nonce)) != 1 {
		return Identity{}, refused(o.cfg.ID, "the ID token's nonce does not match this sign-in (a replayed or injected token)")
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return Identity{}, refused(o.cfg.ID, "the ID token's claims cannot be read")
	}
	id := Identity{Provider: o.cfg.ID, Subject: idt.Subject}
	id.Name, _ = claims[o.cfg.UsernameClaim].(string)
	if id.Name == "" {
		return Identity{}, refused(o.cfg.ID, "the ID token has no %q claim to name the user by", o.cfg.UsernameClaim)
	}
	id.DisplayName, _ = claims["name"].(string)
	switch g := claims[o.cfg.GroupsClaim].(type) {
	case []any:
		for _, x := range g {
			if s, ok := x.(string); ok {
				id.Groups = append(id.Groups, s)
			}
		}
	case string:
		id.Groups = []string{g}
	}
	return id, nil
}

// classify turns go-oidc's verification errors into reasons.
func (o *OIDC) classify(err error) error {
	var exp *oidc.TokenExpiredError
	msg := err.Error()
	switch {
	case errors.As(err, &exp):
		return refused(o.cfg.ID, "the ID token expired at %s", exp.Expiry.UTC().Format(time.RFC3339))
	case strings.Contains(msg, "expected audience"):
		return refused(o.cfg.ID, "the ID token is for another client (wrong audience)")
	case strings.Contains(msg, "issued by a different provider"):
		return refused(o.cfg.ID, "the ID token comes from an unknown issuer")
	case strings.Contains(msg, "signature"):
		return refused(o.cfg.ID, "the ID token's signature does not verify with the provider's keys")
	case strings.Contains(msg, "malformed"):
		return refused(o.cfg.ID, "the ID token is malformed")
	}
	return refused(o.cfg.ID, "the ID token does not verify")
}

// EndSessionURL is the provider's end_session_endpoint, asked to send
// the browser back to postLogout: "" when discovery offers none (or
// has not happened).
func (o *OIDC) EndSessionURL(postLogout string) string {
	o.mu.Lock()
	end := o.meta.EndSession
	o.mu.Unlock()
	if end == "" {
		return ""
	}
	sep := "?"
	if strings.Contains(end, "?") {
		sep = "&"
	}
	return end + sep + "client_id=" + url.QueryEscape(o.cfg.ClientID) + "&post_logout_redirect_uri=" + url.QueryEscape(postLogout)
}
