package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
	"github.com/jetjob/jetjob/scheduler/internal/jobfile"
	"github.com/jetjob/jetjob/scheduler/internal/labels"
)

func (a *app) workflowsCmd() *cobra.Command {
	return parent(&cobra.Command{
		Use:     "workflows",
		Aliases: []string{"workflow", "wf"},
		Short:   "Create, apply, list, inspect, trigger, pause and backfill workflows; list, retry, re-run and cancel their runs",
		Long: `A workflow is a graph of jobs run as one thing (docs/workflows.md). Its file
is YAML (or JSON) with the fields of the API's workflow, nodes naming their
jobs by group/name:

  apiVersion: jetjob/v1
  kind: Workflow
  group: billing
  name: nightly
  schedule_type: cron
  schedule_expr: "0 0 2 * * *"
  overlap: serial
  nodes:
    - {name: extract, job: billing/extract}
    - {name: load, job: billing/load, params: '{"rows": {{ .nodes.extract.output.rows }}}'}
  edges:
    - {from: extract, to: load}`,
	},
		a.workflowsListCmd(),
		a.workflowsGetCmd(),
		a.workflowsFileCmd("create", "Create a workflow from a file", false),
		a.workflowsFileCmd("apply", "Create a workflow from a file, or update the one of its group and name", true),
		a.workflowsDeleteCmd(),
		a.workflowsTriggerCmd(),
		a.workflowsRunsCmd(),
		a.workflowRunCmd("run RUN_ID", "Show a workflow run with its nodes, their runs and outputs", (*client.Client).GetWorkflowRun),
		a.workflowRunCmd("retry RUN_ID", "Re-run an ended workflow run from its failed nodes", (*client.Client).RetryWorkflowRun),
		a.workflowsRerunCmd(),
		a.workflowsSwitchCmd(false),
		a.workflowsSwitchCmd(true),
		a.workflowsBulkCmd(),
		a.backfillCmd("workflow", (*client.Client).BackfillWorkflow),
		a.workflowRunCmd("cancel RUN_ID", "Cancel a workflow run; its running nodes are killed",
			func(c *client.Client, ctx context.Context, id int64) (*apiv1.WorkflowRun, error) {
				return c.CancelWorkflowRun(ctx, id, "")
			}),
		a.workflowsNodeCmd("mark-succeeded", "Settle a node of a workflow run as succeeded (--output: its output)"),
		a.workflowsNodeCmd("skip", "Skip a node of a workflow run; what follows runs as if it succeeded"),
	)
}

func (a *app) workflowsListCmd() *cobra.Command {
	var group, selector string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List workflows",
		Args:  needArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return show(a, cmd, func(c *client.Client, ctx context.Context) (*apiv1.WorkflowList, error) {
				return c.ListWorkflowsSelected(ctx, group, selector, 0, 0)
			}, func(w io.Writer, list *apiv1.WorkflowList) error {
				t := newTable(w, "ID", "GROUP", "NAME", "NODES", "SCHEDULE", "OVERLAP", "ENABLED", "NEXT FIRE")
				for _, wf := range list.Workflows {
					t.row(strconv.FormatInt(wf.ID, 10), wf.Group, wf.Name, strconv.Itoa(len(wf.Nodes)),
						schedule(&apiv1.JobSpec{ScheduleType: wf.ScheduleType, ScheduleExpr: wf.ScheduleExpr, Timezone: wf.Timezone}),
						wf.Overlap, yesNo(wf.Enabled), fmtTimePtr(wf.NextFireAt))
				}
				return t.flush()
			})
		},
	}
	cmd.Flags().StringVar(&group, "group", "", "only the workflows of this group")
	cmd.Flags().StringVarP(&selector, "selector", "l", "", "only the workflows with these labels, e.g. env=prod,team=billing")
	return cmd
}

