package main

import (
	"context"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
)

// Calendars: named sets of days jobs exclude (--exclude-calendars) or
// include back (--include-calendars). docs/jobs.md, "Calendars".

func (a *app) calendarsCmd() *cobra.Command {
	return parent(&cobra.Command{
		Use:     "calendars",
		Aliases: []string{"calendar"},
		Short:   "List, show, write and delete calendars (days jobs skip or keep)",
	}, a.calendarsListCmd(), a.calendarsGetCmd(), a.calendarsPutCmd(), a.calendarsDeleteCmd())
}

func (a *app) calendarsListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the calendars you may read",
		Args:  needArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return show(a, cmd, (*client.Client).ListCalendars, func(w io.Writer, list *apiv1.CalendarList) error {
				t := newTable(w, "NAME", "GROUP", "DATES", "RANGES", "WEEKDAYS", "DESCRIPTION")
				for _, c := range list.Calendars {
					t.row(c.Name, orDash(c.Group), strconv.Itoa(len(c.Dates)), strconv.Itoa(len(c.Ranges)), strings.Join(c.Weekdays, ","), c.Description)
				}
				return t.flush()
			})
		},
	}
}

func calendarDetail(w io.Writer, c *apiv1.Calendar) error {
	var k kv
	k.add("Name", c.Name)
	k.add("Group", orDash(c.Group))
	k.add("Description", c.Description)
	k.add("Weekdays", strings.Join(c.Weekdays, ", "))
	k.add("Dates", strings.Join(c.Dates, ", "))
	rs := make([]string, len(c.Ranges))
	for i, r := range c.Ranges {
		rs[i] = r.From + ".." + r.To
	}
	k.add("Ranges", strings.Join(rs, ", "))
	k.add("Updated", fmtTime(c.UpdatedAt))
	return k.write(w)
}

func (a *app) calendarsGetCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "get NAME",
		Short: "Show a calendar",
		Args:  needArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return show(a, cmd, func(c *client.Client, ctx context.Context) (*apiv1.Calendar, error) {
				return c.GetCalendar(ctx, args[0])
			}, calendarDetail)
		},
	}
}

func (a *app) calendarsPutCmd() *cobra.Command {
	var (
		in                  apiv1.Calendar
		dates, ranges, days []string
		icsFile             string
	)
	cmd := &cobra.Command{
		Use:   "put NAME",
		Short: "Create or replace a calendar (its days: --dates, --ranges, --weekdays, --ics)",
		Example: `  jetjob calendars put cn-2026 --group billing --ics holidays.ics --weekdays SAT,SUN
  jetjob calendars put cn-makeup --dates 2026-09-27,2026-10-10`,
		Args: needArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			in.Dates, in.Weekdays = dates, days
			for _, r := range ranges {
				from, to, ok := strings.Cut(r, "..")
				if !ok {
					return usagef("--ranges %q: want FROM..TO, e.g. 2026-10-01..2026-10-07", r)
				}
				in.Ranges = append(in.Ranges, apiv1.CalendarRange{From: from, To: to})
			}
			if icsFile != "" {
				b, err := os.ReadFile(icsFile)
				if err != nil {
					return err
				}
				in.ICS = string(b)
			}
			return show(a, cmd, func(c *client.Client, ctx context.Context) (*apiv1.Calendar, error) {
				return c.PutCalendar(ctx, args[0], in)
			}, calendarDetail)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&in.Group, "group", "", "the group whose jobs may name it (empty: global, admins only)")
	fl.StringVar(&in.Description, "description", "", "free-form description")
	fl.StringSliceVar(&dates, "dates", nil, "days, comma-separated: 2026-10-01,2026-12-25")
	fl.StringSliceVar(&ranges, "ranges", nil, "ranges of days, both ends included: 2026-10-01..2026-10-07")
	fl.StringSliceVar(&days, "weekdays", nil, "weekdays: SUN,MON,TUE,WED,THU,FRI,SAT")
	fl.StringVar(&icsFile, "ics", "", "an iCalendar (.ics) file whose events' days are added (holidays)")
	return cmd
}

func (a *app) calendarsDeleteCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a calendar no job names",
		Args:  needArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			return c.DeleteCalendar(cmd.Context(), args[0])
		},
	}
}
