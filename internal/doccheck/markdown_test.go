package doccheck

import (
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// A block is what a bare file name in a doc is read against: a table row,
// a heading, or a run of non-blank lines (a paragraph, a whole list).
// Fenced code is no block: commands and examples are not claims about the
// tree.
type block struct {
	line int    // first line, 1-based
	text string // its lines joined by spaces
}

// mdDoc is one markdown file, split for the checks.
type mdDoc struct {
	rel     string // path from the repository root
	blocks  []block
	anchors map[string]bool // the slugs of its headings
	// named holds the directories its code spans name (a package, or a
	// file in it), filled by checkClaims.
	named map[string]bool
}

// parseMarkdown splits src into blocks and collects its headings' anchors.
func parseMarkdown(rel, src string) *mdDoc {
	d := &mdDoc{rel: rel, anchors: map[string]bool{}, named: map[string]bool{}}
	seen := map[string]int{}
	var cur []string
	start := 0
	flush := func() {
		if len(cur) > 0 {
			d.blocks = append(d.blocks, block{line: start, text: strings.Join(cur, " ")})
		}
		cur = nil
	}
	fence := ""
	for i, line := range strings.Split(src, "\n") {
		t := strings.TrimSpace(line)
		if fence != "" {
			if strings.HasPrefix(t, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			flush()
			fence = t[:3]
			continue
		}
		switch {
		case t == "":
			flush()
		case strings.HasPrefix(t, "|"), strings.HasPrefix(t, "#"):
			flush()
			d.blocks = append(d.blocks, block{line: i + 1, text: t})
			if h, ok := heading(t); ok {
				s := slug(h)
				if n := seen[s]; n > 0 {
					d.anchors[s+"-"+strconv.Itoa(n)] = true
				} else {
					d.anchors[s] = true
				}
				seen[s]++
			}
		default:
			if len(cur) == 0 {
				start = i + 1
			}
			cur = append(cur, t)
		}
	}
	flush()
	return d
}

// heading returns the text of an ATX heading line.
func heading(t string) (string, bool) {
	n := 0
	for n < len(t) && t[n] == '#' {
		n++
	}
	if n == 0 || n > 6 || n == len(t) || t[n] != ' ' {
		return "", false
	}
	return strings.TrimSpace(strings.TrimRight(t[n:], "#")), true
}

// slug is GitHub's anchor of a heading: lower case, letters, digits,
// hyphens and underscores kept, spaces made hyphens, everything else
// (backticks, punctuation) dropped.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// A span is one inline code span of a block, with where it ends, so that
// what follows it can be read.
type span struct {
	code     string
	from, to int // the span's bounds in the block's text, backticks included
}

var codeSpan = regexp.MustCompile("`([^`]+)`")

func spans(text string) []span {
	var out []span
	for _, m := range codeSpan.FindAllStringSubmatchIndex(text, -1) {
		out = append(out, span{code: strings.TrimSpace(text[m[2]:m[3]]), from: m[0], to: m[1]})
	}
	return out
}

// mdLink matches a link or image, its text allowed one level of brackets;
// the target is group 1. Code spans are blanked before it is applied, so a
// link written as code is no link.
var mdLink = regexp.MustCompile(`!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^()\s]+)(?:\s+"[^"]*")?\)`)

func links(text string) []string {
	blank := codeSpan.ReplaceAllStringFunc(text, func(s string) string {
		return "`" + strings.Repeat(" ", len(s)-2) + "`"
	})
	var out []string
	for _, m := range mdLink.FindAllStringSubmatch(blank, -1) {
		out = append(out, m[1])
	}
	return out
}
