package apiv1

import "time"

// Sign-in through the company's identity provider (docs/sso.md). Every
// route is public: it is how a caller gets credentials.
//
//	GET  /api/v1/sso                           → SSOInfo
//	POST /api/v1/sso/{provider}/start          SSOStart → SSOStarted
//	POST /api/v1/sso/{provider}/session        SSOCallback → SSOSignedIn + session cookie
//	POST /api/v1/sso/{provider}/key            SSOCallback → 201 CreatedKey (a CLI's loopback redirect)
//	POST /api/v1/sso/{provider}/device         → SSODevice (the device grant, for the CLI)
//	POST /api/v1/sso/{provider}/device/key     SSODevicePoll → 201 CreatedKey, or 202 SSOPending
//
// A refused sign-in answers 401 with the reason in Error (and an audit
// row sso.refused); the LDAP directory signs in through POST /login with
// Provider "ldap".

// SSOInfo lists the ways to sign in besides a local password.
type SSOInfo struct {
	Providers []SSOProvider `json:"providers"`
	// LDAP names the directory of the sign-in form, when there is one.
	LDAP string `json:"ldap,omitempty"`
	// RequireSSO: only the break-glass admin may sign in with a password.
	RequireSSO bool `json:"require_sso"`
}

// SSOProvider is one OpenID provider.
type SSOProvider struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// SSOStart asks for a sign-in at a provider.
type SSOStart struct {
	// Next is where the console goes after signing in.
	Next string `json:"next,omitempty"`
	// RedirectURI is a CLI's loopback address (http://127.0.0.1:PORT/…);
	// empty: the console's callback.
	RedirectURI string `json:"redirect_uri,omitempty"`
}

// SSOStarted is where to send the browser, and the state to keep (the
// console keeps it in a cookie that the callback must bring back).
type SSOStarted struct {
	AuthURL string `json:"auth_url"`
	State   string `json:"state"`
}

// SSOCallback is what the provider sent back to the redirect URI.
type SSOCallback struct {
	Code  string `json:"code,omitempty"`
	State string `json:"state"`
	// BrowserState is the state the browser kept (its cookie): it must
	// equal State, so that a sign-in started in one browser cannot be
	// finished in another.
	BrowserState string `json:"browser_state,omitempty"`
	// Error and ErrorDescription are the provider's, when it refused.
	Error            string `json:"error,omitempty"`
	ErrorDescription string `json:"error_description,omitempty"`
	// KeyName and ExpiresAt are the CLI key's (…/key).
	KeyName   string     `json:"key_name,omitempty"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
}

// SSOSignedIn answers a console sign-in.
type SSOSignedIn struct {
	Me   Me     `json:"me"`
	Next string `json:"next"`
}

// SSODevice is a device authorization under way: show UserCode and
// VerificationURI, then poll with Handle.
type SSODevice struct {
	Handle                  string    `json:"handle"`
	UserCode                string    `json:"user_code"`
	VerificationURI         string    `json:"verification_uri"`
	VerificationURIComplete string    `json:"verification_uri_complete,omitempty"`
	IntervalSeconds         int       `json:"interval_seconds"`
	ExpiresAt               time.Time `json:"expires_at"`
}

// SSODevicePoll asks whether the user finished.
type SSODevicePoll struct {
	Handle    string     `json:"handle"`
	KeyName   string     `json:"key_name"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
}

// SSOPending answers a poll before the user finished: poll again after
// IntervalSeconds.
type SSOPending struct {
	Status          string `json:"status"`
	IntervalSeconds int    `json:"interval_seconds"`
}

// LogoutResult answers POST /logout of a session started at a provider
// that offers an end_session_endpoint: the console sends the browser on
// to it. Other logouts answer 204.
type LogoutResult struct {
	EndSessionURL string `json:"end_session_url"`
}
