package main

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/spf13/cobra"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
	"github.com/jetjob/jetjob/shared/wire"
)

// validUserName is the server's rule for user names (the users.name
// check of migration 0005), so that a bad name is a usage error.
var validUserName = regexp.MustCompile(`^[A-Za-z0-9_.@-]{1,64}$`)

// roleAdmin is the --role of users create that makes an admin: not a
// group role, the user's own flag.
const roleAdmin = "admin"

func userArg(s string) error {
	if !validUserName.MatchString(s) {
		return usagef("invalid user name %q: want 1-64 of A-Z a-z 0-9 _ . @ -", s)
	}
	return nil
}

func groupFlag(s string) error {
	if err := wire.CheckName("--group", s); err != nil {
		return &usageError{err: err}
	}
	return nil
}

// grantArgs checks what grant and revoke both name: the user and the
// required --group.
func grantArgs(user, group string) error {
	if err := userArg(user); err != nil {
		return err
	}
	if group == "" {
		return usagef("missing required flag --group")
	}
	return groupFlag(group)
}

// groupRole checks a grant's --role and --scripts.
func groupRole(role string, scripts bool) error {
	switch role {
	case apiv1.RoleViewer, apiv1.RoleOperator:
	case "":
		return usagef("missing required flag --role (viewer or operator)")
	case roleAdmin:
		return usagef("--role admin is not a role on a group: an admin needs no grant (users create --role admin)")
	default:
		return usagef("invalid --role %q: want viewer or operator", role)
	}
	if scripts && role != apiv1.RoleOperator {
		return usagef("--scripts needs --role operator")
	}
	return nil
}

func (a *app) usersCmd() *cobra.Command {
	return parent(&cobra.Command{
		Use:     "users",
		Aliases: []string{"user"},
		Short:   "Create users and give them roles on groups (admin)",
		Long: `Users log in with a password ("jetjob login") or use API keys ("jetjob keys").
An admin may do anything; any other user has a role on each group granted
to them: viewer (read its jobs, runs, logs, workers, stats) or operator
(also create, edit, enable, disable, trigger, kill and delete its jobs;
jobs whose handler runs commands also need --scripts). Everyone changes
their own password with "users password NAME" (the current one is asked).`,
	}, a.usersCreateCmd(), a.usersListCmd(), a.usersGetCmd(), a.usersGrantCmd(), a.usersRevokeCmd(),
		a.usersSwitchCmd(false), a.usersSwitchCmd(true), a.usersPasswordCmd(), a.usersResetLinkCmd(), a.usersDeleteCmd())
}

