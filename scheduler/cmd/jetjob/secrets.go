package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
	"github.com/jetjob/jetjob/shared/wire"
)

func (a *app) secretsCmd() *cobra.Command {
	return parent(&cobra.Command{
		Use:     "secrets",
		Aliases: []string{"secret"},
		Short:   "Set, list and delete a group's secrets (docs/jobs.md, \"Secrets\")",
		Long: `A group's secrets are values its jobs use (secret_env, ${secret:NAME} in
params) that nobody reads back: no command, API answer or log shows them.
Writing one needs operator with scripts on the group.`,
	}, a.secretsSetCmd(), a.secretsListCmd(), a.secretsDeleteCmd())
}

// secretRef reads a GROUP/NAME argument.
func secretRef(s string) (group, name string, err error) {
	group, name, ok := strings.Cut(s, "/")
	if !ok {
		return "", "", usagef("%q: want GROUP/NAME", s)
	}
	if err := wire.CheckName("group", group); err != nil {
		return "", "", usagef("%v", err)
	}
	if err := wire.CheckName("secret name", name); err != nil {
		return "", "", usagef("%v", err)
	}
	return group, name, nil
}

// findSecret returns group's secret name, nil when there is none.
func findSecret(ctx context.Context, c *client.Client, group, name string) (*apiv1.Secret, error) {
	list, err := c.ListSecrets(ctx, group)
	if err != nil {
		return nil, err
	}
	for i := range list {
		if list[i].Name == name {
			return &list[i], nil
		}
	}
	return nil, nil
}

func (a *app) secretsSetCmd() *cobra.Command {
	var file, env string
	cmd := &cobra.Command{
		Use:   "set GROUP/NAME (--from-file F | --from-env VAR)",
		Short: "Create a secret, or give it a new value (its next version)",
		Long: `Create GROUP's secret NAME, or give an existing one a new value. The value is
read from a file (one trailing newline dropped) or an environment
variable, never from the command line, where shell history would keep it.`,
		Example: `  jetjob secrets set billing/db-password --from-file ./pw.txt
  jetjob secrets set billing/api-token --from-env API_TOKEN`,
		Args: needArgs("GROUP/NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			group, name, err := secretRef(args[0])
			if err != nil {
				return err
			}
			var value string
			switch {
			case (file == "") == (env == ""):
				return usagef("give the value with exactly one of --from-file or --from-env")
			case file != "":
				b, err := os.ReadFile(file)
				if err != nil {
					return fmt.Errorf("--from-file: %w", err)
				}
				value = strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
			default:
				v, ok := os.LookupEnv(env)
				if !ok {
					return usagef("--from-env %s: the variable is not set", env)
				}
				value = v
			}
			if value == "" {
				return usagef("the secret's value is empty")
			}
			return show(a, cmd, func(c *client.Client, ctx context.Context) (*apiv1.Secret, error) {
				cur, err := findSecret(ctx, c, group, name)
				if err != nil {
					return nil, err
				}
				if cur == nil {
					return c.CreateSecret(ctx, group, name, value)
				}
				return c.SetSecret(ctx, cur.ID, value)
			}, func(w io.Writer, s *apiv1.Secret) error {
				_, err := fmt.Fprintf(w, "secret %s/%s (id %d) is at version %d\n", s.Group, s.Name, s.ID, s.Version)
				return err
			})
		},
	}
	cmd.Flags().StringVar(&file, "from-file", "", "read the value from this file")
	cmd.Flags().StringVar(&env, "from-env", "", "read the value from this environment variable")
	return cmd
}

func (a *app) secretsListCmd() *cobra.Command {
	var group string
	cmd := &cobra.Command{
		Use:   "list [--group G]",
		Short: "List secrets: names, versions and the jobs that use them, never values",
		Args:  needArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return show(a, cmd, func(c *client.Client, ctx context.Context) ([]apiv1.Secret, error) {
				return c.ListSecrets(ctx, group)
			}, func(w io.Writer, list []apiv1.Secret) error {
				t := newTable(w, "ID", "GROUP", "NAME", "VERSION", "UPDATED", "BY", "JOBS")
				for _, s := range list {
					jobs := make([]string, len(s.Jobs))
					for i, j := range s.Jobs {
						jobs[i] = strconv.FormatInt(j, 10)
					}
					t.row(strconv.FormatInt(s.ID, 10), s.Group, s.Name, strconv.Itoa(s.Version), fmtTime(s.UpdatedAt),
						cell(s.UpdatedBy), cell(strings.Join(jobs, ",")))
				}
				return t.flush()
			})
		},
	}
	cmd.Flags().StringVar(&group, "group", "", "only this group's secrets")
	return cmd
}

func (a *app) secretsDeleteCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "delete GROUP/NAME",
		Short: "Delete a secret no job references",
		Args:  needArgs("GROUP/NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			group, name, err := secretRef(args[0])
			if err != nil {
				return err
			}
			return a.done(cmd, func(c *client.Client, ctx context.Context) error {
				cur, err := findSecret(ctx, c, group, name)
				if err != nil {
					return err
				}
				if cur == nil {
					return fmt.Errorf("no secret %s/%s", group, name)
				}
				return c.DeleteSecret(ctx, cur.ID)
			}, "secret %s/%s deleted", group, name)
		},
	}
}
