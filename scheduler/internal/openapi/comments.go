package openapi

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
)

// Comments reads the doc comments of the struct types declared in the Go
// files of dir (tests aside) and of their fields, as Spec.Docs takes
// them: "Type" and "Type.Field". A comment before a group of fields
// ("// ShardIndex and ShardTotal name ...") goes to the first of them.
func Comments(dir string) (map[string]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			return nil, err
		}
		f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
		if err != nil {
			return nil, fmt.Errorf("read the comments of %s: %w", name, err)
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, sp := range gd.Specs {
				ts := sp.(*ast.TypeSpec)
				doc := ts.Doc
				if doc == nil && len(gd.Specs) == 1 {
					doc = gd.Doc
				}
				if t := text(doc); t != "" {
					out[ts.Name.Name] = t
				}
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					continue
				}
				for _, fl := range st.Fields.List {
					t := strings.TrimSpace(text(fl.Doc) + " " + text(fl.Comment))
					if t == "" || len(fl.Names) == 0 {
						continue
					}
					out[ts.Name.Name+"."+fl.Names[0].Name] = t
				}
			}
		}
	}
	return out, nil
}

// text is a comment as one paragraph per blank-line-separated block.
func text(cg *ast.CommentGroup) string {
	if cg == nil {
		return ""
	}
	var paras []string
	for _, p := range strings.Split(strings.TrimSpace(cg.Text()), "\n\n") {
		paras = append(paras, strings.Join(strings.Fields(p), " "))
	}
	return strings.Join(paras, "\n\n")
}
