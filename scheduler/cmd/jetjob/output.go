package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"
)

// Output formats of -o/--output.
const (
	outputTable = "table"
	outputJSON  = "json"
)

// timeLayout is RFC 3339 with millisecond precision.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// messageWidth is how many characters of a run's message a table shows.
const messageWidth = 60

// emit prints doc as indented JSON with -o json, else calls human.
func (a *app) emit(doc any, human func(w io.Writer) error) error {
	if a.output == outputJSON {
		return writeJSON(a.stdout, doc)
	}
	return human(a.stdout)
}

func writeJSON(w io.Writer, doc any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// table is a tabwriter for human tables; call flush when done.
type table struct{ tw *tabwriter.Writer }

func newTable(w io.Writer, header ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
	t.row(header...)
	return t
}

// row writes one line; cells are made single-line and tab-free.
func (t *table) row(cells ...string) {
	for i, c := range cells {
		cells[i] = cell(c)
	}
	fmt.Fprintln(t.tw, strings.Join(cells, "\t"))
}

func (t *table) flush() error { return t.tw.Flush() }

// cell makes s safe for a table cell: control characters (tabs and newlines
// included, which would break the columns, and escape sequences, which could
// drive the terminal) become spaces or '?'; an empty cell shows "-".
func cell(s string) string {
	s = strings.TrimSpace(clean(s, false))
	if s == "" {
		return "-"
	}
	return s
}

// clean replaces control characters in s; newlines survive when keepNL.
func clean(s string, keepNL bool) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n' && keepNL:
			return r
		case r == '\t' || r == '\n' || r == '\r':
			return ' '
		case unicode.IsControl(r) || r == utf8.RuneError:
			return '?'
		}
		return r
	}, s)
}

// truncate shortens s to at most n characters, marking the cut with "…".
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// kv is a vertical "key: value" listing; values may span several lines.
type kv struct{ rows [][2]string }

func (k *kv) add(key, value string) { k.rows = append(k.rows, [2]string{key, value}) }

func (k *kv) write(w io.Writer) error {
	width := 0
	for _, r := range k.rows {
		width = max(width, utf8.RuneCountInString(r[0])+1)
	}
	var b strings.Builder
	for _, r := range k.rows {
		v := strings.TrimRight(clean(r[1], true), " \n")
		if v == "" {
			v = "-"
		}
		for i, line := range strings.Split(v, "\n") {
			key := ""
			if i == 0 {
				key = r[0] + ":"
			}
			fmt.Fprintf(&b, "%-*s %s\n", width, key, line)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// fmtTime writes t in UTC, RFC 3339 with milliseconds; zero is "-".
func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(timeLayout)
}

func fmtTimePtr(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return fmtTime(*t)
}

func fmtDuration(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return d.Round(time.Millisecond).String()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
