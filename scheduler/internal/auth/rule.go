package auth

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// A Rule is the permission a route requires. Every API route declares
// exactly one, next to its pattern (package api's route table); a route
// without one does not start.
//
// Check answers in this order: no principal → ErrUnauthenticated (401,
// unless the rule is Public); a job or run of a group the principal cannot
// even read → ErrHidden (404, so ids do not leak); a missing role or
// scripts permission → *Forbidden (403, naming it).
type Rule struct {
	kind    ruleKind
	role    Role
	groups  GroupOf
	subject SubjectOf
	doc     string
}

type ruleKind int

const (
	kindNone ruleKind = iota // the zero Rule: refused at start
	kindPublic
	kindAuthenticated
	kindAdmin
	kindGroup
	kindSelf
)

// Need is a group a request acts on, as a GroupOf finds it.
type Need struct {
	Group string
	// Hidden marks a group found from a job or run the path names: a
	// principal who cannot read the group is answered ErrHidden, with
	// What ("job 7") in the message, as a missing one would be.
	Hidden bool
	What   string
	// Scripts marks a write of a command-running job of the group.
	Scripts bool
	// Why explains Scripts in the 403 ("handler shell runs commands").
	Why string
}

// GroupOf finds the groups a request acts on: from its body, its path's
// job or run, or its query. No needs (an optional ?group= left out)
// leave the request to filter what it reads by Principal.Readable. An
// error is the request's answer (a bad id, a malformed body, a store
// failure).
type GroupOf func(r *http.Request, p *Principal) ([]Need, error)

// SubjectOf finds the user a request is about ("" for the caller) and
// whether a stranger is told ErrHidden (a key id) rather than 403.
type SubjectOf func(r *http.Request, p *Principal) (user string, hidden bool, err error)

var (
	// ErrUnauthenticated means the request carried no valid credentials.
	ErrUnauthenticated = errors.New("authentication required: send Authorization: Bearer <API key>, or log in")
	// ErrHidden means the request names something the principal may not
	// know exists: answered as not found.
	ErrHidden = errors.New("not found")
)

// Forbidden is a principal lacking a permission.
type Forbidden struct {
	// Permission is what was missing, e.g. "operator of group billing".
	Permission string
}

func (f *Forbidden) Error() string {
	return "forbidden: this needs " + f.Permission
}

// Public lets anyone call the route, authenticated or not.
func Public() Rule { return Rule{kind: kindPublic, doc: "public"} }

// Authenticated lets any principal call the route.
func Authenticated() Rule { return Rule{kind: kindAuthenticated, doc: "authenticated"} }

// Admin lets only admins call the route.
func Admin() Rule { return Rule{kind: kindAdmin, doc: "admin"} }

// ReadGroup requires the viewer role on every group of needs.
func ReadGroup(of GroupOf) Rule {
	return Rule{kind: kindGroup, role: Viewer, groups: of, doc: "viewer of the group"}
}

// OperateGroup requires the operator role on every group of needs (and
// scripts where a need says so).
func OperateGroup(of GroupOf) Rule {
	return Rule{kind: kindGroup, role: Operator, groups: of, doc: "operator of the group"}
}

// SelfOrAdmin lets a principal act on their own user (and keys), an admin
// on anyone's.
func SelfOrAdmin(of SubjectOf) Rule {
	return Rule{kind: kindSelf, subject: of, doc: "the user, or admin"}
}

// Valid reports whether r was built by a constructor.
func (r Rule) Valid() bool { return r.kind != kindNone }

// Public reports whether the rule lets unauthenticated requests through.
func (r Rule) Public() bool { return r.kind == kindPublic }

// String describes the rule, for documentation and tests.
func (r Rule) String() string { return r.doc }

// Check decides whether p may make request req.
func (r Rule) Check(req *http.Request, p *Principal) error {
	switch r.kind {
	case kindNone:
		return errors.New("auth: route without a rule")
	case kindPublic:
		return nil
	}
	if p == nil {
		return ErrUnauthenticated
	}
	switch r.kind {
	case kindAuthenticated:
		return nil
	case kindAdmin:
		if !p.Admin {
			return &Forbidden{Permission: "admin"}
		}
		return nil
	case kindSelf:
		user, hidden, err := r.subject(req, p)
		if err != nil {
			return err
		}
		if p.Admin || user == "" || user == p.Name {
			return nil
		}
		if hidden {
			return ErrHidden
		}
		return &Forbidden{Permission: fmt.Sprintf("admin (user %q is not you)", user)}
	}
	needs, err := r.groups(req, p)
	if err != nil {
		return err
	}
	for _, n := range needs {
		if n.Hidden && !p.Can(n.Group, Viewer) {
			return HiddenError(n.What)
		}
	}
	var missing []string
	for _, n := range needs {
		if !p.Can(n.Group, r.role) {
			missing = append(missing, fmt.Sprintf("%s of group %s", r.role, n.Group))
		} else if n.Scripts && !p.CanScripts(n.Group) {
			missing = append(missing, fmt.Sprintf("scripts permission on group %s (%s)", n.Group, n.Why))
		}
	}
	if len(missing) > 0 {
		return &Forbidden{Permission: strings.Join(missing, " and ")}
	}
	return nil
}

// HiddenError is ErrHidden naming what was asked for ("job 7 not found"):
// the same words whether it is missing or another group's, so the message
// leaks nothing the caller did not send.
func HiddenError(what string) error {
	if what == "" {
		return ErrHidden
	}
	return fmt.Errorf("%s %w", what, ErrHidden)
}
