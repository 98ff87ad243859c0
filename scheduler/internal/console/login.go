package console

import (
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/i18n"
)

// loginForm is the login page's data: the form, and the identity
// providers' buttons.
type loginForm struct {
	Name, Next string
	// Provider is the form's account choice ("ldap" or "" for local).
	Provider   string
	Providers  []apiv1.SSOProvider
	LDAP       string
	RequireSSO bool
}

// withProviders adds the ways to sign in that GET /api/v1/sso lists
// (none when it fails: the password form still works).
func (c *Console) withProviders(r *http.Request, f loginForm) loginForm {
	var info apiv1.SSOInfo
	if _, err := c.call(anonymous(r), http.MethodGet, "/api/v1/sso", nil, nil, &info); err != nil {
		c.log.Warn("listing identity providers failed")
		return f
	}
	f.Providers, f.LDAP, f.RequireSSO = info.Providers, info.LDAP, info.RequireSSO
	return f
}

func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) error {
	next := safeNext(r.URL.Query().Get("next"))
	if _, err := c.me(r); err == nil {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return nil
	}
	return c.render(w, r, http.StatusOK, "login", page{Title: c.lang(r, nil).T("Sign in"), Data: c.withProviders(r, loginForm{Next: next})})
}

// anonymous is r without credentials: a sign-in must not be decided by a
// stale cookie.
func anonymous(r *http.Request) *http.Request {
	anon := r.Clone(r.Context())
	anon.Header.Del("Cookie")
	anon.Header.Del("Authorization")
	return anon
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
	form := loginForm{Name: strings.TrimSpace(r.PostForm.Get("name")), Next: safeNext(r.PostForm.Get("next")),
		Provider: r.PostForm.Get("provider")}
	var me apiv1.Me
	hdr, err := c.call(anonymous(r), http.MethodPost, "/api/v1/login", nil,
		apiv1.LoginRequest{Name: form.Name, Password: r.PostForm.Get("password"), Provider: form.Provider}, &me)
	var ae *APIError
	if errors.As(err, &ae) && (ae.Status < 500 || ae.Status == http.StatusServiceUnavailable) {
		if v := hdr.Get("Retry-After"); v != "" {
			w.Header().Set("Retry-After", v)
		}
		return c.render(w, r, ae.Status, "login", page{Title: c.lang(r, nil).T("Sign in"), Error: ae.Error(), Data: c.withProviders(r, form)})
	}
	if err != nil {
		return err
	}
	passCookies(w, hdr)
	http.Redirect(w, r, form.Next, http.StatusSeeOther)
	return nil
}

func passCookies(w http.ResponseWriter, hdr http.Header) {
	for _, ck := range hdr.Values("Set-Cookie") {
		w.Header().Add("Set-Cookie", ck)
	}
}

// logout ends the session through POST /api/v1/logout (which clears the
// cookie) and shows the login page, or sends the browser on to the
// identity provider's end_session_endpoint when the session was started
// there.
func (c *Console) logout(w http.ResponseWriter, r *http.Request) error {
	var out apiv1.LogoutResult
	hdr, err := c.call(r, http.MethodPost, "/api/v1/logout", nil, nil, &out)
	if err != nil {
		return err
	}
	passCookies(w, hdr)
	if out.EndSessionURL != "" {
		// Not a 303: the page's form-action 'self' policy stops a form's
		// redirect to another origin, so a page moves the browser on.
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; base-uri 'none'; frame-ancestors 'none'")
		w.Header().Set("Cache-Control", "no-store")
		l := c.lang(r, nil)
		return signedOutPage.Execute(w, signedOut{URL: out.EndSessionURL, Lang: l, Title: l.T("Signed out"),
			Heading: l.T("Signed out of jetjob"), Continue: l.T("Continue to sign out at your identity provider")})
	}
	redirect(w, r, "/login", noticeSignedOut)
	return nil
}

