package main

import (
	"context"
	"errors"
	"fmt"
	"html"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
)

// ssoLogin is `jetjob login --sso PROVIDER`: the user signs in at the
// company's identity provider in a browser and the scheduler answers an
// API key of theirs. By the device authorization grant when the provider
// offers it (the CLI shows a code to enter; works over SSH), else (or with
// --loopback) by a redirect to a listener of the CLI on 127.0.0.1 with
// PKCE. Either way the scheduler talks to the provider, holds its client
// secret, and checks the answer: the CLI only carries codes.
func (a *app) ssoLogin(ctx context.Context, c *client.Client, provider, keyName string, expires *time.Time, loopback bool) (*apiv1.CreatedKey, error) {
	info, err := c.SSOInfo(ctx)
	if err != nil {
		return nil, err
	}
	if !slices.ContainsFunc(info.Providers, func(p apiv1.SSOProvider) bool { return p.ID == provider }) {
		var ids []string
		for _, p := range info.Providers {
			ids = append(ids, p.ID)
		}
		if len(ids) == 0 {
			return nil, fmt.Errorf("%s signs nobody in through an identity provider (no --sso-config)", c.BaseURL())
		}
		return nil, usagef("--sso %q: %s knows the providers %v", provider, c.BaseURL(), ids)
	}
	if !loopback {
		d, err := c.SSODevice(ctx, provider)
		var ae *client.APIError
		switch {
		case errors.As(err, &ae) && ae.StatusCode == http.StatusNotImplemented:
			fmt.Fprintf(a.stderr, "%s offers no device sign-in: using this machine's browser instead.\n", provider)
		case err != nil:
			return nil, err
		default:
			return a.devicePoll(ctx, c, provider, d, keyName, expires)
		}
	}
	return a.loopbackLogin(ctx, c, provider, keyName, expires)
}

// devicePoll shows the user code and polls until the user finished.
func (a *app) devicePoll(ctx context.Context, c *client.Client, provider string, d *apiv1.SSODevice, keyName string, expires *time.Time) (*apiv1.CreatedKey, error) {
	where := d.VerificationURI
	if d.VerificationURIComplete != "" {
		where = d.VerificationURIComplete
	}
	fmt.Fprintf(a.stderr, "To sign in, open %s in a browser and enter the code %s\n", where, d.UserCode)
	interval := max(time.Duration(d.IntervalSeconds)*time.Second, time.Second)
	ctx, cancel := context.WithDeadline(ctx, d.ExpiresAt)
	defer cancel()
	for {
		k, pending, err := c.SSODevicePoll(ctx, provider, apiv1.SSODevicePoll{Handle: d.Handle, KeyName: keyName, ExpiresAt: expires})
		if err != nil {
			return nil, err
		}
		if k != nil {
			return k, nil
		}
		if pending.Status == "slow_down" {
			interval += 5 * time.Second
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("the code %s was not used before it expired: run login again", d.UserCode)
		case <-time.After(interval):
		}
	}
}

// loopbackLogin listens on a random port of 127.0.0.1 for the provider's
// answer (RFC 8252), which the scheduler redeems with the PKCE verifier it
// kept.
func (a *app) loopbackLogin(ctx context.Context, c *client.Client, provider, keyName string, expires *time.Time) (*apiv1.CreatedKey, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening for the provider's answer: %w", err)
	}
	defer ln.Close()
	redirect := "http://" + ln.Addr().String() + "/callback"
	started, err := c.SSOStart(ctx, provider, redirect)
	if err != nil {
		return nil, err
	}
	type answer struct {
		key *apiv1.CreatedKey
		err error
	}
	answers := make(chan answer, 1)
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if r.URL.Path != "/callback" || q.Get("state") != started.State {
			http.Error(w, "not the sign-in this jetjob login is waiting for", http.StatusBadRequest)
			return
		}
		k, err := c.SSOKey(r.Context(), provider, apiv1.SSOCallback{Code: q.Get("code"), State: q.Get("state"),
			Error: q.Get("error"), ErrorDescription: q.Get("error_description"), KeyName: keyName, ExpiresAt: expires})
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if err != nil {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, "<!doctype html><p>jetjob login failed: %s</p>", html.EscapeString(err.Error()))
		} else {
			fmt.Fprint(w, "<!doctype html><p>Signed in to jetjob: return to the terminal.</p>")
		}
		select {
		case answers <- answer{k, err}:
		default:
		}
	})}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	fmt.Fprintf(a.stderr, "To sign in, open this address in a browser on this machine:\n  %s\n", started.AuthURL)
	select {
	case ans := <-answers:
		return ans.key, ans.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
