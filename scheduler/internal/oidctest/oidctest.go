// Package oidctest runs a real OpenID Provider in the test's process:
// zitadel's certified OP package (github.com/zitadel/oidc/v3/pkg/op) over
// a small in-memory storage of static users with groups, one confidential
// client, a plain HTML login page and a device-code page. jetjob's
// sign-in tests talk to it over HTTP exactly as to a company's provider:
// discovery, JWKS, authorization code with PKCE, the token endpoint, the
// device grant, end_session. It is for tests only.
package oidctest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/json"
	"html/template"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
	"golang.org/x/text/language"
)

// GroupsClaim is the claim the provider lists a user's groups in.
const GroupsClaim = "groups"

// User is a user of the provider.
type User struct {
	Subject  string
	Username string
	Password string
	Name     string
	Groups   []string
}

// Options configure a provider.
type Options struct {
	ClientID, ClientSecret string
	// RedirectURIs are the client's exact redirect URIs; a loopback one
	// (http://127.0.0.1:*/callback) is allowed on any port besides.
	RedirectURIs []string
	Users        []User
}

// Provider is a running OpenID Provider.
type Provider struct {
	// Issuer is its issuer URL (http://127.0.0.1:PORT).
	Issuer string
	st     *storage
	srv    *httptest.Server
}

// Start runs a provider until the test ends.
func Start(t testing.TB, o Options) *Provider {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	st := &storage{key: key, keyID: "key-" + newID()[:8],
		client:  &client{id: o.ClientID, secret: o.ClientSecret, redirects: o.RedirectURIs},
		foreign: foreign,
		users:   map[string]*User{}, requests: map[string]*authRequest{}, codes: map[string]string{},
		tokens: map[string]string{}, devices: map[string]*device{}, userCodes: make(chan string, 16)}
	st.client.st = st
	for _, u := range o.Users {
		u := u
		st.users[u.Username] = &u
	}
	srv := httptest.NewUnstartedServer(nil)
	issuer := "http://" + srv.Listener.Addr().String()
	p := &Provider{Issuer: issuer, st: st, srv: srv}
	cfg := &op.Config{
		CryptoKey:                sha256.Sum256([]byte(newID())),
		DefaultLogoutRedirectURI: "/logged-out",
		CodeMethodS256:           true,
		AuthMethodPost:           true,
		SupportedUILocales:       []language.Tag{language.English},
		DeviceAuthorization: op.DeviceAuthorizationConfig{
			Lifetime: 5 * time.Minute, PollInterval: time.Second, UserFormPath: "/device", UserCode: op.UserCodeBase20,
		},
	}
	prov, err := op.NewProvider(cfg, st, op.StaticIssuer(issuer), op.WithAllowInsecure())
	if err != nil {
		t.Fatal(err)
	}
	intercept := op.NewIssuerInterceptor(prov.IssuerFromRequest)
	callback := op.AuthCallbackURL(prov)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /login", func(w http.ResponseWriter, r *http.Request) {
		render(w, http.StatusOK, loginPage, map[string]string{"ID": r.URL.Query().Get("authRequestID")})
	})
	mux.Handle("POST /login", intercept.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.PostFormValue("id")
		if err := st.signIn(id, r.PostFormValue("username"), r.PostFormValue("password")); err != nil {
			render(w, http.StatusUnauthorized, loginPage, map[string]string{"ID": id, "Error": err.Error()})
			return
		}
		http.Redirect(w, r, callback(r.Context(), id), http.StatusFound)
	}))
	mux.HandleFunc("GET /device", func(w http.ResponseWriter, r *http.Request) {
		render(w, http.StatusOK, devicePage, map[string]string{"Code": r.URL.Query().Get("user_code")})
	})
	mux.HandleFunc("POST /device", func(w http.ResponseWriter, r *http.Request) {
		code := r.PostFormValue("user_code")
		if err := st.completeDevice(code, r.PostFormValue("username"), r.PostFormValue("password")); err != nil {
			render(w, http.StatusUnauthorized, devicePage, map[string]string{"Code": code, "Error": err.Error()})
			return
		}
		render(w, http.StatusOK, devicePage, map[string]string{"Done": "yes"})
	})
	mux.HandleFunc("GET /logged-out", func(w http.ResponseWriter, _ *http.Request) {
		render(w, http.StatusOK, loggedOutPage, nil)
	})
	mux.Handle("/", prov)
	srv.Config.Handler = mux
	srv.Start()
	t.Cleanup(srv.Close)
	return p
}

// UserCode waits for the next device authorization and returns its user
// code: what the user reads off the device's screen.
func (p *Provider) UserCode(t testing.TB) string {
	t.Helper()
	select {
	case c := <-p.st.userCodes:
		return c
	case <-time.After(time.Minute):
		t.Fatal("oidctest: no device authorization within a minute")
		return ""
	}
}

