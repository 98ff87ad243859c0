package doccheck

import (
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
)

// repo answers the checks' questions about the tree at root.
type repo struct {
	root   string
	top    map[string]bool     // the entries at the root
	bases  []string            // where a doc's short path may start: `planner/fires.go`
	byName map[string][]string // file base name → paths, for a bare name a block does not place
	docs   map[string]*mdDoc   // the markdown files read so far, by path
	idx    *goIndex
	// checked counts the claims checked, by kind, to show the check is not
	// vacuous.
	checked map[string]int
}

// shortBases are the directories a doc may leave out of a path: it writes
// `planner/fires.go` for scheduler/internal/planner/fires.go, `builtin/shell.go`
// for worker/builtin/shell.go.
var shortBases = []string{"scheduler", "scheduler/internal", "worker", "worker/internal", "shared", "internal"}

func openRepo(root string) (*repo, error) {
	r := &repo{root: root, top: map[string]bool{}, bases: shortBases, byName: map[string][]string{},
		docs: map[string]*mdDoc{}, checked: map[string]int{}}
	es, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	for _, e := range es {
		// What a build leaves (bin/, bench-results/) is no claim about
		// the tree: a fresh clone has none of it.
		if !skipDir(e.Name()) {
			r.top[e.Name()] = true
		}
	}
	err = walkFiles(root, func(p, rel string) error {
		name := path.Base(rel)
		r.byName[name] = append(r.byName[name], rel)
		return nil
	})
	if err != nil {
		return nil, err
	}
	r.idx, err = indexGo(root)
	return r, err
}

// stat says whether rel (slash-separated, from the root) exists and is a
// directory.
func (r *repo) stat(rel string) (exists, dir bool) {
	fi, err := os.Stat(filepath.Join(r.root, filepath.FromSlash(rel)))
	if err != nil {
		return false, false
	}
	return true, fi.IsDir()
}

func (r *repo) doc(rel string) (*mdDoc, error) {
	if d, ok := r.docs[rel]; ok {
		return d, nil
	}
	b, err := os.ReadFile(filepath.Join(r.root, filepath.FromSlash(rel)))
	if err != nil {
		return nil, err
	}
	d := parseMarkdown(rel, string(b))
	r.docs[rel] = d
	return d, nil
}