func workflowDetail(wf *apiv1.Workflow) *kv {
	var k kv
	k.add("ID", strconv.FormatInt(wf.ID, 10))
	k.add("Group", wf.Group)
	k.add("Name", wf.Name)
	k.add("Schedule", schedule(&apiv1.JobSpec{ScheduleType: wf.ScheduleType, ScheduleExpr: wf.ScheduleExpr, Timezone: wf.Timezone}))
	k.add("Overlap", wf.Overlap)
	if len(wf.ExcludeCalendars) > 0 {
		k.add("Excluded days", strings.Join(wf.ExcludeCalendars, ", ")+" (calendars)")
		k.add("Included days", strings.Join(wf.IncludeCalendars, ", "))
	}
	if len(wf.Labels) > 0 {
		k.add("Labels", labels.Format(wf.Labels))
	}
	if wf.Owner != "" {
		k.add("Owner", wf.Owner)
	}
	k.add("Enabled", yesNo(wf.Enabled))
	if wf.PausedAt != nil {
		k.add("Paused", fmt.Sprintf("%s by %s: %s", fmtTimePtr(wf.PausedAt), wf.PausedBy, wf.PausedNote))
	}
	k.add("Next fire", fmtTimePtr(wf.NextFireAt))
	for _, n := range wf.Nodes {
		job := n.Job
		if n.Inline != nil {
			job = "inline job, handler " + n.Inline.Handler
			if n.Inline.Group != "" {
				job += " in group " + n.Inline.Group
			}
		}
		k.add("Node "+n.Name, job)
	}
	for _, e := range wf.Edges {
		on := e.On
		if on == "" {
			on = "success"
		}
		k.add("Edge", fmt.Sprintf("%s → %s (%s)", e.From, e.To, on))
	}
	k.add("Version", strconv.FormatInt(wf.Version, 10))
	return &k
}

func (a *app) workflowsGetCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "get ID",
		Short: "Show a workflow",
		Args:  needArgs("ID"),
		RunE:  showID(a, "workflow", (*client.Client).GetWorkflow, detail(workflowDetail)),
	}
}

// workflowsFileCmd creates (or, for apply, creates or updates by group and
// name) the workflow a file describes.
func (a *app) workflowsFileCmd(verb, short string, upsert bool) *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   verb + " -f FILE",
		Short: short,
		Args:  needArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if strings.TrimSpace(file) == "" {
				return usagef("missing required flag -f (the workflow file, - for stdin)")
			}
			name, data, err := a.readJobsFile(file)
			if err != nil {
				return err
			}
			spec, err := jobfile.ParseWorkflow(name, data)
			if err != nil {
				return err
			}
			return show(a, cmd, func(c *client.Client, ctx context.Context) (*apiv1.Workflow, error) {
				if !upsert {
					return c.CreateWorkflow(ctx, spec)
				}
				return applyWorkflow(ctx, c, spec)
			}, detail(workflowDetail))
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "the workflow file, YAML or JSON (- for stdin) (required)")
	return cmd
}

// applyWorkflow creates spec's workflow, or replaces the one of its group
// and name (at the version read here: a change made meanwhile is a 409).
func applyWorkflow(ctx context.Context, c *client.Client, spec apiv1.WorkflowSpec) (*apiv1.Workflow, error) {
	list, err := c.ListWorkflows(ctx, spec.Group, 0, 1000)
	if err != nil {
		return nil, err
	}
	for _, wf := range list.Workflows {
		if wf.Name == spec.Name {
			spec.Version = wf.Version
			return c.UpdateWorkflow(ctx, wf.ID, spec)
		}
	}
	return c.CreateWorkflow(ctx, spec)
}

func (a *app) workflowsDeleteCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "delete ID",
		Short: "Delete a workflow (its runs stay)",
		Args:  needArgs("ID"),
		RunE:  doneID(a, "workflow", (*client.Client).DeleteWorkflow, "deleted"),
	}
}

func (a *app) workflowsTriggerCmd() *cobra.Command {
	var tf triggerFlags
	cmd := &cobra.Command{
		Use:   "trigger ID",
		Short: "Run a workflow now or once later (--params: its run's params, a JSON object)",
		Args:  needArgs("ID"),
		RunE: onID("workflow", func(cmd *cobra.Command, id int64) error {
			req, err := tf.request(cmd)
			if err != nil {
				return err
			}
			return show(a, cmd, func(c *client.Client, ctx context.Context) (*apiv1.Run, error) {
				return c.TriggerWorkflowWith(ctx, id, req)
			}, func(w io.Writer, r *apiv1.Run) error {
				if r.Status == "SCHEDULED" && time.Until(r.ScheduledAt) > time.Second {
					_, err := fmt.Fprintf(w, "workflow run %d starts at %s: jetjob workflows run %d\n", r.ID, fmtTime(r.ScheduledAt), r.ID)
					return err
				}
				_, err := fmt.Fprintf(w, "workflow run %d started: jetjob workflows run %d\n", r.ID, r.ID)
				return err
			})
		}),
	}
	tf.add(cmd, `params of this run, a JSON object ({"day": "2026-11-27"})`)
	return cmd
}