// CompleteDevice is the user entering userCode and signing in on the
// provider's device page.
func (p *Provider) CompleteDevice(t testing.TB, userCode, username, password string) {
	t.Helper()
	resp, err := http.PostForm(p.Issuer+"/device", url.Values{"user_code": {userCode}, "username": {username}, "password": {password}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("oidctest: device sign-in of %s: %s", username, resp.Status)
	}
}

// Browse is a browser opening authURL, signing in on the provider's page
// as username and following the provider's redirect back to the client;
// it returns the client's answer.
func (p *Provider) Browse(t testing.TB, authURL, username, password string) (status int, body string) {
	t.Helper()
	c := &http.Client{Timeout: time.Minute}
	resp, err := c.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	id := resp.Request.URL.Query().Get("authRequestID")
	if resp.StatusCode != http.StatusOK || id == "" {
		t.Fatalf("oidctest: %s led to %s (%s), not the login page", authURL, resp.Request.URL, resp.Status)
	}
	resp, err = c.PostForm(p.Issuer+"/login", url.Values{"id": {id}, "username": {username}, "password": {password}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// RotateKey replaces the provider's signing key (and its key id): it
// signs and publishes only the new one from now on.
func (p *Provider) RotateKey(t testing.TB) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	p.st.mu.Lock()
	defer p.st.mu.Unlock()
	p.st.key, p.st.keyID = key, "key-"+newID()[:8]
}

// SetGroups replaces a user's groups (a directory change between two
// sign-ins).
func (p *Provider) SetGroups(username string, groups []string) {
	p.st.mu.Lock()
	defer p.st.mu.Unlock()
	p.st.users[username].Groups = slices.Clone(groups)
}

// Tamper is how a provider misbehaves in the ID tokens of the
// authorization requests that follow: what an injected, replayed, stale or
// forged token looks like to the client.
type Tamper struct {
	// Nonce: another nonce than the one asked.
	Nonce bool
	// Expired: tokens that expired ten minutes before they were issued.
	Expired bool
	// ForeignKey: signed with a key the provider does not publish (under
	// the kid of the one it does).
	ForeignKey bool
}

// Tamper sets how the provider misbehaves from now on (the zero Tamper:
// not at all).
func (p *Provider) Tamper(t Tamper) {
	p.st.mu.Lock()
	defer p.st.mu.Unlock()
	p.st.tamper = t
}

// Sign signs claims as an ID token with the provider's own key (good is
// true) or with a stranger's key under the provider's key id (a forged
// signature), for tests of the client's verification.
func (p *Provider) Sign(t testing.TB, claims map[string]any, good bool) string {
	t.Helper()
	p.st.mu.Lock()
	key, kid := p.st.key, p.st.keyID
	if !good {
		key = p.st.foreign
	}
	p.st.mu.Unlock()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", kid))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	jws, err := signer.Sign(b)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// client is the one relying party: a confidential web client.
type client struct {
	id, secret string
	redirects  []string
	st         *storage
}

func (c *client) GetID() string                    { return c.id }
func (c *client) RedirectURIs() []string           { return c.redirects }
func (c *client) PostLogoutRedirectURIs() []string { return c.redirects }
func (c *client) RedirectURIGlobs() []string {
	return []string{"http://127.0.0.1:*/callback"}
}
func (c *client) PostLogoutRedirectURIGlobs() []string { return []string{"http://127.0.0.1:*/login"} }
func (c *client) ApplicationType() op.ApplicationType  { return op.ApplicationTypeWeb }
func (c *client) AuthMethod() oidc.AuthMethod          { return oidc.AuthMethodBasic }
func (c *client) ResponseTypes() []oidc.ResponseType {
	return []oidc.ResponseType{oidc.ResponseTypeCode}
}
func (c *client) GrantTypes() []oidc.GrantType {
	return []oidc.GrantType{oidc.GrantTypeCode, oidc.GrantTypeDeviceCode}
}
func (c *client) LoginURL(id string) string            { return "/login?authRequestID=" + id }
func (c *client) AccessTokenType() op.AccessTokenType  { return op.AccessTokenTypeBearer }
func (c *client) IDTokenLifetime() time.Duration       { return c.st.idTokenLifetime() }
func (c *client) DevMode() bool                        { return false }
func (c *client) IsScopeAllowed(scope string) bool     { return scope == GroupsClaim }
func (c *client) IDTokenUserinfoClaimsAssertion() bool { return true }
func (c *client) ClockSkew() time.Duration             { return 0 }
func (c *client) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c *client) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}

var pages = template.Must(template.New("").Parse(`
{{define "login"}}<!doctype html><html><head><title>Test provider: sign in</title>
<style>body{font-family:sans-serif;max-width:22rem;margin:3rem auto}input,button{display:block;width:100%;margin:.4rem 0;padding:.4rem}</style></head>
<body><h1>Test provider</h1>{{with .Error}}<p id="op-error">{{.}}</p>{{end}}
<form method="post" action="/login"><input type="hidden" name="id" value="{{.ID}}">
<label>Username <input id="op-username" name="username" autocomplete="off"></label>
<label>Password <input id="op-password" name="password" type="password"></label>
<button id="op-submit" type="submit">Sign in</button></form></body></html>{{end}}
{{define "device"}}<!doctype html><html><head><title>Test provider: device</title></head><body>
{{if .Done}}<p id="op-done">Signed in: return to the device.</p>{{else}}{{with .Error}}<p id="op-error">{{.}}</p>{{end}}
<form method="post" action="/device"><input name="user_code" value="{{.Code}}">
<input name="username"><input name="password" type="password"><button type="submit">Allow</button></form>{{end}}</body></html>{{end}}
{{define "loggedout"}}<!doctype html><html><body><p id="op-logged-out">Signed out of the test provider.</p></body></html>{{end}}
`))

const (
	loginPage     = "login"
	devicePage    = "device"
	loggedOutPage = "loggedout"
)

func render(w http.ResponseWriter, status int, name string, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_ = pages.ExecuteTemplate(w, name, data)
}
