package api

import (
	"errors"
	"net/http"
	"regexp"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/auth"
	"github.com/jetjob/jetjob/scheduler/internal/i18n"
	"github.com/jetjob/jetjob/scheduler/internal/store"
	"github.com/jetjob/jetjob/shared/wire"
)

// validUserName is the users.name check of migration 0005.
var validUserName = regexp.MustCompile(`^[A-Za-z0-9_.@-]{1,64}$`)

func userDoc(u store.User) apiv1.User {
	out := apiv1.User{Name: u.Name, DisplayName: u.DisplayName, Admin: u.Admin, Disabled: u.Disabled,
		Grants: make([]apiv1.Grant, 0, len(u.Grants)), CreatedAt: u.CreatedAt, LastLoginAt: u.LastLoginAt, Provider: u.Provider, Language: u.Language}
	for _, g := range u.Grants {
		out.Grants = append(out.Grants, apiv1.Grant{Group: g.Group, Role: g.Role, Scripts: g.Scripts})
	}
	return out
}

// checkGrant validates a grant from a request.
func checkGrant(g apiv1.Grant) (store.Grant, error) {
	if err := wire.CheckName("grant group", g.Group); err != nil {
		return store.Grant{}, invalidf("%v", err)
	}
	role, err := auth.ParseRole(g.Role)
	if err != nil {
		return store.Grant{}, invalidf("grant on %s: %v", g.Group, err)
	}
	if g.Scripts && role != auth.Operator {
		return store.Grant{}, invalidf("grant on %s: scripts needs role operator", g.Group)
	}
	return store.Grant{Group: g.Group, Role: string(role), Scripts: g.Scripts}, nil
}

func (s *Server) me(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, meDoc(auth.FromContext(r.Context())))
	return nil
}

// meDoc is p as GET /me shows it.
func meDoc(p *auth.Principal) apiv1.Me {
	out := apiv1.Me{Name: p.Name, DisplayName: p.DisplayName, Language: p.Language, Admin: p.Admin, Grants: []apiv1.Grant{},
		Auth: string(p.Method), KeyID: p.KeyID, KeyPrefix: p.KeyPrefix}
	if !p.SessionExpiresAt.IsZero() {
		at := p.SessionExpiresAt
		out.SessionExpiresAt = &at
	}
	groups, _ := p.Readable()
	for _, g := range groups {
		gr := p.Grants[g]
		out.Grants = append(out.Grants, apiv1.Grant{Group: g, Role: string(gr.Role), Scripts: gr.Scripts})
	}
	return out
}

func (s *Server) listUsers(w http.ResponseWriter, r *http.Request) error {
	us, err := s.store.ListUsers(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apiv1.UserList{Users: docs(us, userDoc)})
	return nil
}

func (s *Server) createUser(w http.ResponseWriter, r *http.Request) error {
	var in apiv1.UserCreate
	if err := decode(w, r, &in); err != nil {
		return err
	}
	if !validUserName.MatchString(in.Name) || in.Name == auth.BootstrapName || in.Name == auth.AnonymousAdminName {
		return invalidf("user name %q: want 1-64 of A-Z a-z 0-9 _ . @ - (and not %s or %s)", in.Name, auth.BootstrapName, auth.AnonymousAdminName)
	}
	if len(in.DisplayName) > maxNameLen {
		return invalidf("display_name is longer than %d characters", maxNameLen)
	}
	if p := nameProblem(in.DisplayName); p != "" {
		return invalidf("display_name %s", p)
	}
	u := store.User{Name: in.Name, DisplayName: in.DisplayName, Admin: in.Admin}
	if in.Password != "" {
		if err := auth.CheckPasswordPolicy(in.Password); err != nil {
			return invalidf("%v", err)
		}
		h, err := auth.HashPassword(r.Context(), in.Password)
		if err != nil {
			return err
		}
		u.PasswordHash = h
	}
	for _, g := range in.Grants {
		sg, err := checkGrant(g)
		if err != nil {
			return err
		}
		u.Grants = append(u.Grants, sg)
	}
	out, err := s.store.CreateUser(r.Context(), actor(r), u)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, userDoc(out))
	return nil
}