func (a *app) usersCreateCmd() *cobra.Command {
	var (
		role, display       string
		groups              []string
		scripts             bool
		pwStdin, noPassword bool
	)
	cmd := &cobra.Command{
		Use:   "create NAME --role viewer|operator|admin [--group G]... [--password-stdin]",
		Short: "Create a user",
		Long: `Create a user. --role admin makes an admin; viewer and operator are roles on
groups, given with --group here (repeatable) or later with "users grant".

The password is asked on the terminal (without echo), or read from stdin
with --password-stdin; it is never a flag. --no-password creates a user who
can only use the API keys an admin creates for them ("keys create --user").`,
		Example: `  jetjob users create alice --role admin
  printf '%s\n' "$PASSWORD" | jetjob users create viewer1 --role viewer --group demo --password-stdin
  jetjob users create ci-bot --role operator --group builds --no-password`,
		Args: needArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if err := userArg(name); err != nil {
				return err
			}
			in := apiv1.UserCreate{Name: name, DisplayName: display}
			switch role {
			case roleAdmin:
				if len(groups) > 0 || scripts {
					return usagef("--role admin takes no --group or --scripts: an admin may do anything")
				}
				in.Admin = true
			case apiv1.RoleViewer, apiv1.RoleOperator:
				if scripts && (role != apiv1.RoleOperator || len(groups) == 0) {
					return usagef("--scripts needs --role operator and a --group")
				}
			case "":
				return usagef("missing required flag --role (viewer, operator or admin)")
			default:
				return usagef("invalid --role %q: want viewer, operator or admin", role)
			}
			for _, g := range groups {
				if err := groupFlag(g); err != nil {
					return err
				}
				in.Grants = append(in.Grants, apiv1.Grant{Group: g, Role: role, Scripts: scripts})
			}
			if pwStdin && noPassword {
				return usagef("give --password-stdin or --no-password, not both")
			}
			if !noPassword {
				pw, err := a.readPassword(pwStdin, true, "Password for "+name)
				if err != nil {
					return err
				}
				in.Password = pw
			}
			return show(a, cmd, func(c *client.Client, ctx context.Context) (*apiv1.User, error) {
				return c.CreateUser(ctx, in)
			}, func(w io.Writer, u *apiv1.User) error {
				if err := userDetail(u).write(w); err != nil {
					return err
				}
				if !u.Admin && len(u.Grants) == 0 {
					fmt.Fprintf(a.stderr, "%s may not see any group yet: jetjob users grant %s --group G --role %s\n", u.Name, u.Name, role)
				}
				return nil
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&role, "role", "", "admin, or the role on the --group groups: viewer or operator (required)")
	fl.StringSliceVar(&groups, "group", nil, "group to give the role on (repeatable, or comma separated)")
	fl.BoolVar(&scripts, "scripts", false, "with --role operator: may also write jobs whose handler runs commands")
	fl.StringVar(&display, "display-name", "", "the user's full name")
	fl.BoolVar(&pwStdin, "password-stdin", false, "read the password from stdin (one line)")
	fl.BoolVar(&noPassword, "no-password", false, "no password: the user can only use API keys")
	return cmd
}

func (a *app) usersGrantCmd() *cobra.Command {
	var (
		group, role string
		scripts     bool
	)
	cmd := &cobra.Command{
		Use:   "grant NAME --group G --role viewer|operator [--scripts]",
		Short: "Give a user a role on a group (replacing the one they had there)",
		Args:  needArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := grantArgs(args[0], group); err != nil {
				return err
			}
			if err := groupRole(role, scripts); err != nil {
				return err
			}
			return show(a, cmd, func(c *client.Client, ctx context.Context) (*apiv1.User, error) {
				return c.SetGrant(ctx, args[0], apiv1.Grant{Group: group, Role: role, Scripts: scripts})
			}, detail(userDetail))
		},
	}
	cmd.Flags().StringVar(&group, "group", "", "the group (required)")
	cmd.Flags().StringVar(&role, "role", "", "viewer or operator (required)")
	cmd.Flags().BoolVar(&scripts, "scripts", false, "with --role operator: may also write jobs whose handler runs commands")
	return cmd
}

func (a *app) usersRevokeCmd() *cobra.Command {
	var group string
	cmd := &cobra.Command{
		Use:   "revoke NAME --group G",
		Short: "Take away a user's role on a group",
		Args:  needArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := grantArgs(args[0], group); err != nil {
				return err
			}
			return show(a, cmd, func(c *client.Client, ctx context.Context) (*apiv1.User, error) {
				return c.DeleteGrant(ctx, args[0], group)
			}, detail(userDetail))
		},
	}
	cmd.Flags().StringVar(&group, "group", "", "the group (required)")
	return cmd
}

func (a *app) usersListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the users",
		Args:  needArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return show(a, cmd, (*client.Client).ListUsers, func(w io.Writer, list *apiv1.UserList) error {
				t := newTable(w, "NAME", "DISPLAY NAME", "ADMIN", "DISABLED", "GRANTS", "LAST LOGIN")
				for _, u := range list.Users {
					t.row(u.Name, u.DisplayName, yesNo(u.Admin), yesNo(u.Disabled), grantList(u.Grants, ", "), fmtTimePtr(u.LastLoginAt))
				}
				return t.flush()
			})
		},
	}
}

func (a *app) usersGetCmd() *cobra.Command {
	return a.userCmd("get NAME", "Show a user", (*client.Client).GetUser)
}

// usersSwitchCmd is `users disable` or `users enable`.
func (a *app) usersSwitchCmd(enable bool) *cobra.Command {
	use, short := "disable NAME", "Disable a user: their sessions end and their keys stop working"
	if enable {
		use, short = "enable NAME", "Enable a disabled user (their keys work again)"
	}
	return a.userCmd(use, short, func(c *client.Client, ctx context.Context, name string) (*apiv1.User, error) {
		disabled := !enable
		return c.UpdateUser(ctx, name, apiv1.UserPatch{Disabled: &disabled})
	})
}

