// Package cmdmain is how jetjob's long-running commands (jetjob-scheduler,
// jetjob-worker) live as processes: SIGINT and SIGTERM cancel the
// command's context, so that it stops gracefully, and its outcome becomes
// the exit status — 0 when it succeeded, 2 for a misused command line (a
// bad flag, variable or argument: UsageError), 1 for anything else — with
// the error on stderr. Both commands promise these statuses to the
// scripts and orchestrators that run them, so the promise lives here once.
package cmdmain

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// Exit statuses.
const (
	ExitOK    = 0
	ExitError = 1
	ExitUsage = 2
)

// UsageError marks an error as the user's misuse of the command line: a
// bad flag, environment variable, configuration key or argument.
type UsageError struct{ Err error }

func (e UsageError) Error() string { return e.Err.Error() }
func (e UsageError) Unwrap() error { return e.Err }

// Options are what the commands do differently.
type Options struct {
	// UsageHint, when set, is printed on a line of its own after a usage
	// error, e.g. where the settings are explained.
	UsageHint string
	// ForceOnSecondSignal lets a second SIGINT or SIGTERM end the process at
	// once while the first one's graceful stop is still under way (the
	// signal's default action), for a stop that hangs.
	ForceOnSecondSignal bool
}

// Main runs root with a context that SIGINT and SIGTERM cancel, then ends
// the process with the exit status of the outcome. It does not return.
func Main(root *cobra.Command, o Options) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	if o.ForceOnSecondSignal {
		go func() {
			<-ctx.Done()
			stop() // the next signal gets its default action: the end
		}()
	}
	err := root.ExecuteContext(ctx)
	stop()
	os.Exit(Report(os.Stderr, root.Name(), err, o))
}

// Report writes err, if any, to w as "<name>: <error>" (and the usage hint
// after a usage error) and returns the exit status it stands for.
func Report(w io.Writer, name string, err error, o Options) int {
	if err == nil {
		return ExitOK
	}
	fmt.Fprintf(w, "%s: %v\n", name, err)
	if !errors.As(err, new(UsageError)) {
		return ExitError
	}
	if o.UsageHint != "" {
		fmt.Fprintln(w, o.UsageHint)
	}
	return ExitUsage
}
