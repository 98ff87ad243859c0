package jobfile

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// valueWidth is how many characters of a value a plan line shows.
const valueWidth = 80

// Write prints the plan the way terraform does: one line per change,
// "+" create, "~" update (one line per changed field), "-" delete, then
// a summary. Unchanged jobs are only counted.
func (p *Plan) Write(w io.Writer) error {
	var b strings.Builder
	for _, g := range p.NewGroups {
		fmt.Fprintf(&b, "+ group %s\n", safe(g.Name))
	}
	for _, g := range p.GroupChanges {
		for _, d := range g.Diffs {
			fmt.Fprintf(&b, "~ group %s  %s: %s → %s\n", safe(g.Name), d.Field, d.Old, d.New)
		}
	}
	for _, c := range p.Changes {
		key := safe(c.Key.String())
		switch c.Action {
		case Create:
			fmt.Fprintf(&b, "+ %s\n", key)
		case Delete:
			fmt.Fprintf(&b, "- %s\n", key)
		case Update:
			for _, d := range c.Diffs {
				fmt.Fprintf(&b, "~ %s  %s: %s → %s\n", key, d.Field, shorten(d.Old), shorten(d.New))
			}
		}
	}
	for _, warn := range p.Warnings {
		fmt.Fprintf(&b, "! %s\n", safe(warn))
	}
	if p.Empty() {
		fmt.Fprintf(&b, "No changes: the cluster matches the file (%d jobs).\n", len(p.Changes))
	} else {
		fmt.Fprintf(&b, "Plan: %d to create, %d to update, %d to delete, %d unchanged",
			p.Count(Create), p.Count(Update), p.Count(Delete), p.Count(Unchanged))
		if n := len(p.NewGroups); n > 0 {
			fmt.Fprintf(&b, "; %d group(s) to create", n)
		}
		if n := len(p.GroupChanges); n > 0 {
			fmt.Fprintf(&b, "; %d group(s) to update", n)
		}
		b.WriteString(".\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// safe quotes s when it holds characters a terminal should not see raw.
func safe(s string) string {
	for _, r := range s {
		if !strconv.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}

// shorten cuts a long value, marking the cut with "…".
func shorten(s string) string {
	if utf8.RuneCountInString(s) <= valueWidth {
		return s
	}
	return string([]rune(s)[:valueWidth-1]) + "…"
}
