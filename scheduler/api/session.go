package api

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/auth"
	"github.com/jetjob/jetjob/scheduler/store"
)

// sessionCookie holds a console session's token (client.SessionCookie).
const sessionCookie = "jetjob_session"

// login checks a name and password and starts a session: a cookie that is
// HttpOnly (no script reads it), SameSite=Lax and Secure (outside dev), and
// expires with the session's absolute end; the server also ends it after
// SessionIdle without a request. Failed attempts are limited per user and
// per address, and a wrong name costs the same hash as a wrong password so
// that names cannot be probed by timing.
func (s *Server) login(w http.ResponseWriter, r *http.Request) error {
	var in apiv1.LoginRequest
	if err := decode(w, r, &in); err != nil {
		return err
	}
	a := actor(r)
	if err := s.logins.Allow(in.Name, a.Client); err != nil {
		s.log.Warn("login refused by the rate limit", zap.String("user", in.Name), zap.String("client", a.Client))
		return &httpError{http.StatusTooManyRequests, err.Error()}
	}
	u, err := s.store.GetUser(r.Context(), in.Name)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	hash := u.PasswordHash
	if hash == "" {
		hash = dummyHash()
	}
	err = auth.CheckPassword(r.Context(), hash, in.Password)
	if err != nil && !errors.Is(err, auth.ErrBadPassword) {
		return err
	}
	if err != nil || u.PasswordHash == "" || u.Disabled {
		s.logins.Failed(in.Name, a.Client)
		s.log.Info("login failed", zap.String("user", in.Name), zap.String("client", a.Client))
		w.Header().Set("WWW-Authenticate", `Bearer realm="jetjob"`)
		return &httpError{http.StatusUnauthorized, "wrong user name or password (or the user is disabled)"}
	}
	s.logins.Succeeded(in.Name)
	token, th, err := auth.NewSessionToken()
	if err != nil {
		return err
	}
	a.Name, a.Auth = u.Name, "password"
	ss, err := s.store.CreateSession(r.Context(), a, u.Name, th, s.cfg.SessionMax)
	if err != nil {
		return err
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: token, Path: "/", Expires: ss.ExpiresAt,
		HttpOnly: true, Secure: !s.cfg.InsecureCookies, SameSite: http.SameSiteLaxMode})
	p := principalOf(u)
	p.Method, p.SessionID, p.SessionExpiresAt = auth.BySession, ss.ID, ss.ExpiresAt
	return s.me(w, r.WithContext(auth.NewContext(r.Context(), p)))
}

// dummyHash is checked for a user that does not exist or has no password,
// so that the answer takes as long as for a wrong password.
var dummyHash = sync.OnceValue(func() string {
	h, err := auth.HashPassword(context.Background(), "jetjob: no such user")
	if err != nil {
		panic(err)
	}
	return h
})

// logout ends the cookie's session, if any, and clears the cookie.
func (s *Server) logout(w http.ResponseWriter, r *http.Request) error {
	if c, err := r.Cookie(sessionCookie); err == nil && c.Value != "" {
		a := actor(r)
		if u, ss, err := s.store.UserBySession(r.Context(), auth.HashSecret(c.Value), s.cfg.SessionIdle); err == nil {
			a.Name, a.Auth = u.Name, "session:"+ss.ID
		} else {
			a.Name = "unknown"
		}
		if err := s.store.DeleteSession(r.Context(), a, auth.HashSecret(c.Value)); err != nil {
			return err
		}
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, Expires: time.Unix(0, 0),
		HttpOnly: true, Secure: !s.cfg.InsecureCookies, SameSite: http.SameSiteLaxMode})
	w.WriteHeader(http.StatusNoContent)
	return nil
}
