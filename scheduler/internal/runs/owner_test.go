package runs_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// ownerDir is the one directory whose non-test Go source may write
// job_runs (the package doc's claim), relative to the module root.
const ownerDir = "scheduler/internal/runs"

// dynamic stands in the scanned text for a part of a statement that is not
// a string literal (a variable, a call, pgx.Identifier{...}.Sanitize()): a
// table name that is not spelled out counts as job_runs where only a run
// table can be meant (DROP TABLE, ATTACH/DETACH PARTITION).
const dynamic = "\x00"

// runTable is job_runs or a partition of it, schema-qualified or quoted.
const runTable = `(?:"?\w+"?\.)?"?job_runs\w*`

// writesRuns matches a statement that writes job_runs or one of its
// partitions (job_runs_default, job_runs_p20261127, ...): rows (INSERT,
// UPDATE, DELETE, MERGE, TRUNCATE, COPY ... FROM) and the partition layout
// (CREATE TABLE ... PARTITION OF, ALTER TABLE, DROP TABLE, and the
// migrations' jetjob_create_run_partition, which creates a day and moves
// its rows out of the default partition). Whitespace includes newlines, so
// a table name on the line after its verb is caught.
var writesRuns = regexp.MustCompile(`(?is)` +
	`\b(?:insert\s+into|update(?:\s+only)?|delete\s+from(?:\s+only)?|merge\s+into|truncate(?:\s+table)?(?:\s+only)?|copy|alter\s+table(?:\s+if\s+exists)?(?:\s+only)?)\s+` + runTable +
	`|\bpartition\s+of\s+` + runTable +
	`|\bdrop\s+table(?:\s+if\s+exists)?\s+(?:` + runTable + `|` + dynamic + `)` +
	`|\b(?:attach|detach)\s+partition\s+(?:` + runTable + `|` + dynamic + `)` +
	`|\bjetjob_create_run_partition\b`)

// Package runs owns every statement that writes job_runs (doc.go): no
// other package of the module may hold one in its non-test source. The
// test reads the source only, so it runs in the -short tier. A statement
// is read as the compiler would join it: the string literals of one chain
// of + are concatenated, other operands standing as a placeholder, so
// "DELETE FROM " + "job_runs" and a table name on the next line of a raw
// string are both found. Migrations (.sql, schema history) and tests are
// outside the rule.
func TestOnlyRunsWritesJobRuns(t *testing.T) {
	root := moduleRoot(t)
	fset := token.NewFileSet()
	var found []string
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if e.IsDir() {
			name := e.Name()
			if p != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" || rel == ownerDir) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, s := range statements(f) {
			if m := writesRuns.FindString(s.text); m != "" {
				pos := fset.Position(s.pos)
				found = append(found, rel+":"+strconv.Itoa(pos.Line)+": "+strings.Join(strings.Fields(strings.ReplaceAll(m, dynamic, "<expr>")), " "))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Errorf("%s: a write of job_runs outside package runs; move it into %s (see its doc.go)", f, ownerDir)
	}
}

// The scanner itself: what it must catch and what it must leave.
func TestWritesRunsPattern(t *testing.T) {
	for _, c := range []struct {
		src  string
		want bool
	}{
		{"`UPDATE job_runs SET status = 'CANCELLED'`", true},
		{"`UPDATE job_runs r SET alarm_status = 'none'`", true},
		{"`WITH d AS (\n\t\t\tDELETE FROM\n\t\t\t\tjob_runs WHERE job_id = $1)`", true},
		{`"DELETE FROM " + "job_runs_default WHERE true"`, true},
		{"`INSERT INTO job_runs (id) VALUES ($1)`", true},
		{"`DROP TABLE IF EXISTS ` + pgx.Identifier{name}.Sanitize()", true},
		{"`DROP TABLE job_runs_p20261127`", true},
		{"`SELECT jetjob_create_run_partition($1)`", true},
		{"`CREATE TABLE x PARTITION OF job_runs FOR VALUES FROM ($1) TO ($2)`", true},
		{"`SELECT status FROM job_runs WHERE id = $1 FOR UPDATE`", false},
		{"`UPDATE backfills SET state = 'cancelled'`", false},
		{"`UPDATE jobs SET next_fire = $2 FROM job_runs r WHERE r.id = $1`", false},
		{"`DELETE FROM run_chains WHERE updated_at < $1`", false},
		{"`DROP TABLE IF EXISTS old_stats`", false},
		{`"jetjob_runs_planned_total"`, false},
	} {
		f, err := parser.ParseFile(token.NewFileSet(), "x.go", "package x\nvar _ = "+c.src+"\n", 0)
		if err != nil {
			t.Fatalf("%s: %v", c.src, err)
		}
		got := false
		for _, s := range statements(f) {
			got = got || writesRuns.MatchString(s.text)
		}
		if got != c.want {
			t.Errorf("%s: write of job_runs found = %v, want %v", c.src, got, c.want)
		}
	}
}

type statement struct {
	pos  token.Pos
	text string
}

// statements returns the text of every string literal of f, and of every
// chain of + holding one, joined as described in TestOnlyRunsWritesJobRuns.
// An operand of a chain that is not a literal (a call, say) is still
// searched for statements of its own.
func statements(f *ast.File) []statement {
	var out []statement
	joined := map[ast.Node]bool{} // the links and literals of chains already read
	ast.Inspect(f, func(n ast.Node) bool {
		if n == nil || joined[n] {
			return true
		}
		switch n := n.(type) {
		case *ast.BinaryExpr:
			if n.Op != token.ADD {
				return true
			}
			var b strings.Builder
			if joinChain(n, &b, joined) {
				out = append(out, statement{n.Pos(), b.String()})
			}
		case *ast.BasicLit:
			if s, ok := stringValue(n); ok {
				out = append(out, statement{n.Pos(), s})
			}
		}
		return true
	})
	return out
}

// joinChain writes e's text to b, flattening nested +, marks the links and
// literals it read in joined, and reports whether any operand was a string
// literal.
func joinChain(e ast.Expr, b *strings.Builder, joined map[ast.Node]bool) bool {
	switch e := e.(type) {
	case *ast.ParenExpr:
		joined[e] = true
		return joinChain(e.X, b, joined)
	case *ast.BinaryExpr:
		if e.Op == token.ADD {
			joined[e] = true
			l := joinChain(e.X, b, joined)
			r := joinChain(e.Y, b, joined)
			return l || r
		}
	case *ast.BasicLit:
		if s, ok := stringValue(e); ok {
			joined[e] = true
			b.WriteString(s)
			return true
		}
	}
	b.WriteString(" " + dynamic + " ")
	return false
}

func stringValue(l *ast.BasicLit) (string, bool) {
	if l.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(l.Value)
	return s, err == nil
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	r, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(r, "go.mod")); err != nil {
		t.Fatalf("module root not found at %s: %v", r, err)
	}
	return r
}
