package doccheck

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// readmeMax is the README's bound: what jetjob is, how to start, configure
// and run it, and the current figures; the detail lives in docs/.
const readmeMax = 25600

func root(t *testing.T) string {
	t.Helper()
	r, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(r, "go.mod")); err != nil {
		t.Fatalf("repository root not found at %s: %v", r, err)
	}
	return r
}

func openTestRepo(t *testing.T) *repo {
	t.Helper()
	r, err := openRepo(root(t))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// markdownFiles lists README.md and every markdown file under docs/.
func markdownFiles(t *testing.T, r *repo) []string {
	t.Helper()
	out := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(r.root, "docs"), func(p string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() && strings.HasSuffix(p, ".md") {
			rel, _ := filepath.Rel(r.root, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out[1:])
	return out
}

// TestDocClaims: every path, package symbol, bare source file and
// signature the docs name exists as named.
func TestDocClaims(t *testing.T) {
	r := checkDocs(t, (*repo).checkClaims)
	t.Logf("claims checked: %v", r.checked)
}

// TestDocLinks: every link of README.md and docs/ to a local file
// resolves, its #anchor to a heading there.
func TestDocLinks(t *testing.T) {
	r := checkDocs(t, (*repo).checkLinks)
	t.Logf("links checked: %d", r.checked["link"])
}

// checkDocs runs check on every Markdown file of the repository, failing
// the test with each problem it reports, and returns the repository (for
// what it counted).
func checkDocs(t *testing.T, check func(*repo, *mdDoc) []string) *repo {
	t.Helper()
	r := openTestRepo(t)
	for _, rel := range markdownFiles(t, r) {
		d, err := r.doc(rel)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range check(r, d) {
			t.Error(p)
		}
	}
	return r
}

// TestArchitectureNamesEveryPackage: docs/architecture.md says what each
// package of the module is for, so a new package comes with its line.
func TestArchitectureNamesEveryPackage(t *testing.T) {
	r := openTestRepo(t)
	d, err := r.doc("docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	r.checkClaims(d)
	var missing []string
	for p := range r.idx.packages {
		if !d.named[p] {
			missing = append(missing, p)
		}
	}
	sort.Strings(missing)
	for _, p := range missing {
		t.Errorf("docs/architecture.md does not name package %s: add it where components or the other packages are listed", p)
	}
	t.Logf("%d of %d packages named", len(r.idx.packages)-len(missing), len(r.idx.packages))
}

// TestReadmeSize keeps the README within its bound, so that detail goes
// to docs/ and not back into it.
func TestReadmeSize(t *testing.T) {
	fi, err := os.Stat(filepath.Join(root(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > readmeMax {
		t.Errorf("README.md is %d bytes, over its bound of %d: move detail into docs/ and link it", fi.Size(), readmeMax)
	}
}
