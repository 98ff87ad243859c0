package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"

	"go.yaml.in/yaml/v3"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
	"github.com/jetjob/jetjob/scheduler/internal/jobfile"
)

// Workflows in jobs files: "jetjob export" writes each workflow the caller
// can read as a YAML document of its own (kind: Workflow) after the jobs
// document, nodes naming their jobs by group/name; "jetjob apply -f"
// applies them after the jobs, creating or replacing each by group and
// name, and leaving alone one the file states as it is.

// exportWorkflows appends to out the workflows (of group, when set) as
// YAML documents, sorted by group and name.
func exportWorkflows(ctx context.Context, c *client.Client, group string, out []byte) ([]byte, error) {
	list, err := c.ListWorkflows(ctx, group, 0, 1000)
	if err != nil {
		return nil, fmt.Errorf("reading workflows: %w", err)
	}
	wfs := list.Workflows
	for i := 1; i < len(wfs); i++ {
		for j := i; j > 0 && wfs[j].Group+"/"+wfs[j].Name < wfs[j-1].Group+"/"+wfs[j-1].Name; j-- {
			wfs[j], wfs[j-1] = wfs[j-1], wfs[j]
		}
	}
	for i := range wfs {
		b, err := jobfile.EncodeWorkflow(&wfs[i])
		if err != nil {
			return nil, err
		}
		out = append(out, "---\n"...)
		out = append(out, b...)
	}
	return out, nil
}

// docSeparator splits a file's YAML documents.
var docSeparator = regexp.MustCompile(`(?m)^---[ \t]*$`)

// takeDocs takes the documents of the given kinds out of a file: each is
// handed to take with where it stands ("file (document N)"), and blanked
// in the copy returned, whose other documents keep their lines (their
// messages name the file's own lines).
func takeDocs(name string, data []byte, kinds []string, take func(where, kind string, doc []byte) error) ([]byte, error) {
	seps := docSeparator.FindAllIndex(data, -1)
	bounds := make([][2]int, 0, len(seps)+1)
	start := 0
	for _, l := range seps {
		bounds = append(bounds, [2]int{start, l[0]})
		start = l[1]
	}
	bounds = append(bounds, [2]int{start, len(data)})
	out := slices.Clone(data)
	for i, b := range bounds {
		doc := data[b[0]:b[1]]
		var head struct {
			Kind string `yaml:"kind"`
		}
		if yaml.Unmarshal(doc, &head) != nil || !slices.Contains(kinds, head.Kind) {
			continue
		}
		if err := take(fmt.Sprintf("%s (document %d)", name, i+1), head.Kind, doc); err != nil {
			return nil, err
		}
		for j := b[0]; j < b[1]; j++ {
			if out[j] != '\n' {
				out[j] = ' '
			}
		}
	}
	return out, nil
}

// splitWorkflows parts a file into its jobs document (nil when it holds
// only workflows) and its workflow documents, parsed.
func splitWorkflows(name string, data []byte) (jobs []byte, wfs []apiv1.WorkflowSpec, err error) {
	type part struct {
		start int
		b     []byte
	}
	var parts []part
	start := 0
	for _, l := range docSeparator.FindAllIndex(data, -1) {
		parts = append(parts, part{start, data[start:l[0]]})
		start = l[1]
	}
	parts = append(parts, part{start, data[start:]})
	for i, p := range parts {
		if len(bytes.TrimSpace(p.b)) == 0 {
			continue
		}
		var head struct {
			Kind string `yaml:"kind"`
		}
		if err := yaml.Unmarshal(p.b, &head); err != nil || head.Kind != "Workflow" {
			if jobs != nil {
				return nil, nil, fmt.Errorf("%s: document %d: a file holds one jobs document, and workflows (kind: Workflow)", name, i+1)
			}
			// Padded with the lines before it, so that the jobs file's
			// messages name the file's own lines.
			jobs = append(bytes.Repeat([]byte("\n"), bytes.Count(data[:p.start], []byte("\n"))), p.b...)
			continue
		}
		spec, err := jobfile.ParseWorkflow(fmt.Sprintf("%s (document %d)", name, i+1), p.b)
		if err != nil {
			return nil, nil, err
		}
		wfs = append(wfs, spec)
	}
	return jobs, wfs, nil
}

// workflowChange is what apply does with one workflow of a file.
type workflowChange struct {
	Action string `json:"action"` // create, update, unchanged
	Key    string `json:"workflow"`
	id     int64
	spec   apiv1.WorkflowSpec
}

// planWorkflows compares the file's workflows with the cluster's.
func planWorkflows(ctx context.Context, c *client.Client, wfs []apiv1.WorkflowSpec) ([]workflowChange, error) {
	var out []workflowChange
	cache := map[string][]apiv1.Workflow{}
	for _, spec := range wfs {
		cur, ok := cache[spec.Group]
		if !ok {
			list, err := c.ListWorkflows(ctx, spec.Group, 0, 1000)
			if err != nil {
				return nil, fmt.Errorf("reading workflows of %s: %w", spec.Group, err)
			}
			cur, cache[spec.Group] = list.Workflows, list.Workflows
		}
		ch := workflowChange{Action: "create", Key: spec.Group + "/" + spec.Name, spec: spec}
		for i := range cur {
			if cur[i].Name != spec.Name {
				continue
			}
			ch.Action, ch.id, ch.spec.Version = "update", cur[i].ID, cur[i].Version
			if sameWorkflow(&cur[i], spec) {
				ch.Action = "unchanged"
			}
		}
		out = append(out, ch)
	}
	return out, nil
}

// sameWorkflow reports whether the file's spec states wf as it is.
func sameWorkflow(wf *apiv1.Workflow, spec apiv1.WorkflowSpec) bool {
	if spec.MisfirePolicy == "" {
		spec.MisfirePolicy = wf.MisfirePolicy
	}
	have := jobfile.WorkflowDoc(wf)
	n := apiv1.Workflow{WorkflowSpec: spec, Enabled: spec.Enabled == nil || *spec.Enabled}
	if n.Timezone == "" {
		n.Timezone = "UTC"
	}
	if n.Overlap == "" {
		n.Overlap = "serial"
	}
	want := jobfile.WorkflowDoc(&n)
	a, err1 := json.Marshal(have)
	b, err2 := json.Marshal(want)
	return err1 == nil && err2 == nil && bytes.Equal(a, b)
}

// writeWorkflowPlan prints the workflow lines of a plan.
func writeWorkflowPlan(w io.Writer, changes []workflowChange) error {
	return writePlanLines(w, changes, func(ch workflowChange) (string, string, string) {
		return ch.Action, "workflow", ch.Key
	})
}

// executeWorkflows applies the workflow changes, after the jobs.
func executeWorkflows(ctx context.Context, c *client.Client, out io.Writer, changes []workflowChange) error {
	for _, ch := range changes {
		switch ch.Action {
		case "create":
			wf, err := c.CreateWorkflow(ctx, ch.spec)
			if err != nil {
				return fmt.Errorf("creating workflow %s: %w", ch.Key, err)
			}
			fmt.Fprintf(out, "created workflow %s (id %d)\n", cell(ch.Key), wf.ID)
		case "update":
			wf, err := c.UpdateWorkflow(ctx, ch.id, ch.spec)
			if err != nil {
				return fmt.Errorf("updating workflow %s: %w", ch.Key, err)
			}
			fmt.Fprintf(out, "updated workflow %s (version %d → %d)\n", cell(ch.Key), ch.spec.Version, wf.Version)
		}
	}
	return nil
}
