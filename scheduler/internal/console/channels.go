package console

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// The channels pages (docs/alerts.md, "Channels"): the list, the create
// and edit form, and "send test", whose outcome (sent with the receiver's
// status, or why not) is shown on the list at once. As everywhere in the
// console, each read and change is the API's (GET, POST, PUT
// /api/v1/channels, POST …/test): its permission rules are the pages'.

// channelKinds are the kinds a channel may have, the form's choices.
var channelKinds = []string{"email", "webhook", "slack", "teams", "dingtalk", "feishu", "wecom"}

// channelsPage is the list's data.
type channelsPage struct {
	Channels []apiv1.Channel
	// Tested is the channel "send test" was asked of, Test its outcome.
	Tested *apiv1.Channel
	Test   *apiv1.ChannelTest
}

// channelForm is the create and edit form's data.
type channelForm struct {
	Channel apiv1.Channel
	// Edit says the form edits Channel (its kind and group are fixed).
	Edit   bool
	Kinds  []string
	Groups []string
	Error  string
}

// Action is where the form posts.
func (f *channelForm) Action() string {
	if f.Edit {
		return fmt.Sprintf("/channels/%d", f.Channel.ID)
	}
	return "/channels"
}

// mayChange reports whether u changes what belongs to group ("": global,
// admins only): whether a page shows its controls (the API decides).
func (u *User) mayChange(group string) bool {
	if group == "" {
		return u != nil && u.Admin
	}
	return u.CanOperate(group)
}

// MayChange is mayChange for templates.
func (u *User) MayChange(group string) bool { return u.mayChange(group) }

func (c *Console) channels(w http.ResponseWriter, r *http.Request) error {
	return c.channelsWith(w, r, nil, nil)
}

// channelsWith renders the list, with a test's outcome when one was sent.
func (c *Console) channelsWith(w http.ResponseWriter, r *http.Request, tested *apiv1.Channel, test *apiv1.ChannelTest) error {
	u, err := c.me(r)
	if err != nil {
		return err
	}
	var cs []apiv1.Channel
	if _, err := c.call(r, http.MethodGet, "/api/v1/channels", nil, nil, &cs); err != nil {
		return err
	}
	return c.render(w, r, http.StatusOK, "channels", page{Title: c.lang(r, u).T("Channels"), User: u,
		Data: channelsPage{Channels: cs, Tested: tested, Test: test}})
}

// newChannel shows the empty form.
func (c *Console) newChannel(w http.ResponseWriter, r *http.Request) error {
	u, err := c.me(r)
	if err != nil {
		return err
	}
	return c.channelFormPage(w, r, u, http.StatusOK, &channelForm{Channel: apiv1.Channel{Kind: "webhook"}})
}

// editChannel shows the form with the channel (its target as the API
// shows it: a chat vendor's URL is its credential and never comes back,
// so editing it means typing it again).
func (c *Console) editChannel(w http.ResponseWriter, r *http.Request) error {
	u, err := c.me(r)
	if err != nil {
		return err
	}
	var ch apiv1.Channel
	if _, err := c.call(r, http.MethodGet, "/api/v1/channels/"+r.PathValue("id"), nil, nil, &ch); err != nil {
		return err
	}
	return c.channelFormPage(w, r, u, http.StatusOK, &channelForm{Channel: ch, Edit: true})
}

func (c *Console) channelFormPage(w http.ResponseWriter, r *http.Request, u *User, code int, f *channelForm) error {
	f.Kinds = channelKinds
	if !f.Edit {
		groups := u.OperableGroups()
		if u.Admin {
			all, err := c.groupNames(r)
			if err != nil {
				return err
			}
			groups = append([]string{""}, all...)
		}
		f.Groups = groups
	}
	title := c.lang(r, u).T("New channel")
	if f.Edit {
		title = c.lang(r, u).T("Edit channel %s", f.Channel.Name)
	}
	return c.render(w, r, code, "channel_form", page{Title: title, User: u, Data: f})
}

