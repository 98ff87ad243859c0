package main

import (
	"context"
	"fmt"
	"io"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
	"github.com/spf13/cobra"
)

func (a *app) groupsCmd() *cobra.Command {
	return parent(&cobra.Command{
		Use:     "groups",
		Aliases: []string{"group"},
		Short:   "List, create, limit, pause, drain and resume executor groups; show a group's queue",
	}, a.groupsListCmd(), a.groupsCreateCmd(), a.groupsSetCmd(), a.groupsQueueCmd(),
		a.groupsFlowCmd("pause", "Pause a group: no new run of its jobs starts (missed fires follow each job's misfire policy on resume)"),
		a.groupsFlowCmd("drain", "Drain a group: start no new run, let running ones finish (state: draining, then drained)"),
		a.groupsFlowCmd("resume", "Resume a paused or draining group (missed fires follow each job's misfire policy)"))
}

func (a *app) groupsListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the groups",
		Args:  needArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return show(a, cmd, (*client.Client).ListGroups, func(w io.Writer, list *apiv1.GroupList) error {
				t := newTable(w, "NAME", "TITLE", "STATE", "MAX RUNNING", "RATE LIMIT", "CREATED")
				for _, g := range list.Groups {
					t.row(g.Name, g.Title, flowText(g.Flow), capText(g.MaxRunning), orNone(g.RateLimit), fmtTime(g.CreatedAt))
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

// flowText is a group's flow state as the list shows it.
func flowText(f *apiv1.GroupFlow) string {
	switch {
	case f == nil:
		return "active"
	case f.State == "active":
		return f.State
	}
	return fmt.Sprintf("%s (%d running)", f.State, f.Running)
}

// groupsFlowCmd is jetjob groups pause|drain|resume GROUP --note.
func (a *app) groupsFlowCmd(action, short string) *cobra.Command {
	var note string
	cmd := &cobra.Command{
		Use:   action + " GROUP",
		Short: short,
		Args:  needArgs("GROUP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return show(a, cmd, func(c *client.Client, ctx context.Context) (*apiv1.Group, error) {
				return c.SetGroupFlow(ctx, args[0], action, apiv1.GroupFlowRequest{Note: note})
			}, func(w io.Writer, g *apiv1.Group) error {
				var k kv
				k.add("Name", g.Name)
				if f := g.Flow; f != nil {
					k.add("State", f.State)
					k.add("Running", fmt.Sprint(f.Running))
					k.add("Note", f.Note)
					k.add("By", f.By)
					if f.At != nil {
						k.add("At", fmtTime(*f.At))
					}
				}
				return k.write(w)
			})
		},
	}
	cmd.Flags().StringVar(&note, "note", "", "why (kept with the state, and in the audit log)")
	return cmd
}
