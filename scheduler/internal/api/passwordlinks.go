package api

import (
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/auth"
	"github.com/jetjob/jetjob/scheduler/internal/store"
)

// maxLinkTTL bounds how long a set-password link may work.
const maxLinkTTL = 30 * 24 * time.Hour

// SetPasswordPath is the console page a set-password link opens.
const SetPasswordPath = "/set-password"

// createPasswordLink issues a one-time set-password link for the path's
// user (admin).
func (s *Server) createPasswordLink(w http.ResponseWriter, r *http.Request) error {
	var in apiv1.PasswordLinkRequest
	if r.ContentLength != 0 {
		if err := decode(w, r, &in); err != nil {
			return err
		}
	}
	ttl := time.Duration(in.TTL)
	switch {
	case ttl == 0:
		ttl = store.DefaultPasswordLinkTTL
	case ttl < time.Minute || ttl > maxLinkTTL:
		return invalidf("ttl %s: want 1m to %s", ttl, maxLinkTTL)
	}
	token, hash, err := auth.NewSessionToken()
	if err != nil {
		return err
	}
	l, err := s.store.CreatePasswordLink(r.Context(), actor(r), r.PathValue("name"), hash, ttl)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, apiv1.PasswordLink{User: l.User, Token: token, ExpiresAt: l.ExpiresAt,
		Path: SetPasswordPath + "?" + url.Values{"token": {token}}.Encode()})
	return nil
}

// usePasswordLink sets a password with a link's token: public, the token
// is the credential (256 random bits, so guessing is hopeless; the
// anonymous request budget of package httplimit bounds the tries anyway).
func (s *Server) usePasswordLink(w http.ResponseWriter, r *http.Request) error {
	var in apiv1.PasswordLinkUse
	if err := decode(w, r, &in); err != nil {
		return err
	}
	if in.Token == "" || len(in.Token) > 100 {
		return &httpError{http.StatusGone, store.ErrLinkInvalid.Error()}
	}
	if err := auth.CheckPasswordPolicy(in.Password); err != nil {
		return invalidf("%v", err)
	}
	h, err := auth.HashPassword(r.Context(), in.Password)
	if err != nil {
		return err
	}
	_, err = s.store.UsePasswordLink(r.Context(), actor(r), auth.HashSecret(in.Token), h)
	if errors.Is(err, store.ErrLinkInvalid) {
		return &httpError{http.StatusGone, err.Error()}
	}
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
