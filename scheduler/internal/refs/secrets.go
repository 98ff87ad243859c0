package refs

import (
	"errors"
	"fmt"
	"strings"
)

// A job's reference to a secret (secret_env, or a ${secret:NAME}
// placeholder in its params) hands the secret's value to whatever the job
// runs, and so to whoever may write or trigger the job. CheckSecrets is
// the one decision on it, made where the reference is written (the
// store's job create and update): a job may name only secrets of its own
// group, and only a writer who may run commands in that group (operator
// with scripts: auth.Principal.MayTrigger(group, true)) may add one,
// since a command, or an http job's request, can send the value anywhere.
// Unlike a job, a secret's name is not hidden from the group's people
// (viewers list them), so a missing one is named as missing.

// ErrSecretRefused is a reference to a secret the writer may not make.
var ErrSecretRefused = errors.New("referencing a secret needs operator with scripts on the job's group (its value reaches whatever the job runs)")

// ErrNoSecret is a reference to a secret its job's group lacks.
var ErrNoSecret = errors.New("no such secret in the job's group (a job may reference only its own group's secrets: create it with `jetjob secrets set GROUP/NAME`)")

// SecretError lists the refused secret names of a job's write.
type SecretError struct {
	Group string
	Names []string
	Err   error
}

func (e *SecretError) Error() string {
	return fmt.Sprintf("secrets %s of group %s: %v", strings.Join(e.Names, ", "), e.Group, e.Err)
}

func (e *SecretError) Unwrap() error { return e.Err }

// CheckSecrets decides a write of a job of group that references names
// where it referenced cur (nil for a new job, or one moved to another
// group): every name must be a secret of group (exists), and a must be
// able to run commands in group if the write adds any name.
func CheckSecrets(a Authority, group string, cur, names []string, exists func(name string) bool) error {
	var missing, added []string
	for _, n := range names {
		if !exists(n) {
			missing = append(missing, n)
		}
		if !containsString(cur, n) {
			added = append(added, n)
		}
	}
	if len(missing) > 0 {
		return &SecretError{Group: group, Names: missing, Err: ErrNoSecret}
	}
	if len(added) > 0 && (a == nil || !a.MayName(Target{Group: group, Commands: true})) {
		return &SecretError{Group: group, Names: added, Err: ErrSecretRefused}
	}
	return nil
}

func containsString(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