// What a code span may be. Anything else (a flag, a subject, a status, a
// command) is prose to this check.
var (
	// notPath: a span with one of these is a command, URL, pattern or
	// placeholder, not a path of the tree.
	notPath = regexp.MustCompile(`[\s<>{}$:=*?'"|,;@\[\]]`)
	// goSymbol: pkg.Name or pkg.Type.Name, optionally called; Name is
	// exported (`scheduler.egressAllow` is a Helm value).
	goSymbol = regexp.MustCompile(`^([a-z][a-z0-9]*)\.([A-Z][A-Za-z0-9_]*)(?:\.([A-Za-z_][A-Za-z0-9_]*))?(?:\(\))?$`)
	// goIdent: a bare identifier, optionally called.
	goIdent = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)(?:\(\))?$`)
	// sourceExt: a bare name with these is a file of the tree (a `.yaml`
	// or `.json` may be the reader's own file).
	sourceExt = map[string]bool{".go": true, ".sql": true}
)

// resolved is where a span's path claim points.
type resolved struct {
	rel string
	dir bool
}

// resolvePath resolves a span that contains a slash. claim says whether
// the span is a claim about the tree at all; ok whether it holds.
func (r *repo) resolvePath(code string) (res resolved, claim, ok bool) {
	if notPath.MatchString(code) || strings.HasPrefix(code, "/") || strings.HasPrefix(code, ".") ||
		strings.HasPrefix(code, "~") || strings.HasPrefix(code, "-") {
		return res, false, false
	}
	p := strings.TrimSuffix(strings.TrimSuffix(code, "/..."), "/")
	first, _, _ := strings.Cut(p, "/")
	claim = r.top[first] || sourceExt[path.Ext(p)]
	for _, b := range r.bases {
		if ok, dir := r.stat(b + "/" + first); ok && dir {
			claim = true
		}
	}
	if !claim {
		return res, false, false
	}
	for _, b := range append([]string{""}, r.bases...) {
		rel := path.Join(b, p)
		if ok, dir := r.stat(rel); ok {
			return resolved{rel: rel, dir: dir}, true, true
		}
		// A package path with a symbol: `internal/logging.Named`.
		dir, sym, found := strings.Cut(path.Base(rel), ".")
		if found && !sourceExt["."+sym] {
			pkg := path.Join(path.Dir(rel), dir)
			if r.idx.byDir[pkg][strings.TrimSuffix(sym, "()")] {
				return resolved{rel: pkg, dir: true}, true, true
			}
		}
	}
	return res, true, false
}

// packageDir resolves a one-word span naming a package directory
// (`worker`, `store`), which places the bare file names of its block.
func (r *repo) packageDir(code string) (string, bool) {
	if !goIdent.MatchString(code) || strings.HasSuffix(code, "()") {
		return "", false
	}
	for _, b := range append([]string{""}, append(r.bases, "internal")...) {
		rel := path.Join(b, code)
		if _, ok := r.idx.byDir[rel]; ok {
			return rel, true
		}
	}
	return "", false
}

// symbolOK says whether a pkg.Name or pkg.Type.Name span names a declared
// symbol. known is false when its first word is no package of the tree (a
// subject, `jetjob.sched.started`, or a value, `w.Collector()`).
func (r *repo) symbolOK(code string) (known, ok bool) {
	m := goSymbol.FindStringSubmatch(code)
	if m == nil || sourceExt["."+m[2]] || sourceExt["."+m[3]] {
		return false, false
	}
	dirs := r.idx.pkgDirs[m[1]]
	if len(dirs) == 0 {
		return false, false
	}
	name := m[2]
	if m[3] != "" {
		name += "." + m[3]
	}
	for _, d := range dirs {
		if r.idx.byDir[d][name] {
			return true, true
		}
	}
	return true, false
}

// checkClaims checks every code span of the doc that names a path, a
// package's symbol, a bare source file or a signature.
func (r *repo) checkClaims(d *mdDoc) []string {
	var problems []string
	bad := func(b block, f string, args ...any) {
		problems = append(problems, fmt.Sprintf("%s:%d: %s", d.rel, b.line, fmt.Sprintf(f, args...)))
	}
	for _, b := range d.blocks {
		ss := spans(b.text)
		// The directories the block names place its bare file names.
		var places []string
		res := make([]resolved, len(ss))
		for i, s := range ss {
			if strings.Contains(s.code, "/") {
				rs, claim, ok := r.resolvePath(s.code)
				if claim {
					r.checked["path"]++
				}
				switch {
				case claim && !ok:
					bad(b, "`%s` names a path that does not exist", s.code)
				case ok:
					res[i] = rs
					if rs.dir {
						places = append(places, rs.rel)
					} else {
						places = append(places, path.Dir(rs.rel))
					}
				}
				continue
			}
			// `worker` (`receive.go`, ...): a package, then its files.
			if dir, ok := r.packageDir(s.code); ok && strings.HasPrefix(b.text[s.to:], " (") {
				places = append(places, dir)
				continue
			}
			known, ok := r.symbolOK(s.code)
			if known {
				r.checked["symbol"]++
			}
			if known && !ok {
				bad(b, "`%s` names a symbol its package does not declare", s.code)
			}
		}
		for _, p := range places {
			d.named[p] = true
		}
		// under `worker/internal/`: `joblock`, `runevents`
		for _, s := range ss {
			for _, p := range places {
				if goIdent.MatchString(s.code) && r.idx.packages[path.Join(p, s.code)] {
					d.named[path.Join(p, s.code)] = true
				}
			}
		}
		for i, s := range ss {
			if !strings.Contains(s.code, "/") && sourceExt[path.Ext(s.code)] && !notPath.MatchString(s.code) {
				r.checked["bare file"]++
				if where, ok := r.placeFile(s.code, places); !ok {
					bad(b, "`%s` is in none of %s", s.code, where)
				} else if where != "" {
					res[i] = resolved{rel: where}
				}
			}
		}
		// `file.go` (`name`) and `pkg/dir` (`name`): the name is declared
		// there.
		for i, s := range ss {
			if res[i].rel == "" || i+1 == len(ss) || strings.TrimSpace(b.text[s.to:ss[i+1].from]) != "(" {
				continue
			}
			m := goIdent.FindStringSubmatch(ss[i+1].code)
			if m == nil || strings.HasPrefix(b.text[ss[i+1].to:], "'") {
				continue // a file, or a table's name: (`jobs`' due read)
			}
			names := r.idx.byFile[res[i].rel]
			if res[i].dir {
				names = r.idx.byDir[res[i].rel]
			}
			if names == nil {
				continue // not Go: a directory of SQL, docs
			}
			r.checked["declared in"]++
			if !names[m[1]] {
				bad(b, "`%s` does not declare `%s`", res[i].rel, m[1])
			}
		}
		problems = append(problems, r.checkSignatures(d, b, ss, res)...)
	}
	return problems
}

// placeFile finds a bare file name in the directories its block names; a
// block that names none places it anywhere in the tree. It returns the
// file's path, or what it looked in.
func (r *repo) placeFile(name string, places []string) (string, bool) {
	if len(places) == 0 {
		if ps := r.byName[name]; len(ps) == 1 {
			return ps[0], true
		} else {
			return "", len(ps) > 0
		}
	}
	for _, p := range places {
		rel := path.Join(p, name)
		if ok, _ := r.stat(rel); ok {
			return rel, true
		}
	}
	return strings.Join(places, ", "), false
}

// checkSignatures checks a table row that names a package in its first
// cell and a signature (`func New(...) ...`) in another: the package
// declares that function, exactly so.
func (r *repo) checkSignatures(d *mdDoc, b block, ss []span, res []resolved) []string {
	if !strings.HasPrefix(b.text, "|") || len(ss) == 0 || !res[0].dir {
		return nil
	}
	var problems []string
	for _, s := range ss[1:] {
		name, ok := strings.CutPrefix(s.code, "func ")
		if !ok {
			continue
		}
		name, _, _ = strings.Cut(name, "(")
		name, _, _ = strings.Cut(name, "[")
		r.checked["signature"]++
		got, ok := r.idx.funcs[res[0].rel][name]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s:%d: `%s` declares no func %s", d.rel, b.line, res[0].rel, name))
		case squash(got) != squash(s.code):
			problems = append(problems, fmt.Sprintf("%s:%d: `%s` says `%s`, the code `%s`", d.rel, b.line, res[0].rel, s.code, got))
		}
	}
	return problems
}

func squash(s string) string { return strings.Join(strings.Fields(s), " ") }

// checkLinks checks that every link of the doc to a local file resolves,
// and that a #fragment names a heading of the markdown file it points into.
func (r *repo) checkLinks(d *mdDoc) []string {
	var problems []string
	for _, b := range d.blocks {
		for _, target := range links(b.text) {
			if u, err := url.Parse(target); err != nil || u.Scheme != "" {
				continue
			}
			r.checked["link"]++
			p, frag, _ := strings.Cut(target, "#")
			p, err := url.PathUnescape(p)
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s:%d: link %q: %v", d.rel, b.line, target, err))
				continue
			}
			rel := d.rel
			if p != "" {
				rel = path.Join(path.Dir(d.rel), p)
				if rel == ".." || strings.HasPrefix(rel, "../") {
					problems = append(problems, fmt.Sprintf("%s:%d: link %q leaves the repository", d.rel, b.line, target))
					continue
				}
				if ok, _ := r.stat(rel); !ok {
					problems = append(problems, fmt.Sprintf("%s:%d: link %q: %s does not exist", d.rel, b.line, target, rel))
					continue
				}
			}
			if frag == "" || path.Ext(rel) != ".md" {
				continue
			}
			td, err := r.doc(rel)
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s:%d: link %q: %v", d.rel, b.line, target, err))
				continue
			}
			if !td.anchors[frag] {
				problems = append(problems, fmt.Sprintf("%s:%d: link %q: %s has no heading #%s", d.rel, b.line, target, rel, frag))
			}
		}
	}
	return problems
}