func (s *Server) getUser(w http.ResponseWriter, r *http.Request) error {
	u, err := s.store.GetUser(r.Context(), r.PathValue("name"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, userDoc(u))
	return nil
}

// updateUser changes a user. A password change by the user themself needs
// their current password, checked by checkPassword (so it is limited like
// a login); an admin resets another user's without it, audited as a reset.
// Any password change ends the user's sessions, and revoke_credentials
// also revokes their API keys (store.UpdateUser); when that ends the
// session the request came with, its cookie is cleared too.
func (s *Server) updateUser(w http.ResponseWriter, r *http.Request) error {
	var in apiv1.UserPatch
	if err := decode(w, r, &in); err != nil {
		return err
	}
	p := auth.FromContext(r.Context())
	name := r.PathValue("name")
	if !p.Admin && (in.Admin != nil || in.Disabled != nil) {
		return &auth.Forbidden{Permission: "admin (to change admin or disabled)"}
	}
	ch := store.UserChange{DisplayName: in.DisplayName, Admin: in.Admin, Disabled: in.Disabled, RevokeCredentials: in.RevokeCredentials}
	if in.DisplayName != nil && len(*in.DisplayName) > maxNameLen {
		return invalidf("display_name is longer than %d characters", maxNameLen)
	}
	self := p.Name == name
	switch {
	case in.CurrentPassword != nil && in.Password == nil:
		return invalidf("current_password goes with password (a new one)")
	case in.CurrentPassword != nil && !self:
		return invalidf("current_password is for changing your own password: an admin resets another user's without it")
	case in.Password != nil && self && in.CurrentPassword == nil:
		return invalidf("current_password is required to change your own password")
	}
	if in.DisplayName != nil && nameProblem(*in.DisplayName) != "" {
		return invalidf("display_name %s", nameProblem(*in.DisplayName))
	}
	if in.Language != nil && *in.Language != "" {
		l, ok := i18n.Parse(*in.Language)
		if !ok {
			return invalidf("language %q: want %s, %s or empty (the browser's)", *in.Language, i18n.English, i18n.Chinese)
		}
		lang := string(l)
		ch.Language = &lang
	} else if in.Language != nil {
		ch.Language = in.Language
	}
	if in.Password != nil {
		if err := auth.CheckPasswordPolicy(*in.Password); err != nil {
			return invalidf("%v", err)
		}
		if self {
			_, err := s.checkPassword(r.Context(), name, actor(r).Client, *in.CurrentPassword)
			if errors.Is(err, errWrongPassword) {
				return &httpError{http.StatusForbidden, "current_password is not your password"}
			}
			if err != nil {
				return err
			}
		}
		h, err := auth.HashPassword(r.Context(), *in.Password)
		if err != nil {
			return err
		}
		ch.PasswordHash, ch.PasswordReset = &h, !self
	}
	out, err := s.store.UpdateUser(r.Context(), actor(r), name, ch)
	if err != nil {
		return err
	}
	if self && p.Method == auth.BySession && (ch.PasswordHash != nil || ch.RevokeCredentials) {
		s.clearSessionCookie(w)
	}
	writeJSON(w, http.StatusOK, userDoc(out))
	return nil
}

func (s *Server) deleteUser(w http.ResponseWriter, r *http.Request) error {
	if err := s.store.DeleteUser(r.Context(), actor(r), r.PathValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) setGrant(w http.ResponseWriter, r *http.Request) error {
	var in apiv1.Grant
	if err := decode(w, r, &in); err != nil {
		return err
	}
	g, err := checkGrant(in)
	if err != nil {
		return err
	}
	out, err := s.store.SetGrant(r.Context(), actor(r), r.PathValue("name"), g)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, userDoc(out))
	return nil
}

func (s *Server) deleteGrant(w http.ResponseWriter, r *http.Request) error {
	if err := onlyParams(r, "group"); err != nil {
		return err
	}
	group := r.URL.Query().Get("group")
	if err := wire.CheckName("group", group); err != nil {
		return invalidf("%v", err)
	}
	out, err := s.store.DeleteGrant(r.Context(), actor(r), r.PathValue("name"), group)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, userDoc(out))
	return nil
}
