package jobfile

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"sort"

	"go.yaml.in/yaml/v3"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// Export builds the file of the given groups and jobs. names resolves a
// child job id to its key (the caller looks up children outside the
// exported jobs); a child it cannot name — one the exporter may not read,
// or one deleted — is only counted (Job.Hidden), since a file holds no ids
// and must not name what the exporter may not see. The file is sorted
// (groups by name, jobs by group then name, children by key) and leaves
// defaults out, so exporting the same cluster twice gives the same bytes.
func Export(groups []apiv1.Group, jobs []apiv1.Job, names map[int64]Key) (*File, error) {
	f := &File{}
	for _, g := range groups {
		f.Groups = append(f.Groups, apiv1.Group{Name: g.Name, Title: g.Title, CommandHandlers: g.CommandHandlers,
			MaxRunning: g.MaxRunning, RateLimit: g.RateLimit})
	}
	sort.Slice(f.Groups, func(a, b int) bool { return f.Groups[a].Name < f.Groups[b].Name })
	for _, j := range jobs {
		spec := j.JobSpec
		enabled := j.Enabled
		spec.Enabled, spec.Version, spec.ChildJobIDs = &enabled, 0, nil
		fj := Job{Spec: Minimize(spec)}
		for _, id := range j.ChildJobIDs {
			k, ok := names[id]
			if !ok {
				fj.Hidden++
				continue
			}
			fj.Children = append(fj.Children, k)
		}
		sortKeys(fj.Children)
		f.Jobs = append(f.Jobs, fj)
	}
	sort.Slice(f.Jobs, func(a, b int) bool { return f.Jobs[a].Key().less(f.Jobs[b].Key()) })
	return f, nil
}

func sortKeys(ks []Key) {
	slices.SortFunc(ks, func(a, b Key) int {
		switch {
		case a.less(b):
			return -1
		case b.less(a):
			return 1
		}
		return 0
	})
}

// Encode writes the file as YAML: the header, the groups, then the jobs,
// each with its fields in apiv1.JobSpec's order and children last.
func (f *File) Encode() ([]byte, error) {
	doc := &yaml.Node{Kind: yaml.MappingNode}
	doc.Content = append(doc.Content,
		yamlNode("apiVersion"), yamlNode(APIVersion),
		yamlNode("kind"), yamlNode(Kind))
	if len(f.Groups) > 0 {
		seq := &yaml.Node{Kind: yaml.SequenceNode}
		for i := range f.Groups {
			m := &yaml.Node{Kind: yaml.MappingNode}
			if err := encodeFields(m, reflect.ValueOf(f.Groups[i]), groupFields); err != nil {
				return nil, fmt.Errorf("group %s: %w", f.Groups[i].Name, err)
			}
			seq.Content = append(seq.Content, m)
		}
		doc.Content = append(doc.Content, yamlNode("groups"), seq)
	}
	jobs := &yaml.Node{Kind: yaml.SequenceNode}
	for i := range f.Jobs {
		j := &f.Jobs[i]
		m := &yaml.Node{Kind: yaml.MappingNode}
		if err := encodeFields(m, reflect.ValueOf(j.Spec), jobFields); err != nil {
			return nil, fmt.Errorf("job %s: %w", j.Key(), err)
		}
		if j.Hidden > 0 {
			noteHidden(m, j.Hidden)
		}
		if len(j.Children) > 0 {
			seq := &yaml.Node{Kind: yaml.SequenceNode}
			for _, c := range j.Children {
				seq.Content = append(seq.Content, yamlNode(c.String()))
			}
			m.Content = append(m.Content, yamlNode(fieldChildren), seq)
		}
		jobs.Content = append(jobs.Content, m)
	}
	if len(f.Jobs) == 0 {
		jobs.Style = yaml.FlowStyle // "jobs: []"
	}
	doc.Content = append(doc.Content, yamlNode("jobs"), jobs)

	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("encoding jobs file: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encoding jobs file: %w", err)
	}
	return b.Bytes(), nil
}

// noteHidden puts on the job's name the comment that counts the children
// the file does not list (Job.Hidden).
func noteHidden(m *yaml.Node, n int) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == fieldName {
			what, it := "child job", "it"
			if n > 1 {
				what, it = "child jobs", "them"
			}
			m.Content[i+1].LineComment = fmt.Sprintf("# %d more %s not listed (not readable by the exporter, or deleted): apply keeps %s", n, what, it)
			return
		}
	}
}
