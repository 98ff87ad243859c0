package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// SessionCookie is the name of the cookie POST /login sets.
const SessionCookie = "jetjob_session"

// WithSessionCookie makes the Client authenticate with a session (the value
// of the cookie Login returned) instead of a bearer key.
func WithSessionCookie(value string) Option {
	return func(c *Client) { c.session = value }
}

// Me returns the principal the client authenticates as.
func (c *Client) Me(ctx context.Context) (*apiv1.Me, error) {
	return call[apiv1.Me](ctx, c, http.MethodGet, "/me", nil, nil)
}

// Login starts a session with a user's name and password. It returns the
// principal and the session cookie's value (pass it to WithSessionCookie).
// Too many failed attempts answer 429.
func (c *Client) Login(ctx context.Context, name, password string) (*apiv1.Me, string, error) {
	var out apiv1.Me
	resp, err := c.send(ctx, http.MethodPost, "/login", nil, apiv1.LoginRequest{Name: name, Password: password}, &out)
	if err != nil {
		return nil, "", err
	}
	for _, ck := range resp.Cookies() {
		if ck.Name == SessionCookie {
			return &out, ck.Value, nil
		}
	}
	return nil, "", fmt.Errorf("client: login: the answer set no %s cookie", SessionCookie)
}

// Logout ends the client's session (WithSessionCookie).
func (c *Client) Logout(ctx context.Context) error {
	return c.do(ctx, http.MethodPost, "/logout", nil, nil, nil)
}

// ListUsers lists every user (admin).
func (c *Client) ListUsers(ctx context.Context) (*apiv1.UserList, error) {
	return call[apiv1.UserList](ctx, c, http.MethodGet, "/users", nil, nil)
}

// CreateUser creates a user (admin).
func (c *Client) CreateUser(ctx context.Context, u apiv1.UserCreate) (*apiv1.User, error) {
	return call[apiv1.User](ctx, c, http.MethodPost, "/users", nil, u)
}

// GetUser reads a user (admin, or the user themself).
func (c *Client) GetUser(ctx context.Context, name string) (*apiv1.User, error) {
	return call[apiv1.User](ctx, c, http.MethodGet, userPath(name), nil, nil)
}

// UpdateUser changes the fields of p that are set.
func (c *Client) UpdateUser(ctx context.Context, name string, p apiv1.UserPatch) (*apiv1.User, error) {
	return call[apiv1.User](ctx, c, http.MethodPatch, userPath(name), nil, p)
}

// DeleteUser deletes a user with their grants, keys and sessions (admin).
func (c *Client) DeleteUser(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodDelete, userPath(name), nil, nil, nil)
}

// SetGrant gives a user a role on a group, replacing the grant the user
// had on that group (admin).
func (c *Client) SetGrant(ctx context.Context, user string, g apiv1.Grant) (*apiv1.User, error) {
	return call[apiv1.User](ctx, c, http.MethodPost, userPath(user)+"/grants", nil, g)
}

// DeleteGrant removes a user's grant on a group (admin).
func (c *Client) DeleteGrant(ctx context.Context, user, group string) (*apiv1.User, error) {
	q := url.Values{"group": {group}}
	return call[apiv1.User](ctx, c, http.MethodDelete, userPath(user)+"/grants", q, nil)
}

// ListKeys lists a user's API keys ("" for the caller's own).
func (c *Client) ListKeys(ctx context.Context, user string) (*apiv1.KeyList, error) {
	q := url.Values{}
	if user != "" {
		q.Set("user", user)
	}
	return call[apiv1.KeyList](ctx, c, http.MethodGet, "/keys", q, nil)
}

// CreateKey creates an API key; the answer holds its secret, which is
// never shown again.
func (c *Client) CreateKey(ctx context.Context, k apiv1.KeyCreate) (*apiv1.CreatedKey, error) {
	return call[apiv1.CreatedKey](ctx, c, http.MethodPost, "/keys", nil, k)
}

// RevokeKey revokes an API key: requests with it answer 401 from then on.
func (c *Client) RevokeKey(ctx context.Context, id int64) error {
	return c.do(ctx, http.MethodDelete, "/keys/"+strconv.FormatInt(id, 10), nil, nil, nil)
}

// AuditOptions filters GET /audit; zero values do not filter.
type AuditOptions struct {
	Actor  string
	Target string // e.g. "job:12"
	Action string // e.g. "job.update"
	// From (inclusive) and To (exclusive) bound the entries' time.
	From, To time.Time
	Limit    int
	// Before is AuditList.Next of the previous page.
	Before int64
}

func (o AuditOptions) query() url.Values {
	q := pageQuery("before", o.Before, o.Limit)
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	set("actor", o.Actor)
	set("target", o.Target)
	set("action", o.Action)
	if !o.From.IsZero() {
		q.Set("from", o.From.Format(time.RFC3339Nano))
	}
	if !o.To.IsZero() {
		q.Set("to", o.To.Format(time.RFC3339Nano))
	}
	return q
}

// Audit reads a page of the audit log, newest first (admin).
func (c *Client) Audit(ctx context.Context, opts AuditOptions) (*apiv1.AuditList, error) {
	return call[apiv1.AuditList](ctx, c, http.MethodGet, "/audit", opts.query(), nil)
}

// JobHistory reads a page of a job's revisions, newest first; only
// opts.Limit and opts.Before apply.
func (c *Client) JobHistory(ctx context.Context, id int64, opts AuditOptions) (*apiv1.AuditList, error) {
	q := AuditOptions{Limit: opts.Limit, Before: opts.Before}.query()
	return call[apiv1.AuditList](ctx, c, http.MethodGet, jobPath(id)+"/history", q, nil)
}

func userPath(name string) string { return "/users/" + url.PathEscape(name) }

// PasswordLink issues a one-time set-password link for a user (admin);
// ttl 0 is the server's default (72 h).
func (c *Client) PasswordLink(ctx context.Context, user string, ttl time.Duration) (*apiv1.PasswordLink, error) {
	return call[apiv1.PasswordLink](ctx, c, http.MethodPost, "/users/"+url.PathEscape(user)+"/password-link", nil,
		apiv1.PasswordLinkRequest{TTL: apiv1.Duration(ttl)})
}

// UsePasswordLink sets the password a link's token is for; it needs no
// credentials.
func (c *Client) UsePasswordLink(ctx context.Context, token, password string) error {
	return c.do(ctx, http.MethodPost, "/password-links/use", nil, apiv1.PasswordLinkUse{Token: token, Password: password}, nil)
}
