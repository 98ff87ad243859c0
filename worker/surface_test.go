package worker

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The SDK's exported signatures show only what its users can name: no
// type, constant or variable of a package under an internal/ directory
// (which they cannot import) appears in the exported declarations of
// package worker or worker/builtin. What the SDK needs from the module's
// internal packages it wraps in names of its own (Streams, Egress,
// TriggerType, Config.Metrics).
func TestSDKSignaturesShowNoInternalPackage(t *testing.T) {
	t.Parallel()
	for _, dir := range []string{".", "builtin"} {
		leaks, err := internalLeaks(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range leaks {
			t.Errorf("exported signature shows an internal package: %s", l)
		}
	}
}

// The check itself finds what it is meant to find, and only that.
func TestInternalLeaksCheck(t *testing.T) {
	t.Parallel()
	const src = `package p

import (
	"context"
	"example.com/m/internal/a"
	in "example.com/m/internal/b"
	"example.com/m/shared/c"
)

type Open struct {
	A      a.Type
	hidden in.Type
	C      c.Type
	Nested struct{ B in.Type }
}

type hiddenType struct{ A a.Type }

func (hiddenType) Exported(a.Type) {}

func (Open) Method(context.Context) in.Type { return in.Type{} }

func (Open) unexported(a.Type) {}

func Func(x c.Type) a.Type { return a.Type{} }

const Const = a.Value

var Var in.Type

type Iface interface{ M(a.Type) }

type Alias = in.Type
`
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := internalLeaks(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"p.go: Alias: example.com/m/internal/b",
		"p.go: Const: example.com/m/internal/a",
		"p.go: Func: example.com/m/internal/a",
		"p.go: Iface: example.com/m/internal/a",
		"p.go: Open.A: example.com/m/internal/a",
		"p.go: Open.Method: example.com/m/internal/b",
		"p.go: Open.Nested: example.com/m/internal/b",
		"p.go: Var: example.com/m/internal/b",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("leaks found:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// internalLeaks lists, as "file: declaration: import path", every
// exported declaration of the package in dir (its non-test files) whose
// signature names a package whose path has an internal element.
func internalLeaks(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	var leaks []string
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		internal := internalImports(f)
		if len(internal) == 0 {
			continue
		}
		report := func(decl string, n ast.Node) {
			for _, p := range namedPackages(n, internal) {
				leaks = append(leaks, fmt.Sprintf("%s: %s: %s", filepath.Base(name), decl, p))
			}
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				decl := d.Name.Name
				if d.Recv != nil {
					recv := receiverName(d.Recv.List[0].Type)
					if !ast.IsExported(recv) {
						continue
					}
					decl = recv + "." + decl
					report(decl, d.Recv)
				}
				report(decl, d.Type)
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if !s.Name.IsExported() {
							continue
						}
						if s.TypeParams != nil {
							report(s.Name.Name, s.TypeParams)
						}
						if st, ok := s.Type.(*ast.StructType); ok {
							for _, fld := range st.Fields.List {
								if names := exportedNames(fld); names != "" {
									report(s.Name.Name+"."+names, fld.Type)
								}
							}
							continue
						}
						report(s.Name.Name, s.Type)
					case *ast.ValueSpec:
						if names := exportedIdents(s.Names); names != "" {
							if s.Type != nil {
								report(names, s.Type)
							}
							for _, v := range s.Values {
								report(names, v)
							}
						}
					}
				}
			}
		}
	}
	sort.Strings(leaks)
	return leaks, nil
}

// internalImports maps the names f imports packages under to their paths,
// for the paths with an internal element.
func internalImports(f *ast.File) map[string]string {
	out := map[string]string{}
	for _, imp := range f.Imports {
		p, err := strconv.Unquote(imp.Path.Value)
		if err != nil || !strings.Contains("/"+p+"/", "/internal/") {
			continue
		}
		name := path.Base(p) // the module's internal packages are named so
		if imp.Name != nil {
			name = imp.Name.Name
		}
		out[name] = p
	}
	return out
}

// namedPackages lists the internal packages n names (pkg.Name), once each,
// leaving out the unexported fields of the structs it holds: a user never
// sees them.
func namedPackages(n ast.Node, internal map[string]string) []string {
	seen := map[string]bool{}
	var out []string
	var walk func(ast.Node)
	walk = func(n ast.Node) {
		ast.Inspect(n, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.StructType:
				for _, fld := range n.Fields.List {
					if exportedNames(fld) != "" {
						walk(fld.Type)
					}
				}
				return false
			case *ast.SelectorExpr:
				if id, ok := n.X.(*ast.Ident); ok {
					if p, ok := internal[id.Name]; ok && !seen[p] {
						seen[p] = true
						out = append(out, p)
					}
				}
			}
			return true
		})
	}
	walk(n)
	return out
}

// exportedNames is the exported names of a struct field, joined; an
// embedded field counts by its type's name.
func exportedNames(fld *ast.Field) string {
	if len(fld.Names) == 0 {
		if name := receiverName(fld.Type); ast.IsExported(name) {
			return name
		}
		return ""
	}
	return exportedIdents(fld.Names)
}

func exportedIdents(ids []*ast.Ident) string {
	var names []string
	for _, id := range ids {
		if id.IsExported() {
			names = append(names, id.Name)
		}
	}
	return strings.Join(names, ",")
}

// receiverName is the type name of a receiver or an embedded field:
// T, *T, T[P], pkg.T.
func receiverName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return receiverName(e.X)
	case *ast.IndexExpr:
		return receiverName(e.X)
	case *ast.IndexListExpr:
		return receiverName(e.X)
	case *ast.SelectorExpr:
		return e.Sel.Name
	case *ast.Ident:
		return e.Name
	}
	return ""
}
