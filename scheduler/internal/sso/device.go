package sso

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// The device authorization grant (RFC 8628) for `jetjob login --sso`: the
// scheduler, which holds the client secret, asks the provider for a user
// code, the CLI shows it and polls the scheduler, which polls the
// provider once per poll. The CLI never sees a provider token.

// Device is a device authorization the user completes in a browser.
type Device struct {
	DeviceCode              string
	UserCode                string
	VerificationURI         string
	VerificationURIComplete string
	Interval                time.Duration
	ExpiresAt               time.Time
}

// ErrPending means the user has not finished yet (poll again);
// ErrSlowDown that the poll came too soon (wait longer).
var (
	ErrPending  = errors.New("authorization pending: finish signing in in the browser")
	ErrSlowDown = errors.New("polling too fast: wait longer between polls")
)

// ErrNoDeviceGrant is a provider whose discovery offers no device
// authorization endpoint: the CLI uses a loopback redirect instead.
var ErrNoDeviceGrant = errors.New("the provider offers no device authorization endpoint")

// DeviceAuth starts a device authorization.
func (o *OIDC) DeviceAuth(ctx context.Context) (Device, error) {
	p, err := o.provider(ctx)
	if err != nil {
		return Device{}, err
	}
	ep := p.Endpoint().DeviceAuthURL
	if ep == "" {
		return Device{}, ErrNoDeviceGrant
	}
	var out struct {
		DeviceCode              string `json:"device_code"`
		UserCode                string `json:"user_code"`
		VerificationURI         string `json:"verification_uri"`
		VerificationURIComplete string `json:"verification_uri_complete"`
		ExpiresIn               int64  `json:"expires_in"`
		Interval                int64  `json:"interval"`
	}
	scopes := append([]string{"openid", "profile", "email"}, o.cfg.Scopes...)
	if err := o.postForm(ctx, ep, url.Values{"scope": {strings.Join(scopes, " ")}}, &out); err != nil {
		return Device{}, err
	}
	if out.DeviceCode == "" || out.UserCode == "" || out.VerificationURI == "" {
		return Device{}, fmt.Errorf("oidc %s: device authorization answer lacks device_code, user_code or verification_uri", o.cfg.ID)
	}
	d := Device{DeviceCode: out.DeviceCode, UserCode: out.UserCode, VerificationURI: out.VerificationURI,
		VerificationURIComplete: out.VerificationURIComplete, Interval: time.Duration(max(out.Interval, 1)) * time.Second,
		ExpiresAt: time.Now().Add(time.Duration(max(out.ExpiresIn, 60)) * time.Second)}
	return d, nil
}

// DevicePoll asks the token endpoint once whether the user finished:
// the verified identity, ErrPending, ErrSlowDown, or a *Refused (denied,
// expired).
func (o *OIDC) DevicePoll(ctx context.Context, deviceCode string) (Identity, error) {
	p, err := o.provider(ctx)
	if err != nil {
		return Identity{}, err
	}
	var out struct {
		IDToken string `json:"id_token"`
	}
	err = o.postForm(ctx, p.Endpoint().TokenURL, url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:device_code"},
		"device_code": {deviceCode}}, &out)
	var te *tokenError
	if errors.As(err, &te) {
		switch te.Code {
		case "authorization_pending":
			return Identity{}, ErrPending
		case "slow_down":
			return Identity{}, ErrSlowDown
		case "access_denied":
			return Identity{}, refused(o.cfg.ID, "the user denied the authorization")
		case "expired_token":
			return Identity{}, refused(o.cfg.ID, "the user code expired before the user signed in")
		}
		return Identity{}, refused(o.cfg.ID, "the provider refused the device code (%s)", te.Code)
	}
	if err != nil {
		return Identity{}, err
	}
	if out.IDToken == "" {
		return Identity{}, refused(o.cfg.ID, "the provider's answer holds no ID token")
	}
	// No nonce in the device grant: the device code, which only this
	// scheduler holds, binds the answer to the request.
	return o.Verify(ctx, out.IDToken, "", false)
}

// tokenError is an OAuth error answer (RFC 6749 section 5.2).
type tokenError struct {
	Code string `json:"error"`
}

func (e *tokenError) Error() string { return "oauth error " + e.Code }

// postForm posts form to ep with the client's credentials (HTTP Basic
// with a secret, client_id alone without) and decodes the JSON answer
// into out; an OAuth error answer is a *tokenError.
func (o *OIDC) postForm(ctx context.Context, ep string, form url.Values, out any) error {
	form.Set("client_id", o.cfg.ClientID)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep, strings.NewReader(form.Encode()))
	if err != nil {
		return fmt.Errorf("oidc %s: %w", o.cfg.ID, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if o.cfg.ClientSecret != "" {
		req.SetBasicAuth(url.QueryEscape(o.cfg.ClientID), url.QueryEscape(o.cfg.ClientSecret))
	}
	resp, err := o.client.Do(req)
	if err != nil {
		return fmt.Errorf("oidc %s: %s: %w", o.cfg.ID, ep, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("oidc %s: %s: %w", o.cfg.ID, ep, err)
	}
	if resp.StatusCode >= 300 {
		var te tokenError
		if json.Unmarshal(body, &te) == nil && te.Code != "" {
			return &te
		}
		return fmt.Errorf("oidc %s: %s answered %s", o.cfg.ID, ep, resp.Status)
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("oidc %s: %s: %w", o.cfg.ID, ep, err)
	}
	return nil
}
