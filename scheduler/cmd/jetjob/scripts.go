package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
)

// scriptsCmd is `jetjob scripts`: the stored scripts of script jobs
// (docs/jobs.md, "Script jobs").
func (a *app) scriptsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "scripts",
		Short: "Edit the stored scripts of script jobs, with versions, diffs and rollback",
	}
	return parent(cmd, a.scriptsShowCmd(), a.scriptsEditCmd(), a.scriptsVersionsCmd(), a.scriptsDiffCmd(), a.scriptsRollbackCmd())
}

// scriptSuffix is the file suffix an editor sees for a language, for its
// syntax highlighting.
var scriptSuffix = map[string]string{"bash": ".sh", "python3": ".py", "python2": ".py", "nodejs": ".js", "php": ".php", "powershell": ".ps1"}

func scriptDetail(s *apiv1.Script) *kv {
	var k kv
	k.add("Job", strconv.FormatInt(s.JobID, 10))
	k.add("Version", strconv.Itoa(s.Version))
	k.add("Language", s.Language)
	k.add("Remark", s.Remark)
	k.add("Saved", fmtTime(s.CreatedAt)+" by "+s.CreatedBy)
	return &k
}

// scriptsShowCmd is `scripts show JOB [--version V]`: the source itself,
// so that it can be piped.
func (a *app) scriptsShowCmd() *cobra.Command {
	var v int
	cmd := &cobra.Command{
		Use:   "show JOB [--version V]",
		Short: "Print a script job's current script (or version V)",
		Args:  needArgs("JOB"),
		RunE: onID("job", func(cmd *cobra.Command, id int64) error {
			return show(a, cmd, func(c *client.Client, ctx context.Context) (*apiv1.Script, error) {
				if v > 0 {
					return c.ScriptVersion(ctx, id, v)
				}
				return c.GetScript(ctx, id)
			}, func(w io.Writer, s *apiv1.Script) error {
				_, err := io.WriteString(w, s.Source)
				return err
			})
		}),
	}
	cmd.Flags().IntVar(&v, "version", 0, "the version to print (default: the current one)")
	return cmd
}

// scriptsEditCmd is `scripts edit JOB [--file F] [--remark R]`.
func (a *app) scriptsEditCmd() *cobra.Command {
	var file, remark, language string
	cmd := &cobra.Command{
		Use:   "edit JOB [--file F] [--remark R] [--language L]",
		Short: "Save a new version of a script job's script: from $EDITOR, or from a file",
		Long: `Open the current script in $VISUAL or $EDITOR (else vi) and save what you write as a
new version with --remark; leaving it unchanged saves nothing. --file F (- for
stdin) saves F's contents without an editor. Saving needs the scripts
permission on the job's group.`,
		Args: needArgs("JOB"),
		RunE: onID("job", func(cmd *cobra.Command, id int64) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			var source string
			if file != "" {
				if source, err = a.readSource(file); err != nil {
					return err
				}
			} else {
				cur, err := c.GetScript(ctx, id)
				if err != nil {
					return err
				}
				if source, err = editInEditor(cmd, cur); err != nil {
					return err
				}
				if source == cur.Source && (language == "" || language == cur.Language) {
					fmt.Fprintf(a.stderr, "No change: version %d stays current, nothing saved.\n", cur.Version)
					return nil
				}
			}
			s, err := c.SaveScript(ctx, id, apiv1.ScriptSave{Source: source, Language: language, Remark: remark})
			if err != nil {
				return err
			}
			return a.emit(s, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "Saved version %d of job %d's script.\n", s.Version, s.JobID)
				return err
			})
		}),
	}
	cmd.Flags().StringVar(&file, "file", "", "save this file's contents (- for stdin) instead of opening an editor")
	cmd.Flags().StringVar(&remark, "remark", "", "what the version changes (shown in the version list)")
	cmd.Flags().StringVar(&language, "language", "", "change the language: bash, python3, python2, nodejs, php or powershell")
	return cmd
}

