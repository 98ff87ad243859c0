package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/jetjob/jetjob/internal/version"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// httpTimeout bounds one API call of the CLI.
const httpTimeout = 60 * time.Second

// app holds what every command shares: the streams and the global flags.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	httpClient     *http.Client

	apiFlag   string
	tokenFlag string
	output    string

	// used is the endpoint the last client was made for, to say which
	// credential the API refused.
	used endpoint
}

// run executes the CLI with args and returns the process exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{
		stdin:      stdin,
		stdout:     stdout,
		stderr:     stderr,
		httpClient: &http.Client{Timeout: httpTimeout},
	}
	root := a.rootCmd()
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	err = a.explain(err)
	fmt.Fprintf(stderr, "Error: %v\n", err)
	var ue *usageError
	if errors.As(err, &ue) {
		if cmd == nil {
			cmd = root
		}
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
		return exitUsage
	}
	return exitError
}

func (a *app) rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "jetjob",
		Short: "Manage the jobs and runs of a jetjob cluster",
		Long: `jetjob talks to a jetjob scheduler's HTTP API (/api/v1).

The API address and token come from, first that is set: the --api and --token
flags, the JETJOB_API and JETJOB_API_TOKEN environment variables, then the CLI
configuration file ($JETJOB_CONFIG, else <user config dir>/jetjob/cli.json),
which "jetjob login" and "jetjob-scheduler dev" write. The file's token is only
ever sent to the file's address.`,
		SilenceErrors: true,
		SilenceUsage:  true,
		Version:       version.Get().String(),
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			switch a.output {
			case outputTable, outputJSON:
				return nil
			}
			return usagef("invalid --output %q: want %s or %s", a.output, outputTable, outputJSON)
		},
	}
	root.SetVersionTemplate("jetjob {{.Version}}\n")
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err: err} })

	pf := root.PersistentFlags()
	pf.StringVar(&a.apiFlag, "api", "", "API address, e.g. http://127.0.0.1:8080 (env "+envAPI+")")
	pf.StringVar(&a.tokenFlag, "token", "", "API token (env "+envToken+")")
	pf.StringVarP(&a.output, "output", "o", outputTable, "output format: table or json")

	parent(root)
	root.AddCommand(a.groupsCmd(), a.jobsCmd(), a.runsCmd(), a.statsCmd(), a.workersCmd(), a.auditCmd(),
		a.usersCmd(), a.keysCmd(), a.secretsCmd(), a.loginCmd(), a.logoutCmd(), a.whoamiCmd(),
		a.exportCmd(), a.applyCmd(), a.workflowsCmd(), a.channelsCmd(), a.alertsCmd(), a.scriptsCmd(), a.calendarsCmd())
	root.AddCommand(a.importCmd())
	return root
}

// usageError marks an error as the user's misuse of the command line
// (exit code 2).
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return &usageError{err: fmt.Errorf(format, args...)}
}

// parent makes cmd a command that only groups subcommands, subs and any
// added later: without arguments it prints its help, and an unknown
// subcommand is a usage error (cobra would otherwise print the help and
// succeed).
func parent(cmd *cobra.Command, subs ...*cobra.Command) *cobra.Command {
	cmd.AddCommand(subs...)
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2
	}
	cmd.Args = func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], c.CommandPath())
		if s := c.SuggestionsFor(args[0]); len(s) > 0 {
			msg += "; did you mean " + strings.Join(s, " or ") + "?"
		}
		return &usageError{err: errors.New(msg)}
	}
	cmd.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
	return cmd
}

// needArgs requires exactly the named positional arguments.
func needArgs(names ...string) cobra.PositionalArgs {
	return func(_ *cobra.Command, got []string) error {
		switch {
		case len(got) < len(names):
			return usagef("missing argument %s", strings.Join(names[len(got):], " "))
		case len(got) > len(names):
			return usagef("unexpected argument %q", got[len(names)])
		}
		return nil
	}
}

// parseID reads a positive id argument or flag.
func parseID(what, s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return 0, usagef("invalid %s id %q: want a positive integer", what, s)
	}
	return id, nil
}
