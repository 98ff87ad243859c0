package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// tried reports whether the import got as far as any group or job: if
// not, its error is all there is to say.
func (r *importReport) tried() bool {
	for _, g := range r.Groups {
		if g.Action != "" {
			return true
		}
	}
	for _, j := range r.Jobs {
		if j.Action != "" && j.Action != actNotImported {
			return true
		}
	}
	return false
}

// summary is the report's closing lines, for the table and the Markdown.
func (r *importReport) summary() []string {
	verb := ""
	if r.DryRun {
		verb = dryPrefix
	}
	lines := []string{fmt.Sprintf("jobs: %d %s%s, %d %s%s, %d unchanged, %d not imported (Quartz expressions fire in %s)",
		r.Counts[actCreated], verb, actCreated, r.Counts[actUpdated], verb, actUpdated,
		r.Counts[actUnchanged], r.Counts[actNotImported], r.Timezone)}
	if n := r.untried(); r.Error != "" {
		lines = append(lines, fmt.Sprintf("import stopped: %s (%d jobs not tried: import again once it is fixed)", r.Error, n))
	}
	switch {
	case r.Error != "":
	case r.DryRun:
		lines = append(lines, "dry run: nothing was changed")
	case r.Counts[actCreated]+r.Counts[actUpdated] == 0 && !r.groupsCreated() && (r.History == nil || r.History.Imported == 0):
		lines = append(lines, "nothing changed: jetjob already matches the xxl-job database")
	}
	if !r.Enable {
		lines = append(lines, "new jobs are disabled; once the jobs are stopped in xxl-job, import again with --enable")
	}
	return lines
}

func (r *importReport) untried() int {
	n := 0
	for _, j := range r.Jobs {
		if j.Action == "" {
			n++
		}
	}
	return n
}

func (r *importReport) groupsCreated() bool {
	for _, g := range r.Groups {
		if g.Action == actCreated {
			return true
		}
	}
	return false
}

// action is a job row's action as the table and the Markdown show it.
func (j *importJobRow) action() string {
	a := j.Action
	if a == "" {
		a = "not tried"
	}
	if len(j.Updated) > 0 {
		a += " (" + strings.Join(j.Updated, ", ") + ")"
	}
	return a
}