// channelOf reads the form into a channel document.
func channelOf(r *http.Request) (apiv1.Channel, error) {
	if err := r.ParseForm(); err != nil {
		return apiv1.Channel{}, badForm(err)
	}
	f := r.PostForm
	return apiv1.Channel{Name: strings.TrimSpace(f.Get("name")), Kind: f.Get("kind"), Group: f.Get("group"),
		Target: strings.TrimSpace(f.Get("target")), Secret: f.Get("secret"), ClearSecret: f.Get("clear_secret") == "on",
		Template: f.Get("template")}, nil
}

func (c *Console) createChannel(w http.ResponseWriter, r *http.Request) error {
	ch, err := channelOf(r)
	if err != nil {
		return err
	}
	_, err = c.call(r, http.MethodPost, "/api/v1/channels", nil, ch, nil)
	if refused(err) {
		ch.Secret = "" // never echoed into a page
		return c.refusedChannel(w, r, err, &channelForm{Channel: ch})
	}
	if err != nil {
		return err
	}
	redirect(w, r, "/channels", noticeChannelSaved)
	return nil
}

func (c *Console) updateChannel(w http.ResponseWriter, r *http.Request) error {
	ch, err := channelOf(r)
	if err != nil {
		return err
	}
	_, err = c.call(r, http.MethodPut, "/api/v1/channels/"+r.PathValue("id"), nil, ch, nil)
	if refused(err) {
		var old apiv1.Channel
		if _, gerr := c.call(r, http.MethodGet, "/api/v1/channels/"+r.PathValue("id"), nil, nil, &old); gerr != nil {
			return gerr
		}
		ch.ID, ch.Kind, ch.Group, ch.SecretSet, ch.Secret = old.ID, old.Kind, old.Group, old.SecretSet, ""
		return c.refusedChannel(w, r, err, &channelForm{Channel: ch, Edit: true})
	}
	if err != nil {
		return err
	}
	redirect(w, r, "/channels", noticeChannelSaved)
	return nil
}

func (c *Console) refusedChannel(w http.ResponseWriter, r *http.Request, err error, f *channelForm) error {
	u, merr := c.me(r)
	if merr != nil {
		return merr
	}
	var ae *APIError
	errors.As(err, &ae)
	f.Error = ae.Error()
	return c.channelFormPage(w, r, u, ae.Status, f)
}

// refused reports whether err is the API's refusal of what a form said
// (400, 409), shown on the form again rather than as an error page.
func refused(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && (ae.Status == http.StatusBadRequest || ae.Status == http.StatusConflict)
}

// testChannel sends a test notice and shows the list with its outcome.
func (c *Console) testChannel(w http.ResponseWriter, r *http.Request) error {
	var ch apiv1.Channel
	if _, err := c.call(r, http.MethodGet, "/api/v1/channels/"+r.PathValue("id"), nil, nil, &ch); err != nil {
		return err
	}
	var res apiv1.ChannelTest
	if _, err := c.call(r, http.MethodPost, "/api/v1/channels/"+r.PathValue("id")+"/test", nil, nil, &res); err != nil {
		return err
	}
	return c.channelsWith(w, r, &ch, &res)
}

func (c *Console) deleteChannel(w http.ResponseWriter, r *http.Request) error {
	_, err := c.call(r, http.MethodDelete, "/api/v1/channels/"+r.PathValue("id"), nil, nil, nil)
	var ae *APIError
	if errors.As(err, &ae) && ae.Status == http.StatusConflict {
		u, merr := c.me(r)
		if merr != nil {
			return merr
		}
		var cs []apiv1.Channel
		if _, err := c.call(r, http.MethodGet, "/api/v1/channels", nil, nil, &cs); err != nil {
			return err
		}
		return c.render(w, r, ae.Status, "channels", page{Title: c.lang(r, u).T("Channels"), User: u, Error: ae.Error(), Data: channelsPage{Channels: cs}})
	}
	if err != nil {
		return err
	}
	redirect(w, r, "/channels", noticeChannelDeleted)
	return nil
}
