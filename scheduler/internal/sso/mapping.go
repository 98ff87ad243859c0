package sso

import (
	"slices"
	"sort"

	"github.com/jetjob/jetjob/scheduler/internal/auth"
)

// Grant is a mapped role on a jetjob group.
type Grant struct {
	Group   string
	Role    auth.Role
	Scripts bool
}

// Standing is what a user's groups make of them in jetjob.
type Standing struct {
	Admin  bool
	Grants []Grant // by group name
}

// Apply maps a user's groups (names compared exactly, as the provider
// spells them). Several rules on one jetjob group combine: the higher
// role wins and scripts is kept from any operator rule. ok is false when
// no rule matched: such a user has no business in jetjob and is refused,
// rather than created without any access.
func (m Mapping) Apply(groups []string) (s Standing, ok bool) {
	for _, g := range m.AdminGroups {
		if slices.Contains(groups, g) {
			s.Admin, ok = true, true
		}
	}
	by := map[string]Grant{}
	for _, r := range m.Grants {
		if !slices.Contains(groups, r.From) {
			continue
		}
		ok = true
		role := auth.Role(r.Role)
		cur, had := by[r.Group]
		next := Grant{Group: r.Group, Role: role, Scripts: r.Scripts && role == auth.Operator}
		if had {
			if cur.Role == auth.Operator {
				next.Role = auth.Operator
			}
			next.Scripts = next.Scripts || cur.Scripts
		}
		by[r.Group] = next
	}
	for _, g := range by {
		s.Grants = append(s.Grants, g)
	}
	sort.Slice(s.Grants, func(i, j int) bool { return s.Grants[i].Group < s.Grants[j].Group })
	return s, ok
}