// write prints what was read, the groups table, the jobs table, the users
// table and a summary. An error that stopped the import comes first.
func (r *importReport) write(w io.Writer) error {
	if r.Error != "" {
		fmt.Fprintf(w, "IMPORT STOPPED: %s\n\n", r.Error)
	}
	fmt.Fprintf(w, "xxl-job database %s, schema generation %s; zone %s (%s)\n\n", r.Database, r.Generation, r.Timezone, r.Zone.Note)
	t := newTable(w, "XXL-JOB GROUP", "GROUP", "ACTION", "NOTES")
	for _, g := range r.Groups {
		t.row(strconv.FormatInt(g.OldID, 10)+" "+g.AppName, g.Group, g.Action, strings.Join(g.Notes, "; "))
	}
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	t = newTable(w, "OLD ID", "NEW ID", "GROUP", "NAME", "XXL-JOB", "ACTION", "MAPPED", "CHANGED MEANING / NOT MAPPED")
	for _, j := range r.Jobs {
		newID := "-"
		if j.NewID != 0 {
			newID = strconv.FormatInt(j.NewID, 10)
		}
		notes := j.Changed
		if len(j.Problems) > 0 {
			notes = append([]string{"NOT MAPPED: " + strings.Join(j.Problems, "; ")}, notes...)
		}
		t.row(strconv.FormatInt(j.OldID, 10), newID, j.Group, j.Name, xxlStatus(j.XXLRunning), j.action(),
			strings.Join(j.Mapped, "; "), strings.Join(notes, "; "))
	}
	if err := t.flush(); err != nil {
		return err
	}
	if len(r.Users) > 0 {
		fmt.Fprintln(w)
		t = newTable(w, "XXL-JOB USER", "USER", "ROLE", "ACTION", "NOTES")
		for _, u := range r.Users {
			t.row(strconv.FormatInt(u.OldID, 10)+" "+u.Username, u.User, u.Role, u.Action, strings.Join(u.Notes, "; "))
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	fmt.Fprintln(w)
	if r.History != nil {
		for _, l := range r.History.lines(r.DryRun) {
			fmt.Fprintln(w, l)
		}
	}
	for _, l := range r.summary() {
		fmt.Fprintln(w, l)
	}
	return nil
}

func xxlStatus(running bool) string {
	if running {
		return "running"
	}
	return "stopped"
}

// markdown is the report as a Markdown document for the team: what was
// read, then every row in three sections — not imported (why), imported
// with a changed meaning (what changed), imported as it was.
func (r *importReport) markdown() []byte {
	var b strings.Builder
	title := "xxl-job import"
	if r.DryRun {
		title += " (dry run)"
	}
	fmt.Fprintf(&b, "# %s: %s\n\n", title, md(r.Database))
	if r.Error != "" {
		fmt.Fprintf(&b, "**The import stopped:** %s\n\n", md(r.Error))
	}
	fmt.Fprintf(&b, "- Schema generation: %s\n- Zone: %s (%s)\n", r.Generation, md(r.Timezone), md(r.Zone.Note))
	for _, l := range r.summary() {
		fmt.Fprintf(&b, "- %s\n", md(l))
	}
	b.WriteString("\n## Groups\n\n| xxl-job group | jetjob group | action | notes |\n| --- | --- | --- | --- |\n")
	for _, g := range r.Groups {
		fmt.Fprintf(&b, "| %d %s | %s | %s | %s |\n", g.OldID, md(g.AppName), md(g.Group), g.Action, md(strings.Join(g.Notes, "; ")))
	}
	section := func(heading, intro string, keep func(j *importJobRow) bool, notes func(j *importJobRow) []string) {
		var rows []*importJobRow
		for i := range r.Jobs {
			if keep(&r.Jobs[i]) {
				rows = append(rows, &r.Jobs[i])
			}
		}
		fmt.Fprintf(&b, "\n## %s (%d)\n\n%s\n\n", heading, len(rows), intro)
		if len(rows) == 0 {
			return
		}
		b.WriteString("| xxl-job id | jetjob id | group / name | xxl-job | action | mapped | notes |\n| --- | --- | --- | --- | --- | --- | --- |\n")
		for _, j := range rows {
			id := "-"
			if j.NewID != 0 {
				id = strconv.FormatInt(j.NewID, 10)
			}
			fmt.Fprintf(&b, "| %d | %s | %s / %s | %s | %s | %s | %s |\n", j.OldID, id, md(j.Group), md(j.Name),
				xxlStatus(j.XXLRunning), md(j.action()), md(strings.Join(j.Mapped, "; ")), md(strings.Join(notes(j), "; ")))
		}
	}
	section("Not imported", "These jobs are not in jetjob; the notes say why.",
		func(j *importJobRow) bool { return j.Action == actNotImported || j.Action == "" },
		func(j *importJobRow) []string {
			if j.Action == "" {
				return []string{"not tried: the import stopped first"}
			}
			return j.Problems
		})
	section("Imported with a changed meaning", "Check these: the notes say what behaves differently in jetjob.",
		func(j *importJobRow) bool { return j.Action != actNotImported && j.Action != "" && len(j.Changed) > 0 },
		func(j *importJobRow) []string { return j.Changed })
	section("Imported as they were", "Every setting of these carried over with its meaning.",
		func(j *importJobRow) bool { return j.Action != actNotImported && j.Action != "" && len(j.Changed) == 0 },
		func(*importJobRow) []string { return nil })
	if len(r.Users) > 0 {
		b.WriteString("\n## Users\n\n| xxl-job user | jetjob user | role | action | notes |\n| --- | --- | --- | --- | --- |\n")
		for _, u := range r.Users {
			fmt.Fprintf(&b, "| %d %s | %s | %s | %s | %s |\n", u.OldID, md(u.Username), md(u.User), u.Role, u.Action, md(strings.Join(u.Notes, "; ")))
		}
	}
	if r.History != nil {
		b.WriteString("\n## History\n\n")
		for _, l := range r.History.lines(r.DryRun) {
			fmt.Fprintf(&b, "- %s\n", md(strings.TrimPrefix(l, "history: ")))
		}
	}
	return []byte(b.String())
}

// md makes s safe in a Markdown table cell: one line, pipes escaped.
func md(s string) string {
	return strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ", "\t", " ", "|", `\|`).Replace(s)
}

// writeFileAtomic writes data to path through a temporary file in the
// same directory, so that a reader never sees half a report.
func writeFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}
