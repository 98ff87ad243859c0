package console

import (
	"errors"
	"net/http"
	"strings"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// loginForm is the login page's data.
type loginForm struct {
	Name, Next string
}

func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) error {
	next := safeNext(r.URL.Query().Get("next"))
	if _, err := c.me(r); err == nil {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return nil
	}
	return c.render(w, r, http.StatusOK, "login", page{Title: "Sign in", Data: loginForm{Next: next}})
}

// login signs in through POST /api/v1/login and hands its session cookie
// to the browser: the API's login, so the console's form and the API share
// one login limiter (the client address is passed along). A wrong password
// (401), the limit (429) or a full hash pool (503) shows the form again
// with the API's words and its Retry-After.
func (c *Console) login(w http.ResponseWriter, r *http.Request) error {
	if err := r.ParseForm(); err != nil {
		return badForm(err)
	}
	form := loginForm{Name: strings.TrimSpace(r.PostForm.Get("name")), Next: safeNext(r.PostForm.Get("next"))}
	// The login request carries no old session: a stale cookie must not
	// decide anything here.
	anon := r.Clone(r.Context())
	anon.Header.Del("Cookie")
	anon.Header.Del("Authorization")
	var me apiv1.Me
	hdr, err := c.call(anon, http.MethodPost, "/api/v1/login", nil,
		apiv1.LoginRequest{Name: form.Name, Password: r.PostForm.Get("password")}, &me)
	var ae *APIError
	if errors.As(err, &ae) && (ae.Status < 500 || ae.Status == http.StatusServiceUnavailable) {
		if v := hdr.Get("Retry-After"); v != "" {
			w.Header().Set("Retry-After", v)
		}
		return c.render(w, r, ae.Status, "login", page{Title: "Sign in", Error: ae.Error(), Data: form})
	}
	if err != nil {
		return err
	}
	for _, ck := range hdr.Values("Set-Cookie") {
		w.Header().Add("Set-Cookie", ck)
	}
	http.Redirect(w, r, form.Next, http.StatusSeeOther)
	return nil
}

// logout ends the session through POST /api/v1/logout (which clears the
// cookie) and shows the login page.
func (c *Console) logout(w http.ResponseWriter, r *http.Request) error {
	hdr, err := c.call(r, http.MethodPost, "/api/v1/logout", nil, nil, nil)
	if err != nil {
		return err
	}
	for _, ck := range hdr.Values("Set-Cookie") {
		w.Header().Add("Set-Cookie", ck)
	}
	redirect(w, r, "/login", noticeSignedOut)
	return nil
}

// safeNext is the destination after signing in: next when localPath
// takes it (and it is not the login page itself), else the dashboard.
func safeNext(next string) string {
	p, ok := localPath(next)
	if !ok || p == "/login" || strings.HasPrefix(p, "/login?") {
		return "/"
	}
	return p
}

// badForm is a form that could not be read.
func badForm(err error) error {
	return &APIError{Status: http.StatusBadRequest, Doc: apiv1.Error{Error: "malformed form: " + err.Error()}}
}
