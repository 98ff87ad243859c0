// Package auth decides who a request is and what it may do: password
// hashing (argon2id), API key and session token formats, the Principal a
// request acts as, the Rule each API route declares, and the login rate
// limiter. It holds no SQL: the users, grants, keys and sessions live in
// package store, and package api wires the two.
//
// The model is xxl-job's, tightened: an admin may do everything; everyone
// else acts per group through grants (user × group × role), where a viewer
// reads the group's jobs, runs, logs, workers and stats and an operator
// also changes its jobs. Handlers that run commands (shell, and any a
// group declares) need the separate scripts flag on the grant, because
// whoever writes such a job runs arbitrary commands on the group's workers.
package auth

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Role is a grant's role on a group.
type Role string

const (
	// Viewer reads a group's jobs, runs, logs, workers and stats.
	Viewer Role = "viewer"
	// Operator also creates, edits, enables, disables, triggers, kills
	// and deletes the group's jobs.
	Operator Role = "operator"
)

// ParseRole reads viewer or operator.
func ParseRole(s string) (Role, error) {
	switch Role(s) {
	case Viewer, Operator:
		return Role(s), nil
	}
	return "", fmt.Errorf("role %q: want viewer or operator", s)
}

func (r Role) rank() int {
	switch r {
	case Viewer:
		return 1
	case Operator:
		return 2
	}
	return 0
}

// Grant is a principal's role on one group.
type Grant struct {
	Role Role
	// Scripts allows command-running jobs of the group (with Operator).
	Scripts bool
}

// Method is how a request authenticated.
type Method string

const (
	// ByKey is an API key (Authorization: Bearer jj_…).
	ByKey Method = "key"
	// BySession is a session cookie from POST /login.
	BySession Method = "session"
	// ByBootstrap is JETJOB_API_TOKEN, the break-glass admin key.
	ByBootstrap Method = "bootstrap"
	// ByNone is --insecure-no-auth: every request is an admin.
	ByNone Method = "none"
)

// Names of the principals that are not users.
const (
	BootstrapName      = "bootstrap"
	AnonymousAdminName = "anonymous-admin"
)

// Principal is who a request acts as.
type Principal struct {
	Name        string
	DisplayName string
	// Language is the user's console language ("" for none).
	Language string
	Admin    bool
	// Grants by group name (an admin needs none).
	Grants map[string]Grant
	Method Method
	// KeyID and KeyPrefix name the API key (ByKey).
	KeyID     int64
	KeyPrefix string
	// SessionID is a short public name of the session (BySession): the
	// start of its stored hash, never the cookie value.
	SessionID        string
	SessionExpiresAt time.Time
}

// Bootstrap is the principal of the JETJOB_API_TOKEN.
func Bootstrap() *Principal {
	return &Principal{Name: BootstrapName, Admin: true, Method: ByBootstrap}
}

// AnonymousAdmin is the principal of every request under --insecure-no-auth.
func AnonymousAdmin() *Principal {
	return &Principal{Name: AnonymousAdminName, Admin: true, Method: ByNone}
}

// Can reports whether p holds at least role on group.
func (p *Principal) Can(group string, role Role) bool {
	if p == nil {
		return false
	}
	if p.Admin {
		return true
	}
	g, ok := p.Grants[group]
	return ok && g.Role.rank() >= role.rank()
}

// CanScripts reports whether p may write command-running jobs of group.
func (p *Principal) CanScripts(group string) bool {
	if p == nil {
		return false
	}
	if p.Admin {
		return true
	}
	g, ok := p.Grants[group]
	return ok && g.Role == Operator && g.Scripts
}

// Readable returns the groups p may read, sorted; all is true for an
// admin (groups is then nil). Listings filter by it.
func (p *Principal) Readable() (groups []string, all bool) {
	if p.Admin {
		return nil, true
	}
	groups = []string{}
	for g, gr := range p.Grants {
		if gr.Role.rank() >= Viewer.rank() {
			groups = append(groups, g)
		}
	}
	slices.Sort(groups)
	return groups, false
}

// Credential names the credential used, for the audit log: "key:<prefix>",
// "session:<id>", "bootstrap" or "none".
func (p *Principal) Credential() string {
	switch p.Method {
	case ByKey:
		return "key:" + p.KeyPrefix
	case BySession:
		return "session:" + p.SessionID
	}
	return string(p.Method)
}

type ctxKey struct{}

// NewContext returns ctx carrying p.
func NewContext(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, ctxKey{}, p)
}

// FromContext returns the request's principal, nil when anonymous.
func FromContext(ctx context.Context) *Principal {
	p, _ := ctx.Value(ctxKey{}).(*Principal)
	return p
}

// ShellHandler is the drop-in worker's built-in handler that runs a
// command: every group's jobs of it need the scripts permission.
const ShellHandler = "shell"

// ScriptHandler is the drop-in worker's handler of script jobs, whose
// source the scheduler stores (docs/jobs.md, "Script jobs"): it runs
// commands as shell does, so writing one, or its script, needs scripts.
const ScriptHandler = "script"

// RunsCommands reports whether a job with handler, in a group whose
// command-running handlers (besides shell) are commandHandlers, runs
// commands: writing such a job, or naming it as another job's child, needs
// the scripts permission on its group.
func RunsCommands(handler string, commandHandlers []string) bool {
	return handler == ShellHandler || handler == ScriptHandler || slices.Contains(commandHandlers, handler)
}

// MayTrigger reports whether p may trigger, as it stands, a job of group
// that runs commands (or not): operator of the group, and scripts for a
// command-running job. Naming a job as another's child (package refs)
// needs exactly this.
func (p *Principal) MayTrigger(group string, commands bool) bool {
	return p.Can(group, Operator) && (!commands || p.CanScripts(group))
}
