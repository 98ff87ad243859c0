package api

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.uber.org/zap"
	"golang.org/x/oauth2"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/auth"
	"github.com/jetjob/jetjob/scheduler/internal/sso"
	"github.com/jetjob/jetjob/scheduler/internal/store"
)

// Sign-in through identity providers (package sso). A provider's answer
// becomes a federated user (store.SyncFederated: created on first
// sign-in, admin flag and grants set from the mapped groups each time),
// then a session (the console) or an API key (the CLI), each recorded in
// the audit log; every refusal is answered 401 with its reason and
// recorded as sso.refused.

func (s *Server) ssoInfo(w http.ResponseWriter, _ *http.Request) error {
	out := apiv1.SSOInfo{Providers: []apiv1.SSOProvider{}, RequireSSO: s.cfg.SSO.Config().RequireSSO}
	for _, o := range s.cfg.SSO.List() {
		out.Providers = append(out.Providers, apiv1.SSOProvider{ID: o.ID(), Name: o.Name()})
	}
	if l := s.cfg.SSO.LDAP(); l != nil {
		out.LDAP = l.Name()
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// ssoStart opens an authorization request: fresh state, nonce and PKCE
// verifier, kept server-side under the state's hash until the one
// callback that uses them.
func (s *Server) ssoStart(w http.ResponseWriter, r *http.Request) error {
	var in apiv1.SSOStart
	if err := decodeOptional(w, r, &in); err != nil {
		return err
	}
	o, err := s.pathProvider(r)
	if err != nil {
		return err
	}
	redirect := s.cfg.SSO.CallbackURL(o.ID())
	if in.RedirectURI != "" {
		if err := loopback(in.RedirectURI); err != nil {
			return err
		}
		redirect = in.RedirectURI
	}
	state, _, err := auth.NewSessionToken()
	if err != nil {
		return err
	}
	nonce, _, err := auth.NewSessionToken()
	if err != nil {
		return err
	}
	verifier := oauth2.GenerateVerifier()
	u, err := o.AuthURL(r.Context(), redirect, state, nonce, verifier)
	if err != nil {
		return &httpError{http.StatusBadGateway, err.Error()}
	}
	if err := s.store.PutPending(r.Context(), auth.HashSecret(state), store.Pending{Provider: o.ID(), Nonce: nonce,
		Verifier: verifier, RedirectURI: redirect, Next: in.Next,
		ExpiresAt: s.now().Add(s.cfg.SSO.Config().PendingTTL)}); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apiv1.SSOStarted{AuthURL: u, State: state})
	return nil
}

// pathProvider is the OpenID provider the path names; an unknown one is
// answered 404 (not audited: nobody tried to sign in anywhere).
func (s *Server) pathProvider(r *http.Request) (*sso.OIDC, error) {
	o, err := s.cfg.SSO.OIDC(r.PathValue("provider"))
	if errors.Is(err, sso.ErrUnknownProvider) {
		return nil, &httpError{http.StatusNotFound, fmt.Sprintf("identity provider %q: not configured (GET /api/v1/sso lists them)", r.PathValue("provider"))}
	}
	return o, err
}

// loopback checks a CLI's redirect URI: http on a loopback address with
// a port (RFC 8252 section 7.3), nothing a browser could be sent
// elsewhere by.
func loopback(raw string) error {
	u, err := url.Parse(raw)
	if err == nil && u.Scheme == "http" && u.Port() != "" && u.User == nil {
		if ip := net.ParseIP(u.Hostname()); ip != nil && ip.IsLoopback() {
			return nil
		}
	}
	return invalidf("redirect_uri %q: want http://127.0.0.1:PORT/… (a CLI's loopback address)", raw)
}

// ssoIdentity finishes an authorization request: takes its pending row
// (a state seen before finds none), checks that it was started for this
// kind of callback, and redeems the code.
func (s *Server) ssoIdentity(r *http.Request, in apiv1.SSOCallback, console bool) (sso.Identity, store.Pending, error) {
	o, err := s.pathProvider(r)
	if err != nil {
		return sso.Identity{}, store.Pending{}, err
	}
	refuse := func(format string, args ...any) error {
		return &sso.Refused{Provider: o.ID(), Reason: fmt.Sprintf(format, args...)}
	}
	if in.State == "" {
		return sso.Identity{}, store.Pending{}, refuse("the provider's answer has no state")
	}
	if console && subtle.ConstantTimeCompare([]byte(in.State), []byte(in.BrowserState)) != 1 {
		return sso.Identity{}, store.Pending{}, refuse("the sign-in was not started in this browser (state does not match its cookie)")
	}
	p, err := s.store.TakePending(r.Context(), auth.HashSecret(in.State))
	if errors.Is(err, store.ErrNotFound) {
		return sso.Identity{}, p, refuse("the sign-in request is unknown, expired or already used (a replayed state)")
	}
	if err != nil {
		return sso.Identity{}, p, err
	}
	if p.Provider != o.ID() || console != (p.RedirectURI == s.cfg.SSO.CallbackURL(o.ID())) {
		return sso.Identity{}, p, refuse("the sign-in request was started for another provider or client")
	}
	if in.Error != "" {
		return sso.Identity{}, p, refuse("the provider answered %s: %s", in.Error, in.ErrorDescription)
	}
	if in.Code == "" {
		return sso.Identity{}, p, refuse("the provider's answer has no code")
	}
	id, err := o.Exchange(r.Context(), in.Code, p.RedirectURI, p.Verifier, p.Nonce)
	return id, p, err
}

// federate makes a signed-in identity a jetjob user, by the provider's
// mapping.
func (s *Server) federate(ctx context.Context, a store.Actor, id sso.Identity, m sso.Mapping) (store.User, error) {
	if !validUserName.MatchString(id.Name) {
		return store.User{}, &sso.Refused{Provider: id.Provider,
			Reason: fmt.Sprintf("the provider's user name %q is not a valid jetjob user name (letters, digits, _ . @ -, at most 64)", id.Name)}
	}
	st, ok := m.Apply(id.Groups)
	if !ok {
		return store.User{}, &sso.Refused{Provider: id.Provider,
			Reason: fmt.Sprintf("none of the user's %d groups is mapped to jetjob access", len(id.Groups))}
	}
	f := store.Federated{Provider: id.Provider, Subject: id.Subject, Name: id.Name, DisplayName: id.DisplayName, Admin: st.Admin}
	for _, g := range st.Grants {
		f.Grants = append(f.Grants, store.Grant{Group: g.Group, Role: string(g.Role), Scripts: g.Scripts})
	}
	u, err := s.store.SyncFederated(ctx, a, f)
	switch {
	case errors.Is(err, store.ErrConflict):
		return u, &sso.Refused{Provider: id.Provider, Reason: fmt.Sprintf("the user name %q belongs to a local user or another identity", id.Name)}
	case errors.Is(err, store.ErrBadCredentials):
		return u, &sso.Refused{Provider: id.Provider, Reason: fmt.Sprintf("user %q is disabled", id.Name)}
	}
	return u, err
}

// ssoActor is the audit actor of a sign-in through provider.
func ssoActor(r *http.Request, name, provider string) store.Actor {
	a := actor(r)
	if name != "" {
		a.Name = name
	}
	a.Auth = "sso:" + provider
	return a
}

// ssoRefused records a refused sign-in (sso.refused, with the reason) and
// answers 401 with it; other errors pass through.
func (s *Server) ssoRefused(r *http.Request, name string, err error) error {
	var ref *sso.Refused
	if !errors.As(err, &ref) {
		return err
	}
	s.log.Info("sign-in refused", zap.String("provider", ref.Provider), zap.String("user", name), zap.String("reason", ref.Reason))
	a := ssoActor(r, "anonymous", ref.Provider)
	if name != "" {
		a.Name = name
	}
	if aerr := s.store.AuditRefusedSignIn(r.Context(), a, ref.Provider, ref.Reason); aerr != nil {
		return aerr
	}
	return &httpError{http.StatusUnauthorized, ref.Error()}
}

// ssoSession finishes a console sign-in: a session like a password's.
func (s *Server) ssoSession(w http.ResponseWriter, r *http.Request) error {
	var in apiv1.SSOCallback
	if err := decode(w, r, &in); err != nil {
		return err
	}
	id, p, err := s.ssoIdentity(r, in, true)
	if err != nil {
		return s.ssoRefused(r, id.Name, err)
	}
	o, _ := s.cfg.SSO.OIDC(id.Provider)
	a := ssoActor(r, id.Name, id.Provider)
	u, err := s.federate(r.Context(), a, id, o.Mapping())
	if err != nil {
		return s.ssoRefused(r, id.Name, err)
	}
	pr, err := s.startSession(w, r, a, u, id.Provider)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apiv1.SSOSignedIn{Me: meDoc(pr), Next: p.Next})
	return nil
}

