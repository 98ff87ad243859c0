package console

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// The secrets page (docs/jobs.md, "Secrets"): a group's secrets by name,
// with their version, who changed them last and the jobs that use them;
// a form to create one, and per secret a form to rotate its value and a
// button to delete it. A value goes one way, into the API: no page shows
// one, a refused form is answered without the value typed in (it is typed
// again), and the value fields are password fields the browser does not
// fill or remember.

var (
	noticeSecretCreated = newNotice("secret-created", "Secret created. Jobs of its group may name it in secret_env, or as ${secret:NAME} in their params.")
	noticeSecretRotated = newNotice("secret-rotated", "Secret rotated: runs started from now on get the new value.")
	noticeSecretDeleted = newNotice("secret-deleted", "Secret deleted.")
)

type secretsPage struct {
	// Group filters the list ("": every group the user reads).
	Group   string
	Groups  []string
	Secrets []apiv1.Secret
	// Writable are the groups whose secrets the user may write (operator
	// with scripts): the create form's choices.
	Writable []string
	// FormGroup and FormName refill a refused create form; FormError says
	// why (RotateError, for RotateID, a refused rotation).
	FormGroup, FormName string
	FormError           string
	RotateID            int64
	RotateError         string
}

func (c *Console) secrets(w http.ResponseWriter, r *http.Request) error {
	return c.secretsWith(w, r, http.StatusOK, secretsPage{Group: r.URL.Query().Get("group")})
}

func (c *Console) secretsWith(w http.ResponseWriter, r *http.Request, code int, data secretsPage) error {
	u, err := c.me(r)
	if err != nil {
		return err
	}
	var gl apiv1.GroupList
	if _, err := c.call(r, http.MethodGet, "/api/v1/groups", nil, nil, &gl); err != nil {
		return err
	}
	for _, g := range gl.Groups {
		data.Groups = append(data.Groups, g.Name)
		if u.CanScripts(g.Name) {
			data.Writable = append(data.Writable, g.Name)
		}
	}
	q := url.Values{}
	if data.Group != "" {
		q.Set("group", data.Group)
	}
	var sl apiv1.SecretList
	if _, err := c.call(r, http.MethodGet, "/api/v1/secrets", q, nil, &sl); err != nil {
		return err
	}
	data.Secrets = sl.Secrets
	return c.render(w, r, code, "secrets", page{Title: c.lang(r, u).T("Secrets"), User: u, Data: data})
}

// createSecret creates the form's secret and goes back to its group's list.
func (c *Console) createSecret(w http.ResponseWriter, r *http.Request) error {
	if err := r.ParseForm(); err != nil {
		return badForm(err)
	}
	in := apiv1.SecretWrite{Group: r.PostForm.Get("group"), Name: strings.TrimSpace(r.PostForm.Get("name")), Value: r.PostForm.Get("value")}
	data := secretsPage{Group: r.PostForm.Get("list_group"), FormGroup: in.Group, FormName: in.Name}
	if in.Value == "" {
		u, err := c.me(r)
		if err != nil {
			return err
		}
		data.FormError = c.lang(r, u).T("value: required (a secret holds a value)")
		return c.secretsWith(w, r, http.StatusBadRequest, data)
	}
	_, err := c.call(r, http.MethodPost, "/api/v1/secrets", nil, in, nil)
	if ae := formRefusal(err); ae != nil {
		data.FormError = ae.Error()
		return c.secretsWith(w, r, ae.Status, data)
	}
	if err != nil {
		return err
	}
	redirect(w, r, "/secrets?group="+url.QueryEscape(in.Group), noticeSecretCreated)
	return nil
}

// rotateSecret gives the path's secret the form's new value.
func (c *Console) rotateSecret(w http.ResponseWriter, r *http.Request) error {
	if err := r.ParseForm(); err != nil {
		return badForm(err)
	}
	id, err := secretConsoleID(r)
	if err != nil {
		return err
	}
	data := secretsPage{Group: r.PostForm.Get("list_group"), RotateID: id}
	value := r.PostForm.Get("value")
	if value == "" {
		u, err := c.me(r)
		if err != nil {
			return err
		}
		data.RotateError = c.lang(r, u).T("new value: required")
		return c.secretsWith(w, r, http.StatusBadRequest, data)
	}
	_, err = c.call(r, http.MethodPut, secretPath(id), nil, apiv1.SecretWrite{Value: value}, nil)
	if ae := formRefusal(err); ae != nil {
		data.RotateError = ae.Error()
		return c.secretsWith(w, r, ae.Status, data)
	}
	if err != nil {
		return err
	}
	redirect(w, r, secretsBack(data.Group), noticeSecretRotated)
	return nil
}

// deleteSecret deletes the path's secret (the API refuses one a job
// still names, said on the page).
func (c *Console) deleteSecret(w http.ResponseWriter, r *http.Request) error {
	if err := r.ParseForm(); err != nil {
		return badForm(err)
	}
	id, err := secretConsoleID(r)
	if err != nil {
		return err
	}
	group := r.PostForm.Get("list_group")
	_, err = c.call(r, http.MethodDelete, secretPath(id), nil, nil, nil)
	if ae := formRefusal(err); ae != nil {
		return c.secretsWith(w, r, ae.Status, secretsPage{Group: group, RotateID: id, RotateError: ae.Error()})
	}
	if err != nil {
		return err
	}
	redirect(w, r, secretsBack(group), noticeSecretDeleted)
	return nil
}

func secretPath(id int64) string { return "/api/v1/secrets/" + strconv.FormatInt(id, 10) }

func secretsBack(group string) string {
	if group == "" {
		return "/secrets"
	}
	return "/secrets?group=" + url.QueryEscape(group)
}

func secretConsoleID(r *http.Request) (int64, error) {
	return pathID(r, http.StatusNotFound, "no such page: secret id %q is not a positive number")
}
