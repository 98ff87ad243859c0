package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
	"github.com/jetjob/jetjob/scheduler/internal/xxljob"
)

// importUserRow is what one xxl_job_user row became (--users).
type importUserRow struct {
	OldID    int64    `json:"old_id"`
	Username string   `json:"username"`
	User     string   `json:"user"`
	Role     string   `json:"role"`
	Action   string   `json:"action"`
	Notes    []string `json:"notes,omitempty"`
	// SetPasswordLink is the one-time link to the console page where the
	// user chooses a password, ExpiresAt when it stops working.
	SetPasswordLink string     `json:"set_password_link,omitempty"`
	LinkExpiresAt   *time.Time `json:"link_expires_at,omitempty"`
}

// importUsers creates xxl-job's users in jetjob (--users): an admin (role
// 1) as an admin, a normal user as an operator of each group in its
// permission list that was imported. Passwords cannot come along (xxl-job
// keeps hashes of its own scheme), so every user is created without one and
// its row carries a one-time set-password link (72 h) to hand to them,
// to the console of base (the API address). A user whose name jetjob has
// already is left as it is. Like jobs, a user the API refuses is reported
// and the others go on.
func importUsers(ctx context.Context, c *client.Client, base string, d *xxljob.Dump, rep *importReport, dry bool) error {
	ul, err := c.ListUsers(ctx)
	if err != nil {
		return fmt.Errorf("list jetjob users: %w", err)
	}
	exists := map[string]bool{}
	for _, u := range ul.Users {
		exists[u.Name] = true
	}
	groups := map[int64]string{} // old group id → jetjob group, for imported groups
	for _, g := range rep.Groups {
		if g.Action != actNotImported {
			groups[g.OldID] = g.Group
		}
	}
	if len(d.Users) == 0 {
		return nil
	}
	for _, u := range d.Users {
		row := importUserRow{OldID: u.ID, Username: u.Username, User: strings.TrimSpace(u.Username), Role: "admin"}
		create := apiv1.UserCreate{Name: row.User, Admin: u.Admin,
			DisplayName: "imported from xxl-job user " + strconv.FormatInt(u.ID, 10)}
		if !u.Admin {
			row.Role = apiv1.RoleOperator
			for _, s := range strings.Split(u.Permission, ",") {
				s = strings.TrimSpace(s)
				if s == "" {
					continue
				}
				id, err := strconv.ParseInt(s, 10, 64)
				name, ok := groups[id]
				switch {
				case err != nil:
					row.Notes = append(row.Notes, fmt.Sprintf("permission %q is not a group id: dropped", s))
				case !ok:
					row.Notes = append(row.Notes, fmt.Sprintf("xxl-job group %d is not imported: no grant", id))
				default:
					create.Grants = append(create.Grants, apiv1.Grant{Group: name, Role: apiv1.RoleOperator})
				}
			}
			if len(create.Grants) == 0 {
				row.Notes = append(row.Notes, "no group to operate: the user can sign in and see nothing")
			} else {
				row.Notes = append(row.Notes, "operator of "+grantGroups(create.Grants)+
					"; xxl-job let them edit GLUE scripts there too: grant --scripts (jetjob users grant) if they should keep that")
			}
		}
		switch {
		case !validUserName.MatchString(row.User):
			row.Action = actNotImported
			row.Notes = append(row.Notes, fmt.Sprintf("username %q: jetjob names are 1-64 of [A-Za-z0-9_.@-]", u.Username))
		case exists[row.User]:
			row.Action, row.Notes = actExists, []string{"a jetjob user of this name exists: left as it is"}
		case dry:
			row.Action = dryPrefix + actCreated
		default:
			if _, err := c.CreateUser(ctx, create); err != nil {
				if importFatal(err) {
					rep.Users = append(rep.Users, row)
					return fmt.Errorf("create user %s (xxl-job user %d): %w", row.User, u.ID, err)
				}
				row.Action = actNotImported
				row.Notes = append(row.Notes, "jetjob refused it: "+err.Error())
				break
			}
			row.Action = actCreated
			exists[row.User] = true
		}
		switch row.Action {
		case dryPrefix + actCreated:
			row.Notes = append(row.Notes, "no password (xxl-job's hash cannot be carried): the import prints a one-time link to choose one")
		case actCreated:
			l, err := c.PasswordLink(ctx, row.User, 0)
			if err != nil {
				if importFatal(err) {
					rep.Users = append(rep.Users, row)
					return fmt.Errorf("set-password link of user %s: %w", row.User, err)
				}
				row.Notes = append(row.Notes, fmt.Sprintf("no password, and no link: %v; an admin issues one with `jetjob users reset-link %s`", err, row.User))
				break
			}
			row.SetPasswordLink, row.LinkExpiresAt = strings.TrimSuffix(base, "/")+l.Path, &l.ExpiresAt
			row.Notes = append(row.Notes, fmt.Sprintf("no password (xxl-job's hash cannot be carried): hand them the one-time link %s to choose one (until %s; `jetjob users reset-link %s` issues another)",
				row.SetPasswordLink, l.ExpiresAt.UTC().Format(time.RFC3339), row.User))
		}
		rep.Users = append(rep.Users, row)
	}
	return nil
}

func grantGroups(gs []apiv1.Grant) string {
	names := make([]string, len(gs))
	for i, g := range gs {
		names[i] = g.Group
	}
	return strings.Join(names, ", ")
}