// ssoKey finishes a CLI's loopback sign-in: an API key of the user.
func (s *Server) ssoKey(w http.ResponseWriter, r *http.Request) error {
	var in apiv1.SSOCallback
	if err := decode(w, r, &in); err != nil {
		return err
	}
	name, err := keyName(in.KeyName, in.ExpiresAt, s.now())
	if err != nil {
		return err
	}
	id, _, err := s.ssoIdentity(r, in, false)
	if err != nil {
		return s.ssoRefused(r, id.Name, err)
	}
	return s.ssoIssueKey(w, r, id, name, in.ExpiresAt)
}

// ssoIssueKey federates id and answers an API key of theirs.
func (s *Server) ssoIssueKey(w http.ResponseWriter, r *http.Request, id sso.Identity, name string, expires *time.Time) error {
	o, _ := s.cfg.SSO.OIDC(id.Provider)
	a := ssoActor(r, id.Name, id.Provider)
	u, err := s.federate(r.Context(), a, id, o.Mapping())
	if err != nil {
		return s.ssoRefused(r, id.Name, err)
	}
	k, err := s.issueKey(r.Context(), a, u.Name, name, expires)
	if err != nil {
		return err
	}
	s.log.Info("signed in through a provider for the CLI", zap.String("provider", id.Provider), zap.String("user", u.Name),
		zap.String("key", k.Prefix))
	writeJSON(w, http.StatusCreated, k)
	return nil
}

