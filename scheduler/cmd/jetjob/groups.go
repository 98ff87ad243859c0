package main

import (
	"context"
	"io"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
	"github.com/spf13/cobra"
)

func (a *app) groupsCmd() *cobra.Command {
	return parent(&cobra.Command{
		Use:     "groups",
		Aliases: []string{"group"},
		Short:   "List and create executor groups",
	}, a.groupsListCmd(), a.groupsCreateCmd())
}

func (a *app) groupsListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the groups",
		Args:  needArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return show(a, cmd, (*client.Client).ListGroups, func(w io.Writer, list *apiv1.GroupList) error {
				t := newTable(w, "NAME", "TITLE", "CREATED")
				for _, g := range list.Groups {
					t.row(g.Name, g.Title, fmtTime(g.CreatedAt))
				}
				return t.flush()
			})
		},
	}
}

func (a *app) groupsCreateCmd() *cobra.Command {
	var title string
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a group (NAME: letters, digits, '_' and '-')",
		Args:  needArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return show(a, cmd, func(c *client.Client, ctx context.Context) (*apiv1.Group, error) {
				return c.CreateGroup(ctx, apiv1.Group{Name: args[0], Title: title})
			}, func(w io.Writer, g *apiv1.Group) error {
				var k kv
				k.add("Name", g.Name)
				k.add("Title", g.Title)
				k.add("Created", fmtTime(g.CreatedAt))
				return k.write(w)
			})
		},
	}
	cmd.Flags().StringVar(&title, "title", "", "human-readable title")
	return cmd
}
