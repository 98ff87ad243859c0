package console

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// The API keys page: the caller's own keys, or (admins) any user's by
// ?user=. A new key's secret is shown once, on the page the create form
// answers with (never in a URL, so never in a browser history or a log);
// the list shows only its public prefix.

var noticeKeyRevoked = newNotice("key-revoked", "Key revoked: requests with it answer 401 from now on.")

type keysPage struct {
	// Owner is whose keys are listed: the caller's or, for an admin, ?user=.
	Owner string
	Keys  []apiv1.Key
	// Users are every user, for an admin's choice of whose keys to show.
	Users []string
	// Created is the key just made, with its secret: shown this once.
	Created   *apiv1.CreatedKey
	FormName  string
	FormError string
}

func (c *Console) keys(w http.ResponseWriter, r *http.Request) error {
	return c.keysWith(w, r, http.StatusOK, keysPage{Owner: r.URL.Query().Get("user")})
}

func (c *Console) keysWith(w http.ResponseWriter, r *http.Request, code int, data keysPage) error {
	u, err := c.me(r)
	if err != nil {
		return err
	}
	if data.Owner == "" {
		data.Owner = u.Name
	}
	var kl apiv1.KeyList
	if _, err := c.call(r, http.MethodGet, "/api/v1/keys", url.Values{"user": {data.Owner}}, nil, &kl); err != nil {
		return err
	}
	data.Keys = kl.Keys
	if u.Admin {
		var ul apiv1.UserList
		if _, err := c.call(r, http.MethodGet, "/api/v1/users", nil, nil, &ul); err != nil {
			return err
		}
		for _, x := range ul.Users {
			data.Users = append(data.Users, x.Name)
		}
	}
	return c.render(w, r, code, "keys", page{Title: c.lang(r, u).T("API keys"), User: u, Data: data})
}

// createKey makes a key for the form's owner and answers with the list
// and the secret, once.
func (c *Console) createKey(w http.ResponseWriter, r *http.Request) error {
	if err := r.ParseForm(); err != nil {
		return badForm(err)
	}
	in := apiv1.KeyCreate{Name: strings.TrimSpace(r.PostForm.Get("name")), User: r.PostForm.Get("user")}
	data := keysPage{Owner: in.User, FormName: in.Name}
	if d := r.PostForm.Get("expires_days"); d != "" {
		n, err := strconv.Atoi(d)
		if err != nil || n < 1 || n > 3650 {
			u, err := c.me(r)
			if err != nil {
				return err
			}
			data.FormError = c.lang(r, u).T("expires in: a whole number of days from 1 to 3650, or empty for a key that does not expire")
			return c.keysWith(w, r, http.StatusBadRequest, data)
		}
		at := time.Now().Add(time.Duration(n) * 24 * time.Hour).UTC().Truncate(time.Second)
		in.ExpiresAt = &at
	}
	var out apiv1.CreatedKey
	_, err := c.call(r, http.MethodPost, "/api/v1/keys", nil, in, &out)
	if ae := formRefusal(err); ae != nil {
		data.FormError = ae.Error()
		return c.keysWith(w, r, ae.Status, data)
	}
	if err != nil {
		return err
	}
	data.Created, data.FormName = &out, ""
	return c.keysWith(w, r, http.StatusCreated, data)
}

// revokeKey revokes a key (own, or any for an admin) and goes back to the
// owner's list.
func (c *Console) revokeKey(w http.ResponseWriter, r *http.Request) error {
	if err := r.ParseForm(); err != nil {
		return badForm(err)
	}
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		return &APIError{Status: http.StatusNotFound, Doc: apiv1.Error{Error: "no such key"}}
	}
	if _, err := c.call(r, http.MethodDelete, "/api/v1/keys/"+strconv.FormatInt(id, 10), nil, nil, nil); err != nil {
		return err
	}
	back := "/keys"
	if o := r.PostForm.Get("user"); o != "" {
		back += "?user=" + url.QueryEscape(o)
	}
	redirect(w, r, back, noticeKeyRevoked)
	return nil
}