// keyName checks a key's name and expiry from a request.
func keyName(name string, expires *time.Time, now time.Time) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" || len(name) > maxNameLen {
		return "", invalidf("key_name is required (1-%d characters): say what the key is for", maxNameLen)
	}
	if p := nameProblem(name); p != "" {
		return "", invalidf("key_name %s", p)
	}
	if expires != nil && !expires.After(now) {
		return "", invalidf("expires_at %s is in the past", expires.Format(time.RFC3339))
	}
	return name, nil
}

// ssoDevice starts a device authorization for the CLI. The CLI gets a
// handle of its own; the device code stays here.
func (s *Server) ssoDevice(w http.ResponseWriter, r *http.Request) error {
	o, err := s.pathProvider(r)
	if err != nil {
		return err
	}
	d, err := o.DeviceAuth(r.Context())
	if errors.Is(err, sso.ErrNoDeviceGrant) {
		return &httpError{http.StatusNotImplemented, err.Error()}
	}
	if err != nil {
		return &httpError{http.StatusBadGateway, err.Error()}
	}
	handle, hash, err := auth.NewSessionToken()
	if err != nil {
		return err
	}
	if err := s.store.PutPending(r.Context(), hash, store.Pending{Provider: o.ID(), DeviceCode: d.DeviceCode, ExpiresAt: d.ExpiresAt}); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apiv1.SSODevice{Handle: handle, UserCode: d.UserCode, VerificationURI: d.VerificationURI,
		VerificationURIComplete: d.VerificationURIComplete, IntervalSeconds: int(d.Interval.Seconds()), ExpiresAt: d.ExpiresAt})
	return nil
}

