// Package linediff compares two texts line by line and writes the
// difference as a unified diff (diff -u), for a script's versions: the
// standard library has no diff, and a script of at most 64 KiB needs no
// more than a longest-common-subsequence table over the lines that differ.
package linediff

import (
	"fmt"
	"strings"
)

// Op is what a line of an edit script does.
type Op byte

// The kinds of lines of an edit script.
const (
	Equal  Op = ' '
	Delete Op = '-'
	Insert Op = '+'
)

// Line is one line of an edit script: kept, deleted from a or inserted
// from b.
type Line struct {
	Op   Op
	Text string
}

// maxCells bounds the LCS table (cells of 4 bytes: 16 MiB): past it the
// differing middle of the texts is shown replaced whole, still a correct
// diff, only not the shortest.
const maxCells = 4 << 20

// Lines splits s into lines without their "\n" ("" has none; a last line
// without "\n" is a line).
func Lines(s string) []string {
	if s == "" {
		return nil
	}
	ls := strings.Split(s, "\n")
	if ls[len(ls)-1] == "" {
		ls = ls[:len(ls)-1]
	}
	return ls
}

// Compare returns an edit script turning a into b: a longest common
// subsequence of their lines kept, the rest deleted and inserted.
func Compare(a, b []string) []Line {
	// The common head and tail cost nothing; the table covers the middle.
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	out := make([]Line, 0, len(a)+len(b))
	for _, l := range a[:pre] {
		out = append(out, Line{Equal, l})
	}
	out = append(out, middle(a[pre:len(a)-suf], b[pre:len(b)-suf])...)
	for _, l := range a[len(a)-suf:] {
		out = append(out, Line{Equal, l})
	}
	return out
}

// middle is Compare of texts with no common head or tail.
func middle(a, b []string) []Line {
	n, m := len(a), len(b)
	var out []Line
	if n*m == 0 || n*m > maxCells {
		for _, l := range a {
			out = append(out, Line{Delete, l})
		}
		for _, l := range b {
			out = append(out, Line{Insert, l})
		}
		return out
	}
	// t[i][j] is the length of an LCS of a[i:] and b[j:].
	w := m + 1
	t := make([]int32, (n+1)*w)
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				t[i*w+j] = t[(i+1)*w+j+1] + 1
			} else {
				t[i*w+j] = max(t[(i+1)*w+j], t[i*w+j+1])
			}
		}
	}
	i, j := 0, 0
	for i < n && j < m {
		switch {
		case a[i] == b[j]:
			out = append(out, Line{Equal, a[i]})
			i++
			j++
		case t[(i+1)*w+j] >= t[i*w+j+1]:
			out = append(out, Line{Delete, a[i]})
			i++
		default:
			out = append(out, Line{Insert, b[j]})
			j++
		}
	}
	for ; i < n; i++ {
		out = append(out, Line{Delete, a[i]})
	}
	for ; j < m; j++ {
		out = append(out, Line{Insert, b[j]})
	}
	return out
}

// Unified returns the unified diff of texts a and b with context lines
// of context around each change, under the headers "--- nameA" and
// "+++ nameB"; "" when they are equal.
func Unified(nameA, nameB, a, b string, context int) string {
	ed := Compare(Lines(a), Lines(b))
	var sb strings.Builder
	// Hunks: runs of edit lines within 2*context of each other.
	i := 0
	for {
		for i < len(ed) && ed[i].Op == Equal {
			i++
		}
		if i == len(ed) {
			break
		}
		start := max(i-context, 0)
		end := i
		for k := i; k < len(ed); k++ {
			if ed[k].Op != Equal {
				end = k + 1
			} else if k-end >= 2*context {
				break
			}
		}
		end = min(end+context, len(ed))
		if sb.Len() == 0 {
			fmt.Fprintf(&sb, "--- %s\n+++ %s\n", nameA, nameB)
		}
		writeHunk(&sb, ed, start, end)
		i = end
	}
	return sb.String()
}

// writeHunk writes ed[start:end] as one hunk with its @@ header.
func writeHunk(sb *strings.Builder, ed []Line, start, end int) {
	lineA, lineB := 1, 1 // numbers of ed[start]'s lines in a and b
	for _, l := range ed[:start] {
		if l.Op != Insert {
			lineA++
		}
		if l.Op != Delete {
			lineB++
		}
	}
	var na, nb int
	for _, l := range ed[start:end] {
		if l.Op != Insert {
			na++
		}
		if l.Op != Delete {
			nb++
		}
	}
	fmt.Fprintf(sb, "@@ -%s +%s @@\n", hunkRange(lineA, na), hunkRange(lineB, nb))
	for _, l := range ed[start:end] {
		sb.WriteByte(byte(l.Op))
		sb.WriteString(l.Text)
		sb.WriteByte('\n')
	}
}

// hunkRange is a hunk's range as diff -u writes it: "l,n", "l" for one
// line, and "l-1,0" for none (the line after which it goes).
func hunkRange(l, n int) string {
	switch n {
	case 0:
		return fmt.Sprintf("%d,0", l-1)
	case 1:
		return fmt.Sprintf("%d", l)
	}
	return fmt.Sprintf("%d,%d", l, n)
}
