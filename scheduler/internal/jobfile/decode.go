package jobfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// maxErrors bounds how many problems one Parse reports: enough to fix a
// file in one go, not a wall of text for a file that is not a jobs file.
const maxErrors = 20

// problems collects the errors of a file, each "name:line: path: message".
type problems struct {
	file string
	list []string
}

func (p *problems) add(line int, path, format string, args ...any) {
	if len(p.list) == maxErrors {
		p.list = append(p.list, "… (more problems left out)")
	}
	if len(p.list) > maxErrors {
		return
	}
	msg := fmt.Sprintf(format, args...)
	if path != "" {
		msg = path + ": " + msg
	}
	p.list = append(p.list, fmt.Sprintf("%s:%d: %s", p.file, line, msg))
}

func (p *problems) err() error {
	if len(p.list) == 0 {
		return nil
	}
	return &InvalidError{Problems: p.list}
}

// InvalidError is a file that is not a valid jobs file; each problem names
// the file, the line and the field.
type InvalidError struct {
	Problems []string
}

func (e *InvalidError) Error() string {
	if len(e.Problems) == 1 {
		return "invalid jobs file: " + e.Problems[0]
	}
	return "invalid jobs file:\n  " + strings.Join(e.Problems, "\n  ")
}

// Parse reads a jobs file strictly: an unknown field, a value of the wrong
// type, a missing header, a job defined twice or an invalid value is an
// error naming the line and the field (name is the file's name for the
// messages). Every problem found is reported at once.
func Parse(name string, data []byte) (*File, error) {
	p := &problems{file: name}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			p.add(1, "", "the file is empty: want a document with apiVersion: %s and kind: %s", APIVersion, Kind)
			return nil, p.err()
		}
		return nil, fmt.Errorf("invalid jobs file %s: %w", name, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		p.add(extra.Line, "", "a second YAML document: a jobs file holds one")
	} else if !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("invalid jobs file %s: %w", name, err)
	}
	root := resolve(&doc)
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = resolve(root.Content[0])
	}
	f := &File{}
	if root.Kind != yaml.MappingNode {
		p.add(root.Line, "", "want a mapping with apiVersion, kind, groups and jobs")
		return nil, p.err()
	}
	var header struct{ apiVersion, kind bool }
	eachPair(p, root, "", func(key string, kn, vn *yaml.Node) {
		switch key {
		case "apiVersion":
			header.apiVersion = true
			if vn.Kind != yaml.ScalarNode || vn.Value != APIVersion {
				p.add(vn.Line, key, "want %s (the only version of the format)", APIVersion)
			}
		case "kind":
			header.kind = true
			if vn.Kind != yaml.ScalarNode || vn.Value != Kind {
				p.add(vn.Line, key, "want %s", Kind)
			}
		case "groups":
			eachItem(p, vn, key, func(i int, path string, item *yaml.Node) {
				var g apiv1.Group
				decodeStruct(p, item, path, reflect.ValueOf(&g).Elem(), groupFields, nil)
				f.Groups = append(f.Groups, g)
				f.groupLines = append(f.groupLines, item.Line)
			})
		case "jobs":
			eachItem(p, vn, key, func(i int, path string, item *yaml.Node) {
				j := Job{line: item.Line, fieldLines: map[string]int{}}
				decodeStruct(p, item, path, reflect.ValueOf(&j.Spec).Elem(), jobFields, func(key string, kn, vn *yaml.Node) bool {
					j.fieldLines[key] = kn.Line
					if key != fieldChildren {
						return false
					}
					eachItem(p, vn, path+"."+fieldChildren, func(_ int, cpath string, c *yaml.Node) {
						if c.Kind != yaml.ScalarNode || c.ShortTag() == "!!null" {
							p.add(c.Line, cpath, "want group/name of a job")
							return
						}
						k, err := ParseKey(c.Value)
						if err != nil {
							p.add(c.Line, cpath, "%v", err)
							return
						}
						j.Children = append(j.Children, k)
					})
					return true
				})
				f.Jobs = append(f.Jobs, j)
			})
		default:
			p.add(kn.Line, "", "unknown field %q (want apiVersion, kind, groups, jobs)", key)
		}
	})
	if !header.apiVersion {
		p.add(root.Line, "", "missing apiVersion: %s", APIVersion)
	}
	if !header.kind {
		p.add(root.Line, "", "missing kind: %s", Kind)
	}
	f.validate(p)
	if err := p.err(); err != nil {
		return nil, err
	}
	return f, nil
}

// eachPair calls fn for each key of the mapping n, refusing keys that are
// not plain names or that appear twice.
func eachPair(p *problems, n *yaml.Node, path string, fn func(key string, kn, vn *yaml.Node)) {
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := resolve(n.Content[i]), resolve(n.Content[i+1])
		if kn.Kind != yaml.ScalarNode {
			p.add(kn.Line, path, "a key must be a plain name")
			continue
		}
		if first, dup := seen[kn.Value]; dup {
			p.add(kn.Line, join(path, kn.Value), "appears twice (first at line %d)", first)
			continue
		}
		seen[kn.Value] = kn.Line
		fn(kn.Value, kn, vn)
	}
}

// eachItem calls fn for each item of the sequence n (path[i] in messages).
// An empty value (jobs: with nothing after it) is an empty list.
func eachItem(p *problems, n *yaml.Node, path string, fn func(i int, path string, item *yaml.Node)) {
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return
	}
	if n.Kind != yaml.SequenceNode {
		p.add(n.Line, path, "want a list")
		return
	}
	for i, item := range n.Content {
		fn(i, fmt.Sprintf("%s[%d]", path, i), resolve(item))
	}
}

// decodeStruct sets the fields of v from the mapping n. special handles
// the keys that are not fields (it returns false for an unknown key).
func decodeStruct(p *problems, n *yaml.Node, path string, v reflect.Value, fields []field, special func(key string, kn, vn *yaml.Node) bool) {
	if n.Kind != yaml.MappingNode {
		p.add(n.Line, path, "want a mapping of fields")
		return
	}
	byName := make(map[string]field, len(fields))
	for _, f := range fields {
		byName[f.name] = f
	}
	eachPair(p, n, path, func(key string, kn, vn *yaml.Node) {
		if special != nil && special(key, kn, vn) {
			return
		}
		f, ok := byName[key]
		if !ok {
			var extra []string
			if special != nil {
				extra = append(extra, fieldChildren)
			}
			hint := "known fields: " + fieldNames(fields, extra...)
			switch key {
			case fieldChildIDs:
				hint = "name child jobs by group/name under children"
			case fieldVersion:
				hint = "apply takes versions from the cluster"
			}
			p.add(kn.Line, join(path, key), "unknown field (%s)", hint)
			return
		}
		if err := decodeField(v, f, vn); err != nil {
			p.add(vn.Line, join(path, key), "%v", err)
		}
	})
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
