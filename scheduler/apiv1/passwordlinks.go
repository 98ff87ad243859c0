package apiv1

import "time"

// One-time set-password links (docs/security.md): an admin issues one for
// a user (an imported user has no password); whoever holds it sets the
// user's password once, before it expires, on the console page
// /set-password?token=…
//
//	POST /api/v1/users/{name}/password-link [PasswordLinkRequest] → 201 PasswordLink (admin)
//	POST /api/v1/password-links/use PasswordLinkUse → 204 (public: the token is the credential; 410 once used or expired)

// PasswordLinkRequest is the optional body of POST .../password-link.
type PasswordLinkRequest struct {
	// TTL is how long the link works (default 72h, at most 30 days).
	TTL Duration `json:"ttl,omitempty"`
}

// PasswordLink answers POST .../password-link: the only time the token is
// shown (the scheduler keeps its hash). Path is the console page to open,
// with the token; put the scheduler's address before it.
type PasswordLink struct {
	User      string    `json:"user"`
	Token     string    `json:"token"`
	Path      string    `json:"path"`
	ExpiresAt time.Time `json:"expires_at"`
}

// PasswordLinkUse is the body of POST /password-links/use.
type PasswordLinkUse struct {
	Token    string `json:"token"`
	Password string `json:"password"`
}