// signedOutPage sends a browser whose session came from an identity
// provider on to the provider's end_session_endpoint.
var signedOutPage = template.Must(template.New("signed-out").Parse(`<!doctype html>
<html lang="{{.Lang}}"><head><meta charset="utf-8"><meta http-equiv="refresh" content="0;url={{.URL}}">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>{{.Title}} · jetjob</title>
<link rel="stylesheet" href="/static/console.css"></head>
<body><main><section class="login"><h1>{{.Heading}}</h1>
<p><a id="end-session" href="{{.URL}}">{{.Continue}}</a>.</p></section></main></body></html>
`))

// signedOut is signedOutPage's data, in the browser's language.
type signedOut struct {
	URL                      string
	Lang                     i18n.Lang
	Title, Heading, Continue string
}

// ssoCookie keeps the state of a sign-in at a provider in the browser
// that started it: the callback must bring it back (login CSRF).
const ssoCookie = "jetjob_sso"

// ssoStart sends the browser to the provider (GET /login/sso/{provider}
// ?next=): a link, not a form, because the page's form-action 'self'
// policy would stop a form's redirect to another origin. Starting a
// sign-in changes nothing a forged link could abuse: the state cookie it
// sets only lets this browser finish what it started.
func (c *Console) ssoStart(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("provider")
	var out apiv1.SSOStarted
	_, err := c.call(anonymous(r), http.MethodPost, "/api/v1/sso/"+url.PathEscape(id)+"/start", nil,
		apiv1.SSOStart{Next: safeNext(r.URL.Query().Get("next"))}, &out)
	if err != nil {
		return c.ssoFailed(w, r, err)
	}
	http.SetCookie(w, &http.Cookie{Name: ssoCookie, Value: out.State, Path: "/login/sso/", MaxAge: int((15 * time.Minute).Seconds()),
		HttpOnly: true, Secure: r.TLS != nil || c.secureCookies, SameSite: http.SameSiteLaxMode})
	http.Redirect(w, r, out.AuthURL, http.StatusSeeOther)
	return nil
}

// ssoCallback is where the provider sends the browser back
// (GET /login/sso/{provider}/callback): the API checks the answer and
// starts the session, whose cookie the browser gets.
func (c *Console) ssoCallback(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	in := apiv1.SSOCallback{Code: q.Get("code"), State: q.Get("state"), Error: q.Get("error"), ErrorDescription: q.Get("error_description")}
	if ck, err := r.Cookie(ssoCookie); err == nil {
		in.BrowserState = ck.Value
	}
	http.SetCookie(w, &http.Cookie{Name: ssoCookie, Value: "", Path: "/login/sso/", MaxAge: -1, HttpOnly: true,
		Secure: r.TLS != nil || c.secureCookies, SameSite: http.SameSiteLaxMode})
	var out apiv1.SSOSignedIn
	hdr, err := c.call(anonymous(r), http.MethodPost, "/api/v1/sso/"+url.PathEscape(r.PathValue("provider"))+"/session", nil, in, &out)
	if err != nil {
		return c.ssoFailed(w, r, err)
	}
	passCookies(w, hdr)
	http.Redirect(w, r, safeNext(out.Next), http.StatusSeeOther)
	return nil
}

// ssoFailed shows the login page with the API's reason.
func (c *Console) ssoFailed(w http.ResponseWriter, r *http.Request, err error) error {
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status >= 500 && ae.Status != http.StatusBadGateway && ae.Status != http.StatusServiceUnavailable {
		return err
	}
	return c.render(w, r, ae.Status, "login", page{Title: c.lang(r, nil).T("Sign in"), Error: ae.Error(), Data: c.withProviders(r, loginForm{Next: "/"})})
}

// safeNext is the destination after signing in: next when localPath
// takes it (and it is not the login page itself), else the dashboard.
func safeNext(next string) string {
	p, ok := localPath(next)
	if !ok || p == "/login" || strings.HasPrefix(p, "/login?") || strings.HasPrefix(p, "/login/") {
		return "/"
	}
	return p
}

// badForm is a form that could not be read.
func badForm(err error) error {
	return &APIError{Status: http.StatusBadRequest, Doc: apiv1.Error{Error: "malformed form: " + err.Error()}}
}
