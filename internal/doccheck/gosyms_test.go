package doccheck

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// goIndex is what the repository's Go files declare, for the docs' symbol
// references. Test files count: docs name test helpers too.
type goIndex struct {
	// byDir and byFile hold, per package directory and per file, every
	// top-level name, every method and field as "Type.Name", and every
	// method also by its bare name (the docs write `store.CancelRun` for
	// the Store's method).
	byDir  map[string]map[string]bool
	byFile map[string]map[string]bool
	// funcs holds the signature of every top-level function, printed as
	// gofmt prints it, per directory: "func New(cfg Config, deps Deps) (*Manager, error)".
	funcs map[string]map[string]string
	// pkgDirs gives the directories of each package name (main excepted).
	pkgDirs map[string][]string
	// packages holds every directory with a non-test Go file.
	packages map[string]bool
}

// skipDir says which directories hold no code of the project.
func skipDir(name string) bool {
	return strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" ||
		name == "bin" || name == "bench-results"
}

// walkFiles calls fn with the path and the slash-separated path from root
// of every file of the project below root (skipDir says what is not).
func walkFiles(root string, fn func(p, rel string) error) error {
	return filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			if p != root && skipDir(e.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		return fn(p, filepath.ToSlash(rel))
	})
}

func indexGo(root string) (*goIndex, error) {
	ix := &goIndex{byDir: map[string]map[string]bool{}, byFile: map[string]map[string]bool{},
		funcs: map[string]map[string]string{}, pkgDirs: map[string][]string{}, packages: map[string]bool{}}
	fset := token.NewFileSet()
	err := walkFiles(root, func(p, rel string) error {
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return fmt.Errorf("parse %s: %w", p, err)
		}
		ix.add(fset, path.Dir(rel), rel, f)
		return nil
	})
	return ix, err
}

func (ix *goIndex) add(fset *token.FileSet, dir, file string, f *ast.File) {
	if ix.byDir[dir] == nil {
		ix.byDir[dir] = map[string]bool{}
		ix.funcs[dir] = map[string]string{}
	}
	names := map[string]bool{}
	ix.byFile[file] = names
	if !strings.HasSuffix(file, "_test.go") {
		ix.packages[dir] = true
	}
	pkg := strings.TrimSuffix(f.Name.Name, "_test")
	if pkg != "main" && !slices.Contains(ix.pkgDirs[pkg], dir) {
		ix.pkgDirs[pkg] = append(ix.pkgDirs[pkg], dir)
	}
	declare := func(n string) {
		names[n] = true
		ix.byDir[dir][n] = true
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			declare(d.Name.Name)
			if d.Recv != nil && len(d.Recv.List) == 1 {
				declare(recvType(d.Recv.List[0].Type) + "." + d.Name.Name)
				continue
			}
			var b bytes.Buffer
			sig := &ast.FuncDecl{Name: d.Name, Type: d.Type}
			if err := printer.Fprint(&b, fset, sig); err == nil {
				ix.funcs[dir][d.Name.Name] = b.String()
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					declare(s.Name.Name)
					for _, m := range members(s.Type) {
						declare(s.Name.Name + "." + m)
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						declare(n.Name)
					}
				}
			}
		}
	}
}

// recvType is the name of a method's receiver type.
func recvType(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return recvType(t.X)
	case *ast.IndexExpr:
		return recvType(t.X)
	case *ast.IndexListExpr:
		return recvType(t.X)
	case *ast.Ident:
		return t.Name
	}
	return ""
}

// members lists a struct's fields (an embedded one by its type's name) or
// an interface's methods.
func members(e ast.Expr) []string {
	var list *ast.FieldList
	switch t := e.(type) {
	case *ast.StructType:
		list = t.Fields
	case *ast.InterfaceType:
		list = t.Methods
	default:
		return nil
	}
	var out []string
	for _, f := range list.List {
		for _, n := range f.Names {
			out = append(out, n.Name)
		}
		if len(f.Names) == 0 {
			if n := recvType(f.Type); n != "" {
				out = append(out, n)
			} else if s, ok := f.Type.(*ast.SelectorExpr); ok {
				out = append(out, s.Sel.Name)
			}
		}
	}
	return out
}