// ssoDevicePoll polls the provider once for the CLI: 202 while the user
// has not finished, then the key (the pending row is taken, so a handle
// yields one key).
func (s *Server) ssoDevicePoll(w http.ResponseWriter, r *http.Request) error {
	var in apiv1.SSODevicePoll
	if err := decode(w, r, &in); err != nil {
		return err
	}
	name, err := keyName(in.KeyName, in.ExpiresAt, s.now())
	if err != nil {
		return err
	}
	o, err := s.pathProvider(r)
	if err != nil {
		return err
	}
	hash := auth.HashSecret(in.Handle)
	p, err := s.store.GetPending(r.Context(), hash)
	if errors.Is(err, store.ErrNotFound) || err == nil && (p.Provider != o.ID() || p.DeviceCode == "") {
		return s.ssoRefused(r, "", &sso.Refused{Provider: o.ID(), Reason: "the device authorization is unknown, expired or already used"})
	}
	if err != nil {
		return err
	}
	id, err := o.DevicePoll(r.Context(), p.DeviceCode)
	switch {
	case errors.Is(err, sso.ErrPending), errors.Is(err, sso.ErrSlowDown):
		status := "pending"
		if errors.Is(err, sso.ErrSlowDown) {
			status = "slow_down"
		}
		writeJSON(w, http.StatusAccepted, apiv1.SSOPending{Status: status, IntervalSeconds: 5})
		return nil
	case err != nil:
		_, _ = s.store.TakePending(r.Context(), hash) // denied or expired: done with it
		return s.ssoRefused(r, "", err)
	}
	if _, err := s.store.TakePending(r.Context(), hash); errors.Is(err, store.ErrNotFound) {
		return s.ssoRefused(r, id.Name, &sso.Refused{Provider: o.ID(), Reason: "the device authorization was already used"})
	} else if err != nil {
		return err
	}
	return s.ssoIssueKey(w, r, id, name, in.ExpiresAt)
}

// ldapLogin is POST /login with provider "ldap": the directory checks
// the password (under the same login limiter as local passwords), the
// directory's groups are mapped, and a session starts.
func (s *Server) ldapLogin(w http.ResponseWriter, r *http.Request, in apiv1.LoginRequest) error {
	l := s.cfg.SSO.LDAP()
	if l == nil {
		return invalidf("provider %q: no LDAP directory is configured", in.Provider)
	}
	a := ssoActor(r, "", sso.LDAPProvider)
	try, err := s.logins.Reserve(r.Context(), in.Name, a.Client)
	if err != nil {
		return err
	}
	defer try.Cancel()
	id, err := l.Authenticate(in.Name, in.Password)
	try.Settle(err == nil)
	if errors.Is(err, sso.ErrWrongPassword) {
		err = &sso.Refused{Provider: sso.LDAPProvider, Reason: "wrong user name or password"}
	}
	if err != nil {
		var ref *sso.Refused
		if !errors.As(err, &ref) {
			s.log.Warn("LDAP sign-in failed", zap.Error(err))
			err = &sso.Refused{Provider: sso.LDAPProvider, Reason: "the directory could not be asked: " + err.Error()}
		}
		return s.ssoRefused(r, loggable(in.Name), err)
	}
	a.Name = id.Name
	u, err := s.federate(r.Context(), a, id, l.Mapping())
	if err != nil {
		return s.ssoRefused(r, id.Name, err)
	}
	pr, err := s.startSession(w, r, a, u, sso.LDAPProvider)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, meDoc(pr))
	return nil
}

// loggable is a name typed on a form as the audit log may keep it as an
// actor: as typed when it is a user name, else "anonymous" (the reason
// says what was wrong with it).
func loggable(name string) string {
	if validUserName.MatchString(name) {
		return name
	}
	return "anonymous"
}
