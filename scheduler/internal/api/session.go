package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/auth"
	"github.com/jetjob/jetjob/scheduler/internal/store"
)

// sessionCookie holds a console session's token (client.SessionCookie).
const sessionCookie = "jetjob_session"

// login checks a name and password and starts a session: a cookie that is
// HttpOnly (no script reads it), SameSite=Lax and Secure (outside dev), and
// expires with the session's absolute end; the server also ends it after
// SessionIdle without a request. The check is checkPassword's: limited per
// user and per address, and a wrong name costs the same hash as a wrong
// password so that names cannot be probed by timing.
func (s *Server) login(w http.ResponseWriter, r *http.Request) error {
	var in apiv1.LoginRequest
	if err := decode(w, r, &in); err != nil {
		return err
	}
	if in.Provider != "" {
		return s.ldapLogin(w, r, in)
	}
	a := actor(r)
	if !s.cfg.SSO.PasswordAllowed(in.Name) {
		a.Name, a.Auth = loggable(in.Name), "password"
		reason := "password sign-in is turned off (require_sso): sign in with your identity provider"
		if err := s.store.AuditRefusedSignIn(r.Context(), a, "password", reason); err != nil {
			return err
		}
		return &httpError{http.StatusForbidden, reason}
	}
	u, err := s.checkPassword(r.Context(), in.Name, a.Client, in.Password)
	if errors.Is(err, errWrongPassword) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="jetjob"`)
		return &httpError{http.StatusUnauthorized, "wrong user name or password (or the user is disabled)"}
	}
	if err != nil {
		return err
	}
	a.Name, a.Auth = u.Name, "password"
	p, err := s.startSession(w, r, a, u, "")
	if err != nil {
		return err
	}
	return s.me(w, r.WithContext(auth.NewContext(r.Context(), p)))
}

// startSession starts a session of u (provider: how they signed in, ""
// for a password), recorded as a's session.login, and sets its cookie:
// the same cookie whoever vouched for the user.
func (s *Server) startSession(w http.ResponseWriter, r *http.Request, a store.Actor, u store.User, provider string) (*auth.Principal, error) {
	token, th, err := auth.NewSessionToken()
	if err != nil {
		return nil, err
	}
	ss, err := s.store.CreateSession(r.Context(), a, u.Name, provider, th, s.cfg.SessionMax)
	if err != nil {
		return nil, err
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: token, Path: "/", Expires: ss.ExpiresAt,
		HttpOnly: true, Secure: !s.cfg.InsecureCookies, SameSite: http.SameSiteLaxMode})
	p := principalOf(u)
	p.Method, p.SessionID, p.SessionExpiresAt = auth.BySession, ss.ID, ss.ExpiresAt
	return p, nil
}

// errWrongPassword is checkPassword's answer for a wrong name or password,
// a user without a password, or a disabled user (one answer for all, so
// that none can be told apart).
var errWrongPassword = errors.New("wrong user name or password")

// checkPassword is the one way the API checks a password (a login, the
// current password of a password change): it reserves an attempt of name
// from client in the login limiter before hashing (a *auth.LimitError,
// 429, when the budget is spent or the turn does not come), checks the
// password in the hash pool (auth.ErrHashBusy, 503, when it is full), and
// settles the attempt with the outcome. It returns the user, or
// errWrongPassword.
func (s *Server) checkPassword(ctx context.Context, name, client, password string) (store.User, error) {
	try, err := s.logins.Reserve(ctx, name, client)
	var limited *auth.LimitError
	if errors.As(err, &limited) {
		s.log.Warn("password check refused by the login limit", zap.String("user", name), zap.String("client", client),
			zap.Duration("retry_after", limited.RetryAfter))
	}
	if err != nil {
		return store.User{}, err
	}
	defer try.Cancel() // counts nothing once settled; before, the password was not checked
	u, err := s.store.GetUser(ctx, name)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return store.User{}, err
	}
	hash := u.PasswordHash
	if hash == "" {
		hash = auth.NoPasswordHash()
	}
	err = auth.CheckPassword(ctx, hash, password)
	if err != nil && !errors.Is(err, auth.ErrBadPassword) {
		return store.User{}, err
	}
	ok := err == nil && u.PasswordHash != "" && !u.Disabled
	try.Settle(ok)
	if !ok {
		s.log.Info("password check failed", zap.String("user", name), zap.String("client", client))
		return store.User{}, errWrongPassword
	}
	return u, nil
}

// logout ends the cookie's session, if any, and clears the cookie. A
// session started at an OpenID provider that offers an
// end_session_endpoint answers where to send the browser to end the
// provider's session too.
func (s *Server) logout(w http.ResponseWriter, r *http.Request) error {
	var end string
	if c, err := r.Cookie(sessionCookie); err == nil && c.Value != "" {
		a := actor(r)
		if u, ss, err := s.store.UserBySession(r.Context(), auth.HashSecret(c.Value), s.cfg.SessionIdle); err == nil {
			a.Name, a.Auth = u.Name, "session:"+ss.ID
			if o, err := s.cfg.SSO.OIDC(ss.Provider); ss.Provider != "" && err == nil {
				end = o.EndSessionURL(s.cfg.SSO.Config().PublicURL + "/login")
			}
		} else {
			a.Name = "unknown"
		}
		if err := s.store.DeleteSession(r.Context(), a, auth.HashSecret(c.Value)); err != nil {
			return err
		}
	}
	s.clearSessionCookie(w)
	if end != "" {
		writeJSON(w, http.StatusOK, apiv1.LogoutResult{EndSessionURL: end})
		return nil
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// clearSessionCookie tells the browser to forget its session cookie.
func (s *Server) clearSessionCookie(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, Expires: time.Unix(0, 0),
		HttpOnly: true, Secure: !s.cfg.InsecureCookies, SameSite: http.SameSiteLaxMode})
}
