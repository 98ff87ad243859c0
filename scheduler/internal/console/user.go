package console

import (
	"net/http"
	"sort"
	"strings"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/i18n"
)

// User is the signed-in user as /api/v1/me describes them. Its methods
// decide which controls a page shows; they mirror the API's rules only to
// hide what would be refused anyway (the API decides).
type User struct {
	apiv1.Me
}

// me asks the API who the request is. Without credentials that is the
// API's 401, which sends the browser to the login page.
func (c *Console) me(r *http.Request) (*User, error) {
	var me apiv1.Me
	if _, err := c.call(r, http.MethodGet, "/api/v1/me", nil, nil, &me); err != nil {
		return nil, err
	}
	return &User{Me: me}, nil
}

// Label is the name the user menu shows.
func (u *User) Label() string {
	if u.DisplayName != "" {
		return u.DisplayName
	}
	return u.Name
}

// RoleLabel sums up the user's role for the menu in l: admin, or their
// grants.
func (u *User) RoleLabel(l i18n.Lang) string {
	if u.Admin {
		return l.T("admin")
	}
	if len(u.Grants) == 0 {
		return l.T("no groups")
	}
	byRole := map[string][]string{}
	for _, g := range u.Grants {
		r := l.T(g.Role)
		if g.Scripts {
			r += l.T("+scripts")
		}
		byRole[r] = append(byRole[r], g.Group)
	}
	roles := make([]string, 0, len(byRole))
	for r := range byRole {
		roles = append(roles, r)
	}
	sort.Strings(roles)
	parts := make([]string, 0, len(roles))
	for _, r := range roles {
		parts = append(parts, l.T("%s of %s", r, strings.Join(byRole[r], ", ")))
	}
	return strings.Join(parts, "; ")
}

func (u *User) grant(group string) (apiv1.Grant, bool) {
	for _, g := range u.Grants {
		if g.Group == group {
			return g, true
		}
	}
	return apiv1.Grant{}, false
}

// CanRead reports whether the user reads group.
func (u *User) CanRead(group string) bool {
	if u == nil {
		return false
	}
	_, ok := u.grant(group)
	return u.Admin || ok
}

// CanOperate reports whether the user changes group's jobs and runs.
func (u *User) CanOperate(group string) bool {
	if u == nil {
		return false
	}
	g, ok := u.grant(group)
	return u.Admin || ok && g.Role == "operator"
}

// CanScripts reports whether the user edits group's command-running jobs
// and stored scripts (operator with the scripts permission).
func (u *User) CanScripts(group string) bool {
	if u == nil {
		return false
	}
	g, ok := u.grant(group)
	return u.Admin || ok && g.Role == "operator" && g.Scripts
}

// CanOperateAny reports whether the user operates some group (the "New
// job" button).
func (u *User) CanOperateAny() bool {
	if u == nil {
		return false
	}
	if u.Admin {
		return true
	}
	for _, g := range u.Grants {
		if g.Role == "operator" {
			return true
		}
	}
	return false
}

// OperableGroups are the groups the user may create jobs in, for the job
// form's group choice; nil for an admin (every group).
func (u *User) OperableGroups() []string {
	var out []string
	for _, g := range u.Grants {
		if g.Role == "operator" {
			out = append(out, g.Group)
		}
	}
	return out
}
