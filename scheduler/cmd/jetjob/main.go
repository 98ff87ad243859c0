// Command jetjob is the command-line client of a jetjob cluster's HTTP API.
//
// The API address and token come from, first that is set: the --api and
// --token flags, the JETJOB_API and JETJOB_API_TOKEN environment variables,
// then the CLI configuration file ($JETJOB_CONFIG, else
// <user config dir>/jetjob/cli.json), which `jetjob login` and
// `jetjob-scheduler dev` write.
//
// Exit status: 0 on success, 1 when a command fails, 2 on a usage error.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	_ "time/tzdata" // job time zones must resolve even without a system zoneinfo
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
