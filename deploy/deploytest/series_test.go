package deploytest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// root is the repository's top directory (tests run in their package's).
const root = "../.."

// exportedSeries reads, from the Go source of the binaries' packages, the
// name of every metric they define: Name of a prometheus.*Opts literal
// (joined with Namespace and Subsystem, as client_golang does) and the first
// argument of prometheus.NewDesc. A histogram's name stands for its
// _bucket, _sum and _count series. Reading the source rather than scraping
// a running system finds series that only appear once something happened
// (a LOST run, a failed alarm), which a scrape of a fresh system lacks.
func exportedSeries(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{"up": true} // Prometheus's own, per target
	fset := token.NewFileSet()
	for _, dir := range []string{"scheduler", "worker", "shared", "internal"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.CompositeLit:
					kind := selectorName(n.Type, "prometheus")
					if !strings.HasSuffix(kind, "Opts") {
						return true
					}
					var ns, sub, name string
					for _, e := range n.Elts {
						kv, ok := e.(*ast.KeyValueExpr)
						if !ok {
							continue
						}
						key, _ := kv.Key.(*ast.Ident)
						v, ok := stringLit(kv.Value)
						if key == nil || !ok {
							continue
						}
						switch key.Name {
						case "Namespace":
							ns = v
						case "Subsystem":
							sub = v
						case "Name":
							name = v
						}
					}
					if name == "" {
						return true
					}
					full := name
					if sub != "" {
						full = sub + "_" + full
					}
					if ns != "" {
						full = ns + "_" + full
					}
					names[full] = true
					if kind == "HistogramOpts" {
						for _, s := range []string{"_bucket", "_sum", "_count"} {
							names[full+s] = true
						}
					}
				case *ast.CallExpr:
					if selectorName(n.Fun, "prometheus") == "NewDesc" && len(n.Args) > 0 {
						if v, ok := stringLit(n.Args[0]); ok {
							names[v] = true
						}
					}
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if !names["jetjob_fire_lag_seconds_bucket"] {
		t.Fatalf("reading the metrics from the source found no jetjob_fire_lag_seconds histogram (found %v): the reader is broken", sortedKeys(names))
	}
	return names
}

// documentedSeries are the series docs/metrics.md names (in backquotes),
// histograms expanded by the "histogram" in their row.
func documentedSeries(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "docs", "metrics.md"))
	if err != nil {
		t.Fatalf("docs/metrics.md lists every series jetjob exports: %v", err)
	}
	names := map[string]bool{"up": true}
	re := regexp.MustCompile("`(jetjob_[a-z0-9_]+)`")
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "| `jetjob_") {
			continue
		}
		cells := strings.Split(line, "|")
		for _, m := range re.FindAllStringSubmatch(cells[1], -1) {
			names[m[1]] = true
			if len(cells) > 2 && strings.TrimSpace(cells[2]) == "histogram" {
				for _, s := range []string{"_bucket", "_sum", "_count"} {
					names[m[1]+s] = true
				}
			}
		}
	}
	return names
}

// checkSeries fails for every name that the binaries do not export or that
// docs/metrics.md does not document.
func checkSeries(t *testing.T, where, expr string, exported, documented map[string]bool) {
	t.Helper()
	names, err := seriesNames(expr)
	if err != nil {
		t.Errorf("%s: %v in %q", where, err, expr)
		return
	}
	if len(names) == 0 {
		t.Errorf("%s: no series in %q", where, expr)
	}
	for _, n := range names {
		if !exported[n] {
			t.Errorf("%s: %s is not a series jetjob exports (renamed or removed?): %q", where, n, expr)
		} else if !documented[n] {
			t.Errorf("%s: %s is not documented in docs/metrics.md", where, n)
		}
	}
}

func selectorName(e ast.Expr, pkg string) string {
	s, ok := e.(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	if id, ok := s.X.(*ast.Ident); !ok || id.Name != pkg {
		return ""
	}
	return s.Sel.Name
}

func stringLit(e ast.Expr) (string, bool) {
	l, ok := e.(*ast.BasicLit)
	if !ok || l.Kind != token.STRING {
		return "", false
	}
	v, err := strconv.Unquote(l.Value)
	return v, err == nil
}

func sortedKeys(m map[string]bool) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
