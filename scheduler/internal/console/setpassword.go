package console

import (
	"errors"
	"net/http"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// setPasswordForm is the set-password page's data: the link's token,
// carried in a hidden field.
type setPasswordForm struct {
	Token string
}

// setPasswordPage is where a one-time set-password link leads (an
// imported user's first password, an admin's reset): anyone holding the
// link may open it, no session needed; the API checks the token when the
// form is sent.
func (c *Console) setPasswordPage(w http.ResponseWriter, r *http.Request) error {
	return c.render(w, r, http.StatusOK, "set_password", page{Title: c.lang(r, nil).T("Choose a password"),
		Data: setPasswordForm{Token: r.URL.Query().Get("token")}})
}

// setPassword sends the chosen password with the link's token through
// POST /api/v1/password-links/use, then opens the sign-in page; a refusal
// (a password the policy refuses, a used or expired link) shows the form
// again with the API's words.
func (c *Console) setPassword(w http.ResponseWriter, r *http.Request) error {
	if err := r.ParseForm(); err != nil {
		return badForm(err)
	}
	form := setPasswordForm{Token: r.PostForm.Get("token")}
	pw := r.PostForm.Get("password")
	if pw != r.PostForm.Get("confirm") {
		return c.render(w, r, http.StatusBadRequest, "set_password", page{Title: c.lang(r, nil).T("Choose a password"),
			Error: "The two passwords differ: type the same one twice.", Data: form})
	}
	anon := r.Clone(r.Context())
	anon.Header.Del("Cookie")
	anon.Header.Del("Authorization")
	_, err := c.call(anon, http.MethodPost, "/api/v1/password-links/use", nil, apiv1.PasswordLinkUse{Token: form.Token, Password: pw}, nil)
	var ae *APIError
	if errors.As(err, &ae) && ae.Status < 500 {
		return c.render(w, r, ae.Status, "set_password", page{Title: c.lang(r, nil).T("Choose a password"), Error: ae.Error(), Data: form})
	}
	if err != nil {
		return err
	}
	redirect(w, r, "/login", noticePasswordSet)
	return nil
}
