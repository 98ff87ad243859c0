package main

import (
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"
)

func (a *app) workersCmd() *cobra.Command {
	cmd := parent(&cobra.Command{
		Use:     "workers",
		Aliases: []string{"worker"},
		Short:   "List the live workers",
	})
	var group string
	list := &cobra.Command{
		Use:   "list [--group G]",
		Short: "List the live workers, by group and id",
		Args:  needArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			l, err := c.ListWorkers(cmd.Context(), group)
			if err != nil {
				return err
			}
			return a.emit(l, func(w io.Writer) error {
				t := newTable(w, "GROUP", "ID", "HOST", "PID", "VERSION", "HANDLERS", "RUNNING", "LAST BEAT")
				for _, wk := range l.Workers {
					t.row(wk.Group, wk.ID, wk.Host, strconv.Itoa(wk.PID), wk.Version, fmt.Sprint(wk.Handlers),
						fmt.Sprintf("%d/%d", len(wk.Running), wk.Capacity), time.Since(wk.BeatAt).Round(time.Second).String()+" ago")
				}
				return t.flush()
			})
		},
	}
	list.Flags().StringVar(&group, "group", "", "only this group's workers")
	cmd.AddCommand(list)
	return cmd
}