// readSource reads a script from file, "-" for stdin.
func (a *app) readSource(file string) (string, error) {
	if file == "-" {
		b, err := io.ReadAll(a.stdin)
		return string(b), err
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", usagef("--file: %v", err)
	}
	return string(b), nil
}

// editInEditor writes cur's source to a temporary file, runs the user's
// editor on it (through sh, so that EDITOR may carry arguments, "code
// --wait") and returns what the file holds after.
func editInEditor(cmd *cobra.Command, cur *apiv1.Script) (string, error) {
	editor := os.Getenv("VISUAL")
	if editor == "" {
		editor = os.Getenv("EDITOR")
	}
	if editor == "" {
		editor = "vi"
	}
	dir, err := os.MkdirTemp("", "jetjob-script-*")
	if err != nil {
		return "", fmt.Errorf("edit the script: %w", err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	path := filepath.Join(dir, fmt.Sprintf("job-%d-v%d%s", cur.JobID, cur.Version, scriptSuffix[cur.Language]))
	if err := os.WriteFile(path, []byte(cur.Source), 0o600); err != nil {
		return "", fmt.Errorf("edit the script: %w", err)
	}
	ed := exec.CommandContext(cmd.Context(), "/bin/sh", "-c", editor+` "$1"`, "sh", path)
	ed.Stdin, ed.Stdout, ed.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := ed.Run(); err != nil {
		return "", fmt.Errorf("editor %q: %w (nothing saved)", editor, err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read the edited script: %w", err)
	}
	return string(b), nil
}

// scriptsVersionsCmd is `scripts versions JOB`.
func (a *app) scriptsVersionsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "versions JOB",
		Short: "List the kept versions of a job's script, newest first",
		Args:  needArgs("JOB"),
		RunE: showID(a, "job", (*client.Client).ScriptVersions, func(w io.Writer, l *apiv1.ScriptVersionList) error {
			t := newTable(w, "VERSION", "SAVED", "BY", "LANGUAGE", "REMARK")
			for _, v := range l.Versions {
				n := strconv.Itoa(v.Version)
				if v.Current {
					n += " (current)"
				}
				t.row(n, fmtTime(v.CreatedAt), v.CreatedBy, v.Language, cell(v.Remark))
			}
			return t.flush()
		}),
	}
}

// scriptsDiffCmd is `scripts diff JOB V1 V2`.
func (a *app) scriptsDiffCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "diff JOB V1 V2",
		Short: "Show the unified diff of a job's script from version V1 to V2",
		Args:  needArgs("JOB", "V1", "V2"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseID("job", args[0])
			if err != nil {
				return err
			}
			from, err := versionArg(args[1])
			if err != nil {
				return err
			}
			to, err := versionArg(args[2])
			if err != nil {
				return err
			}
			return show(a, cmd, func(c *client.Client, ctx context.Context) (*apiv1.ScriptDiff, error) {
				return c.DiffScript(ctx, id, from, to)
			}, func(w io.Writer, d *apiv1.ScriptDiff) error {
				if d.Diff == "" {
					_, err := fmt.Fprintf(w, "Versions %d and %d are the same.\n", d.From, d.To)
					return err
				}
				_, err := io.WriteString(w, d.Diff)
				return err
			})
		},
	}
}

// scriptsRollbackCmd is `scripts rollback JOB V`.
func (a *app) scriptsRollbackCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "rollback JOB V",
		Short: `Save version V's source as a new version ("rollback to vV")`,
		Args:  needArgs("JOB", "V"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseID("job", args[0])
			if err != nil {
				return err
			}
			v, err := versionArg(args[1])
			if err != nil {
				return err
			}
			return show(a, cmd, func(c *client.Client, ctx context.Context) (*apiv1.Script, error) {
				return c.RollbackScript(ctx, id, v)
			}, detail(scriptDetail))
		},
	}
}

// versionArg reads a script version argument.
func versionArg(s string) (int, error) {
	v, err := strconv.Atoi(s)
	if err != nil || v <= 0 {
		return 0, usagef("invalid version %q: want a positive integer", s)
	}
	return v, nil
}
