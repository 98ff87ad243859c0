package console

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// The users pages are the admins' (the API answers anyone else 403, which
// the console shows as its error page): the list with a form for a new
// user, and one user's page with their grants, a password reset, disable
// and "sign out everywhere".

var (
	noticeUserCreated  = newNotice("user-created", "User created.")
	noticeUserSaved    = newNotice("user-saved", "User saved.")
	noticeGrantSet     = newNotice("grant-set", "Grant saved.")
	noticeGrantRemoved = newNotice("grant-removed", "Grant removed.")
	noticeUserRevoked  = newNotice("user-revoked", "Every session and API key of the user is revoked.")
)

type usersPage struct {
	Users []apiv1.User
	// Form is the new-user form, kept when the API refused it.
	Form      apiv1.UserCreate
	FormError string
}

func (c *Console) users(w http.ResponseWriter, r *http.Request) error {
	return c.usersWith(w, r, http.StatusOK, usersPage{})
}

func (c *Console) usersWith(w http.ResponseWriter, r *http.Request, code int, data usersPage) error {
	u, err := c.me(r)
	if err != nil {
		return err
	}
	var ul apiv1.UserList
	if _, err := c.call(r, http.MethodGet, "/api/v1/users", nil, nil, &ul); err != nil {
		return err
	}
	data.Users = ul.Users
	return c.render(w, r, code, "users", page{Title: c.lang(r, u).T("Users"), User: u, Data: data})
}

// createUser creates a user (POST /api/v1/users); a refusal shows the
// list again with the form as typed (never the password) and the API's
// words.
func (c *Console) createUser(w http.ResponseWriter, r *http.Request) error {
	if err := r.ParseForm(); err != nil {
		return badForm(err)
	}
	in := apiv1.UserCreate{Name: strings.TrimSpace(r.PostForm.Get("name")),
		DisplayName: strings.TrimSpace(r.PostForm.Get("display_name")),
		Password:    r.PostForm.Get("password"), Admin: r.PostForm.Get("admin") == "on"}
	_, err := c.call(r, http.MethodPost, "/api/v1/users", nil, in, nil)
	if ae := formRefusal(err); ae != nil {
		in.Password = ""
		return c.usersWith(w, r, ae.Status, usersPage{Form: in, FormError: ae.Error()})
	}
	if err != nil {
		return err
	}
	redirect(w, r, "/users/"+url.PathEscape(in.Name), noticeUserCreated)
	return nil
}

// formRefusal is the API's refusal of a form's content (400, 409), which
// the page shows beside the form; nil for success or any other error.
func formRefusal(err error) *APIError {
	var ae *APIError
	if errors.As(err, &ae) && (ae.Status == http.StatusBadRequest || ae.Status == http.StatusConflict) {
		return ae
	}
	return nil
}

type userPage struct {
	U apiv1.User
	// Groups are the groups a grant may name.
	Groups    []string
	FormError string
}

func (c *Console) userDetail(w http.ResponseWriter, r *http.Request) error {
	return c.userWith(w, r, http.StatusOK, "")
}

func (c *Console) userWith(w http.ResponseWriter, r *http.Request, code int, formError string) error {
	u, err := c.me(r)
	if err != nil {
		return err
	}
	data := userPage{FormError: formError}
	if _, err := c.call(r, http.MethodGet, "/api/v1/users/"+url.PathEscape(r.PathValue("name")), nil, nil, &data.U); err != nil {
		return err
	}
	if data.Groups, err = c.groupNames(r); err != nil {
		return err
	}
	return c.render(w, r, code, "user", page{Title: data.U.Name, User: u, Data: data})
}

// userPath is the API path of the user the console path names.
func userPath(r *http.Request) string { return "/api/v1/users/" + url.PathEscape(r.PathValue("name")) }

// userBack is the user's console page.
func userBack(r *http.Request) string { return "/users/" + url.PathEscape(r.PathValue("name")) }

// updateUser changes what the form holds (PATCH): display name, a new
// password (set by the admin: a reset), disabled, admin.
func (c *Console) updateUser(w http.ResponseWriter, r *http.Request) error {
	if err := r.ParseForm(); err != nil {
		return badForm(err)
	}
	var p apiv1.UserPatch
	f := r.PostForm
	if f.Has("display_name") {
		v := strings.TrimSpace(f.Get("display_name"))
		p.DisplayName = &v
	}
	if v := f.Get("password"); v != "" {
		p.Password = &v
	}
	if f.Has("disabled") {
		v := f.Get("disabled") == "true"
		p.Disabled = &v
	}
	if f.Has("admin") {
		v := f.Get("admin") == "true"
		p.Admin = &v
	}
	p.RevokeCredentials = f.Get("revoke_credentials") == "true"
	_, err := c.call(r, http.MethodPatch, userPath(r), nil, p, nil)
	if ae := formRefusal(err); ae != nil {
		return c.userWith(w, r, ae.Status, ae.Error())
	}
	if err != nil {
		return err
	}
	n := noticeUserSaved
	if p.RevokeCredentials {
		n = noticeUserRevoked
	}
	redirect(w, r, userBack(r), n)
	return nil
}

// setGrant gives the user a role on a group (replacing the group's grant).
func (c *Console) setGrant(w http.ResponseWriter, r *http.Request) error {
	if err := r.ParseForm(); err != nil {
		return badForm(err)
	}
	g := apiv1.Grant{Group: r.PostForm.Get("group"), Role: r.PostForm.Get("role"), Scripts: r.PostForm.Get("scripts") == "on"}
	_, err := c.call(r, http.MethodPost, userPath(r)+"/grants", nil, g, nil)
	if ae := formRefusal(err); ae != nil {
		return c.userWith(w, r, ae.Status, ae.Error())
	}
	if err != nil {
		return err
	}
	redirect(w, r, userBack(r), noticeGrantSet)
	return nil
}

// removeGrant takes the user's grant on a group away.
func (c *Console) removeGrant(w http.ResponseWriter, r *http.Request) error {
	if err := r.ParseForm(); err != nil {
		return badForm(err)
	}
	q := url.Values{"group": {r.PostForm.Get("group")}}
	if _, err := c.call(r, http.MethodDelete, userPath(r)+"/grants", q, nil, nil); err != nil {
		return err
	}
	redirect(w, r, userBack(r), noticeGrantRemoved)
	return nil
}