func (a *app) workflowsRunsCmd() *cobra.Command {
	var limit int
	cmd := &cobra.Command{
		Use:   "runs ID",
		Short: "List a workflow's runs, newest first",
		Args:  needArgs("ID"),
		RunE: onID("workflow", func(cmd *cobra.Command, id int64) error {
			return show(a, cmd, func(c *client.Client, ctx context.Context) (*apiv1.WorkflowRunList, error) {
				return c.ListWorkflowRuns(ctx, id, 0, limit)
			}, func(w io.Writer, list *apiv1.WorkflowRunList) error {
				t := newTable(w, "RUN", "STATUS", "SCHEDULED", "STARTED", "FINISHED", "NODE RUNS", "MESSAGE")
				for _, r := range list.Runs {
					t.row(strconv.FormatInt(r.ID, 10), r.Status, fmtTime(r.ScheduledAt), fmtTimePtr(r.StartedAt),
						fmtTimePtr(r.FinishedAt), strconv.Itoa(r.NodeRuns), truncate(r.Message, 60))
				}
				return t.flush()
			})
		}),
	}
	cmd.Flags().IntVar(&limit, "limit", 0, "page size (server default when 0)")
	return cmd
}

// workflowRunCmd is a command that takes a workflow run id, calls the API
// and shows the run with its nodes.
func (a *app) workflowRunCmd(use, short string, call func(*client.Client, context.Context, int64) (*apiv1.WorkflowRun, error)) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  needArgs("RUN_ID"),
		RunE:  showID(a, "workflow run", call, writeWorkflowRun),
	}
}

func (a *app) workflowsNodeCmd(op, short string) *cobra.Command {
	var nodeName, output string
	cmd := &cobra.Command{
		Use:   op + " RUN_ID --node NODE",
		Short: short,
		Args:  needArgs("RUN_ID"),
		RunE: onID("workflow run", func(cmd *cobra.Command, id int64) error {
			if nodeName == "" {
				return usagef("missing required flag --node")
			}
			var out json.RawMessage
			if output != "" {
				if !json.Valid([]byte(output)) {
					return usagef("--output: not JSON")
				}
				out = json.RawMessage(output)
			}
			return show(a, cmd, func(c *client.Client, ctx context.Context) (*apiv1.WorkflowRun, error) {
				if op == "skip" {
					return c.SkipNode(ctx, id, nodeName)
				}
				return c.MarkNodeSucceeded(ctx, id, nodeName, out)
			}, writeWorkflowRun)
		}),
	}
	cmd.Flags().StringVar(&nodeName, "node", "", "the node (required)")
	if op == "mark-succeeded" {
		cmd.Flags().StringVar(&output, "output", "", "the node's output, JSON, for the nodes after it")
	}
	return cmd
}

func writeWorkflowRun(w io.Writer, r *apiv1.WorkflowRun) error {
	fmt.Fprintf(w, "Workflow run %d of workflow %d: %s", r.ID, r.WorkflowID, r.Status)
	if r.Message != "" {
		fmt.Fprintf(w, " (%s)", cell(r.Message))
	}
	fmt.Fprintln(w)
	t := newTable(w, "NODE", "STATUS", "ATTEMPT", "RUNS", "LAST RUN", "OUTPUT", "REASON")
	for _, n := range r.Nodes {
		last, out := "-", string(n.Output)
		if len(n.Runs) > 0 {
			lr := n.Runs[len(n.Runs)-1]
			last = fmt.Sprintf("%d %s", lr.RunID, lr.Status)
			if out == "" {
				out = string(lr.Output)
			}
		}
		t.row(n.Name, n.Status, strconv.Itoa(n.Attempt), strconv.Itoa(len(n.Runs)), last, truncate(out, 40), truncate(n.Reason, 60))
	}
	return t.flush()
}