func (a *app) usersPasswordCmd() *cobra.Command {
	var pwStdin, revoke, keep bool
	cmd := &cobra.Command{
		Use:   "password NAME [--password-stdin] [--revoke-credentials]",
		Short: "Change your password, or reset another user's (admin)",
		Long: `Change a user's password. Your own needs your current password: it is asked
first, then the new one twice (with --password-stdin, stdin holds two lines:
the current password, then the new one). An admin resets another user's
password without theirs (stdin: the new one); the audit log records a reset.

Either way every console session of the user ends. --revoke-credentials also
revokes every API key of the user — the CLI's own too, when it is one of
theirs: log in again with "jetjob login". It may be given without a new
password ("sign out everywhere"): then nothing is read.`,
		Example: `  jetjob users password alice                       # asks the current and the new one
  printf '%s\n%s\n' "$OLD" "$NEW" | jetjob users password alice --password-stdin
  printf '%s\n' "$NEW" | jetjob users password bob --password-stdin --revoke-credentials   # an admin
  jetjob users password alice --revoke-credentials --no-password-change`,
		Args: needArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if err := userArg(name); err != nil {
				return err
			}
			if keep && (!revoke || pwStdin) {
				return usagef("--no-password-change goes with --revoke-credentials, and reads no password")
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			patch := apiv1.UserPatch{RevokeCredentials: revoke}
			if !keep {
				me, err := c.Me(cmd.Context())
				if err != nil {
					return err
				}
				if patch.Password, patch.CurrentPassword, err = a.passwordChange(pwStdin, name, me.Name == name); err != nil {
					return err
				}
			}
			u, err := c.UpdateUser(cmd.Context(), name, patch)
			if err != nil {
				return err
			}
			if err := a.emit(u, func(w io.Writer) error { return userDetail(u).write(w) }); err != nil {
				return err
			}
			switch {
			case revoke:
				fmt.Fprintf(a.stderr, "Every session and API key of %s is revoked.\n", name)
			default:
				fmt.Fprintf(a.stderr, "Password of %s changed; their console sessions have ended.\n", name)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&pwStdin, "password-stdin", false, "read the passwords from stdin (your own: the current one, then the new one; one a line)")
	cmd.Flags().BoolVar(&revoke, "revoke-credentials", false, "also revoke every API key and end every session of the user")
	cmd.Flags().BoolVar(&keep, "no-password-change", false, "with --revoke-credentials: only revoke, keep the password")
	return cmd
}

// passwordChange reads what a password change sends: the new password,
// and the current one when the user is the caller (self).
func (a *app) passwordChange(fromStdin bool, name string, self bool) (pw, current *string, err error) {
	switch {
	case fromStdin && self:
		pws, err := a.stdinPasswords(2)
		if err != nil {
			return nil, nil, err
		}
		return &pws[1], &pws[0], nil
	case self:
		cur, err := a.readPassword(false, false, "Current password of "+name)
		if err != nil {
			return nil, nil, err
		}
		current = &cur
	}
	next, err := a.readPassword(fromStdin, true, "New password of "+name)
	if err != nil {
		return nil, nil, err
	}
	return &next, current, nil
}

// userCmd is a command that takes a user name, calls the API and shows the user.
func (a *app) userCmd(use, short string, call func(*client.Client, context.Context, string) (*apiv1.User, error)) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  needArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := userArg(args[0]); err != nil {
				return err
			}
			return show(a, cmd, func(c *client.Client, ctx context.Context) (*apiv1.User, error) {
				return call(c, ctx, args[0])
			}, detail(userDetail))
		},
	}
}

func (a *app) usersDeleteCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a user with their grants, keys and sessions",
		Args:  needArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := userArg(args[0]); err != nil {
				return err
			}
			return a.done(cmd, func(c *client.Client, ctx context.Context) error { return c.DeleteUser(ctx, args[0]) }, "user %s deleted", args[0])
		},
	}
}

func userDetail(u *apiv1.User) *kv {
	var k kv
	k.add("Name", u.Name)
	k.add("Display name", u.DisplayName)
	k.add("Admin", yesNo(u.Admin))
	k.add("Disabled", yesNo(u.Disabled))
	k.add("Grants", grantList(u.Grants, "\n"))
	k.add("Created", fmtTime(u.CreatedAt))
	k.add("Last login", fmtTimePtr(u.LastLoginAt))
	return &k
}

// grantList renders grants as "demo: viewer", "ops: operator+scripts".
func grantList(gs []apiv1.Grant, sep string) string {
	out := make([]string, 0, len(gs))
	for _, g := range gs {
		s := g.Group + ": " + g.Role
		if g.Scripts {
			s += "+scripts"
		}
		out = append(out, s)
	}
	return strings.Join(out, sep)
}
