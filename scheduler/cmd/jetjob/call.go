package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/spf13/cobra"

	"github.com/jetjob/jetjob/scheduler/client"
)

// Most commands end the same way: build the API client, make one call,
// print the answer as JSON (-o json) or for people. The helpers below take
// those steps once, so that a command says only what is its own — its
// arguments, the call and the human rendering — and every command treats a
// missing address, a refused call and the two outputs alike.

// show builds the client, makes one call and prints its answer: the
// document with -o json, else as human writes it.
func show[T any](a *app, cmd *cobra.Command, call func(*client.Client, context.Context) (T, error), human func(io.Writer, T) error) error {
	c, err := a.client()
	if err != nil {
		return err
	}
	v, err := call(c, cmd.Context())
	if err != nil {
		return err
	}
	return a.emit(v, func(w io.Writer) error { return human(w, v) })
}

// onID is the RunE of a command whose one argument is the id of a what
// ("job", "run", "key"): it reads the id, then runs run with it.
func onID(what string, run func(cmd *cobra.Command, id int64) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		id, err := parseID(what, args[0])
		if err != nil {
			return err
		}
		return run(cmd, id)
	}
}

// showID is the RunE of a command whose one argument is the id of a what
// ("job", "run", "backfill"): it shows what call answers for that id.
// call is typically a method expression such as (*client.Client).GetRun.
func showID[T any](a *app, what string, call func(*client.Client, context.Context, int64) (T, error), human func(io.Writer, T) error) func(*cobra.Command, []string) error {
	return onID(what, func(cmd *cobra.Command, id int64) error {
		return show(a, cmd, func(c *client.Client, ctx context.Context) (T, error) { return call(c, ctx, id) }, human)
	})
}

// doneID is the RunE of a command whose one argument is the id of a what
// ("job", "key") and whose call the API answers without a document (a
// delete, a revoke): it makes the call for that id and says "what ID
// verb" (done). call is typically a method expression such as
// (*client.Client).DeleteJob.
func doneID(a *app, what string, call func(*client.Client, context.Context, int64) error, verb string) func(*cobra.Command, []string) error {
	return onID(what, func(cmd *cobra.Command, id int64) error {
		return a.done(cmd, func(c *client.Client, ctx context.Context) error { return call(c, ctx, id) }, "%s %d %s", what, id, verb)
	})
}

// detail renders a document as its key-value listing, for show's human.
func detail[T any](listing func(T) *kv) func(io.Writer, T) error {
	return func(w io.Writer, v T) error { return listing(v).write(w) }
}

// done makes a call the API answers without a document (204: a delete, a
// revoke) and then says what happened, in the table output only: with -o
// json it prints nothing, as the API answered nothing.
func (a *app) done(cmd *cobra.Command, call func(*client.Client, context.Context) error, format string, args ...any) error {
	c, err := a.client()
	if err != nil {
		return err
	}
	if err := call(c, cmd.Context()); err != nil {
		return err
	}
	if a.output == outputJSON {
		return nil
	}
	_, err = fmt.Fprintf(a.stdout, format+"\n", args...)
	return err
}

// versionConflict reports whether err is the API refusing a job update
// because the job's version moved on (409 with the current version), and
// that version: the caller then says who should read the job again.
func versionConflict(err error) (current int64, ok bool) {
	var ae *client.APIError
	if errors.As(err, &ae) && ae.StatusCode == http.StatusConflict && ae.CurrentVersion != 0 {
		return ae.CurrentVersion, true
	}
	return 0, false
}

// optID reads an optional id flag (--job ID) into dst; empty leaves dst
// alone.
func optID(what, s string, dst *int64) error {
	if s == "" {
		return nil
	}
	id, err := parseID(what, s)
	if err != nil {
		return err
	}
	*dst = id
	return nil
}
