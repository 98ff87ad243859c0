package console

import (
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/i18n"
)

// langCookie remembers the language chosen in this browser, for the pages
// shown before anyone signs in (the login page after a sign-out); the
// user's own choice is kept with the user (users.language) and wins.
const langCookie = "jetjob_lang"

// lang is the language of r's page for u (nil before sign-in): the user's
// saved choice, else this browser's choice, else its Accept-Language,
// else English.
func (c *Console) lang(r *http.Request, u *User) i18n.Lang {
	if u != nil {
		if l, ok := i18n.Parse(u.Language); ok {
			return l
		}
	}
	if ck, err := r.Cookie(langCookie); err == nil {
		if l, ok := i18n.Parse(ck.Value); ok {
			return l
		}
	}
	return i18n.Negotiate(r.Header.Get("Accept-Language"))
}

// setLanguage is the user menu's language switch (POST /ui/language,
// language=en|zh-CN, back=the page to return to): saved with the user
// through the API (their own PATCH), and in a cookie for the login page.
func (c *Console) setLanguage(w http.ResponseWriter, r *http.Request) error {
	if err := r.ParseForm(); err != nil {
		return badForm(err)
	}
	l, ok := i18n.Parse(r.PostForm.Get("language"))
	if !ok {
		return &APIError{Status: http.StatusBadRequest, Doc: apiv1.Error{Error: "language: want en or zh-CN"}}
	}
	// Before sign-in (the login page's switch) the cookie alone keeps it;
	// so it does for the break-glass key and an anonymous admin, who have
	// no user row to keep it in.
	u, err := c.me(r)
	var ae *APIError
	if errors.As(err, &ae) && ae.Status == http.StatusUnauthorized {
		u, err = nil, nil
	}
	if err != nil {
		return err
	}
	if u != nil && (u.Auth == "session" || u.Auth == "key") {
		tag := string(l)
		if _, err := c.call(r, http.MethodPatch, "/api/v1/users/"+url.PathEscape(u.Name), nil, apiv1.UserPatch{Language: &tag}, nil); err != nil {
			return err
		}
	}
	http.SetCookie(w, &http.Cookie{Name: langCookie, Value: string(l), Path: "/", MaxAge: int((365 * 24 * time.Hour).Seconds()),
		HttpOnly: true, Secure: c.secureCookies, SameSite: http.SameSiteLaxMode})
	back, ok := localPath(r.PostForm.Get("back"))
	if !ok {
		back = "/"
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
	return nil
}
