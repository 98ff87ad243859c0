// Package secretenv keeps a process's secrets away from the commands it
// runs. A child of a process can read its parent's initial environment
// and command line (/proc/<ppid>/environ and /proc/<ppid>/cmdline, same
// user), and os.Unsetenv does not change either: they are the memory the
// kernel wrote at exec. So the drop-in worker, whose shell jobs run
// whatever a job says, calls Start first thing: when its environment or
// command line holds secrets (Policy), Start executes the same binary
// again without them, handing their values over in an anonymous memory
// file (memfd) whose descriptor is closed as soon as they are read. The
// process that runs jobs then never had the secrets in its initial
// environment or arguments; it keeps them in memory (Moved) and reads its
// settings from there.
//
// Only on Linux; elsewhere Start moves nothing.
package secretenv

import (
	"os"
	"strings"
)

// Policy says what is secret.
type Policy struct {
	// Env reports whether an environment variable holds (or may hold) a
	// secret: it is moved out of the environment.
	Env func(name string) bool
	// Restore reports whether a moved variable is set again in the Go
	// process's environment (os.Setenv) once moved, for a library that
	// reads it there (the OpenTelemetry SDK reads OTEL_*). It is then in
	// os.Environ() but not in the initial environment the kernel shows:
	// whoever starts a child must give it an environment of its own, as
	// the shell handler does.
	Restore func(name string) bool
	// Flags are long flags (without the dashes) whose values are secret,
	// given as --flag=value or --flag value: moved out of the command
	// line, to be parsed after the others (Moved.Args).
	Flags []string
}

// Moved is what Start took out of the environment and the command line.
type Moved struct {
	// Env are the moved variables.
	Env map[string]string
	// Args are the moved flags with their values, to append to the
	// command line the program parses.
	Args []string
}

// LookupEnv is os.LookupEnv that sees the moved variables too: how the
// program reads its settings.
func (m *Moved) LookupEnv(name string) (string, bool) {
	if v, ok := m.Env[name]; ok {
		return v, true
	}
	return os.LookupEnv(name)
}

// split separates environ into what stays and what moves.
func split(environ []string, secret func(string) bool) (kept []string, moved map[string]string) {
	moved = map[string]string{}
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		if secret != nil && secret(name) {
			moved[name] = value
			continue
		}
		kept = append(kept, kv)
	}
	return kept, moved
}

// splitArgs separates args (without the program name) into what stays and
// the secret flags with their values. A "--" ends the flags.
func splitArgs(args, flags []string) (kept, moved []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(kept, args[i:]...), moved
		}
		name, _, hasValue := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !strings.HasPrefix(a, "--") || !contains(flags, name) {
			kept = append(kept, a)
			continue
		}
		moved = append(moved, a)
		if !hasValue && i+1 < len(args) {
			i++
			moved = append(moved, args[i])
		}
	}
	return kept, moved
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
