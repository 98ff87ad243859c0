// Command jetjob-worker is jetjob's drop-in worker: it runs the built-in
// handlers (shell commands, HTTP calls; see package worker/builtin) for one
// job group, with nothing to write but its configuration.
//
//	JETJOB_NATS_URL=nats://nats:4222 JETJOB_GROUP=ops JETJOB_HANDLERS=shell jetjob-worker
//
// Every flag can also be set through the JETJOB_* environment variable its
// help names, or in the YAML file --config names; a flag wins over its
// variable, the variable over the file (package internal/config). A bad setting exits with status
// 2 and a message naming it. NATS being unreachable, at start or later, is
// waited out. SIGTERM or SIGINT stops it gracefully (exit status 0): no new
// runs, running ones finish within --shutdown-grace or end LOST.
//
// Its shell jobs run as the same user, and a process can read its parent's
// initial environment and command line (/proc/$PPID/environ): so before
// anything else the worker moves its settings out of both — every JETJOB_*
// variable, the OTLP header variables, and the secret flags — by executing
// itself again without them (package secretenv), and commands get a
// minimal environment of their own (builtin.ShellConfig.PassEnv).
package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/jetjob/jetjob/internal/cmdmain"
	"github.com/jetjob/jetjob/internal/version"
	"github.com/jetjob/jetjob/worker/internal/secretenv"
)

// secrets is what the worker keeps out of its initial environment and
// command line (see the package doc): all its own settings, since several
// are secrets or may hold one (a NATS URL with a password), and the
// OpenTelemetry exporter's headers, which often carry a token.
var secrets = secretenv.Policy{
	Env: func(name string) bool {
		return strings.HasPrefix(name, "JETJOB_") || name == "OTEL_EXPORTER_OTLP_HEADERS" || name == "OTEL_EXPORTER_OTLP_TRACES_HEADERS"
	},
	// The OpenTelemetry SDK reads its variables from the Go environment.
	Restore: func(name string) bool { return strings.HasPrefix(name, "OTEL_") },
	Flags:   []string{"nats-url", "nats-password", "nats-token"},
}

func main() {
	moved, err := secretenv.Start(secrets)
	if err != nil {
		fmt.Fprintln(os.Stderr, "jetjob-worker:", err)
		os.Exit(cmdmain.ExitError)
	}
	root := rootCmd(moved.LookupEnv)
	root.SetArgs(append(os.Args[1:], moved.Args...))
	cmdmain.Main(root, cmdmain.Options{
		UsageHint:           "Run 'jetjob-worker --help' for the settings.",
		ForceOnSecondSignal: true,
	})
}

// usageError is a bad flag, environment variable or argument: exit status 2.
type usageError = cmdmain.UsageError

// rootCmd is the command; lookup reads the environment (secretenv's, which
// holds the moved variables).
func rootCmd(lookup func(string) (string, bool)) *cobra.Command {
	var o options
	cmd := &cobra.Command{
		Use:   "jetjob-worker",
		Short: "jetjob's drop-in worker: runs built-in shell, HTTP and script handlers for one job group",
		Long: `jetjob-worker runs jetjob's built-in handlers for one job group: "shell" runs
a command line (sh -c <params>) or {"command": ..., "args": [...]}, "http"
makes the request its params describe to an allowed host, "script" runs the
stored script a script job's trigger carries. Enable them with
--handlers; none is enabled by default.

Every flag can also be set through the environment variable in its help, or
as a key of the YAML file --config names (keys are the flag names); a flag
wins over its variable, the variable over the file.`,
		Version: version.Get().String(),
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError{Err: fmt.Errorf("unexpected argument %q: jetjob-worker takes flags only", args[0])}
			}
			return nil
		},
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.set.Load(lookup); err != nil {
				return usageError{Err: err}
			}
			if err := o.validate(); err != nil {
				return usageError{Err: err}
			}
			return run(cmd.Context(), &o)
		},
	}
	cmd.SetVersionTemplate("jetjob-worker {{.Version}}\n")
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{Err: err} })
	o.register(cmd.Flags())
	return cmd
}
