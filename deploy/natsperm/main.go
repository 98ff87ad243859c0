// Command natsperm writes the authorization block of a nats-server
// configuration with one user per jetjob worker group, each allowed only
// what its group's workers use (stream.WorkerPermissions), and one user for
// the schedulers (stream.SchedulerPermissions):
//
//	go run ./deploy/natsperm -group shell=worker-1,worker-2 -group ops=ops-1 > permissions.conf
//
// Include the file from the server's configuration (`include
// ./permissions.conf`) and give each group's workers their user
// (JETJOB_NATS_USER=jetjob-worker-<group>, JETJOB_NATS_PASSWORD). Passwords
// are not in the file: each user's password is a variable the server reads
// from its environment when it loads the file — JETJOB_NATS_PASSWORD_SCHEDULER
// and JETJOB_NATS_PASSWORD_<GROUP> (the group in upper case, - as _) — or
// replace the reference with a bcrypt hash (`nats server passwd`).
//
// deploy/nats/permissions.conf is this command's output for the docker
// compose cluster's group; a test checks that it is current.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/jetjob/jetjob/internal/stream"
)

// Group is one worker group and the ids its workers run with.
type Group struct {
	Name string
	IDs  []string
}

// groupFlags collects repeated -group name=id,id flags.
type groupFlags []Group

func (g *groupFlags) String() string { return "" }

func (g *groupFlags) Set(v string) error {
	name, ids, ok := strings.Cut(v, "=")
	if !ok || ids == "" {
		return errors.New("want name=id[,id...]: a least-privilege credential names its workers' ids")
	}
	*g = append(*g, Group{Name: name, IDs: strings.Split(ids, ",")})
	return nil
}

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "natsperm:", err)
		os.Exit(2)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("natsperm", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var groups groupFlags
	fs.Var(&groups, "group", "a worker group and its workers' ids, name=id[,id...]; repeat for each group")
	scheduler := fs.String("scheduler-user", DefaultSchedulerUser, "user name of the schedulers")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	conf, err := Render(groups, *scheduler, args)
	if err != nil {
		return err
	}
	_, err = stdout.Write(conf)
	return err
}

// DefaultSchedulerUser is the schedulers' user name.
const DefaultSchedulerUser = "jetjob-scheduler"

// WorkerUser is the user name of group's workers.
func WorkerUser(group string) string { return "jetjob-worker-" + group }

// PasswordVar is the variable that holds a user's password: role is
// "SCHEDULER" or a group name. Variables are upper case with _ for -
// because shells cannot set names with a dash.
func PasswordVar(role string) string {
	return "JETJOB_NATS_PASSWORD_" + strings.ToUpper(strings.ReplaceAll(role, "-", "_"))
}

// Render returns the authorization block; args are recorded in its header
// so that it says how to make it again.
func Render(groups []Group, schedulerUser string, args []string) ([]byte, error) {
	if len(groups) == 0 {
		return nil, errors.New("no -group given")
	}
	if schedulerUser == "" {
		return nil, errors.New("empty scheduler user name")
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# jetjob's NATS users, written by `go run ./deploy/natsperm %s`.\n", strings.Join(args, " "))
	b.WriteString(`#
# One user per worker group, allowed only its group's subjects: a worker
# credential of one group can neither take, read nor acknowledge another
# group's triggers, nor publish its events or logs (docs/operations.md, "NATS
# permissions per group", also lists what stays shared between groups).
# Workers must connect with their group's inbox prefix (jetjob-worker does;
# SDK workers pass nats.CustomInboxPrefix(stream.WorkerInboxPrefix(group)))
# and an id listed here. Passwords come from the server's environment.
authorization {
  users = [
`)
	vars := map[string]string{PasswordVar("SCHEDULER"): "the schedulers"}
	users := map[string]bool{schedulerUser: true}
	sp := stream.SchedulerPermissions()
	b.WriteString("    # Schedulers: they provision the streams and serve every group.\n")
	writeUser(&b, schedulerUser, PasswordVar("SCHEDULER"), sp)
	for _, g := range groups {
		p, err := stream.WorkerPermissions(g.Name, g.IDs)
		if err != nil {
			return nil, err
		}
		user, pv := WorkerUser(g.Name), PasswordVar(g.Name)
		if users[user] {
			return nil, fmt.Errorf("user %s given twice", user)
		}
		if other, dup := vars[pv]; dup {
			return nil, fmt.Errorf("group %s: its password variable %s is also %s's", g.Name, pv, other)
		}
		users[user], vars[pv] = true, "group "+g.Name
		ids := slices.Clone(g.IDs)
		slices.Sort(ids)
		fmt.Fprintf(&b, "    # Workers of group %s, ids %s.\n", g.Name, strings.Join(ids, ", "))
		writeUser(&b, user, pv, p)
	}
	b.WriteString("  ]\n}\n")
	return b.Bytes(), nil
}

func writeUser(b *bytes.Buffer, user, passwordVar string, p stream.Permissions) {
	fmt.Fprintf(b, "    {\n      user: %q\n      password: $%s\n      permissions: {\n", user, passwordVar)
	list := func(name string, subjects []string) {
		fmt.Fprintf(b, "        %s: { allow: [\n", name)
		for _, s := range subjects {
			// Quoted: an unquoted $JS... would be read as a variable.
			fmt.Fprintf(b, "          %q\n", s)
		}
		b.WriteString("        ] }\n")
	}
	list("publish", p.Publish)
	list("subscribe", p.Subscribe)
	if p.AllowResponses {
		b.WriteString("        allow_responses: true\n")
	}
	b.WriteString("      }\n    }\n")
}
