// Package flowkey evaluates a job's concurrency key expression over a
// run's params (docs/flow-control.md, "Concurrency keys"). The scheduler
// evaluates it when it builds the run's trigger (runs.Planned.Trigger), so
// the worker gets the key itself and never reads params to find it.
//
// An expression is "params" (the run's whole params text) or
// "params.<field>[.<field>...]" (the params read as a JSON object and the
// field at that path taken), each field of letters, digits, '_' and '-'.
package flowkey

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/jetjob/jetjob/shared/wire"
)

// Root is the expression of the whole params.
const Root = "params"

// MaxExprLen bounds an expression's length.
const MaxExprLen = 200

// ErrInvalid marks an expression that does not parse.
var ErrInvalid = errors.New("invalid concurrency key expression")

// Parse checks that expr is an expression Eval reads: "params" or
// "params.<field>[.<field>...]".
func Parse(expr string) error {
	if len(expr) > MaxExprLen {
		return fmt.Errorf("%w: %d characters, at most %d", ErrInvalid, len(expr), MaxExprLen)
	}
	rest, ok := strings.CutPrefix(expr, Root)
	if !ok {
		return fmt.Errorf("%w %q: want params or params.<field>[.<field>...]", ErrInvalid, expr)
	}
	if rest == "" {
		return nil
	}
	if rest[0] != '.' {
		return fmt.Errorf("%w %q: want params or params.<field>[.<field>...]", ErrInvalid, expr)
	}
	for _, f := range strings.Split(rest[1:], ".") {
		if f == "" {
			return fmt.Errorf("%w %q: an empty field", ErrInvalid, expr)
		}
		for _, c := range f {
			if !fieldChar(c) {
				return fmt.Errorf("%w %q: field %q may hold only letters, digits, '_' and '-'", ErrInvalid, expr, f)
			}
		}
	}
	return nil
}

func fieldChar(c rune) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// Eval is the key expr gives for a run whose params are params: the
// params text itself for "params"; for a path, the value there — a string
// as it is, a number or boolean as its JSON literal, an object or array
// as compact JSON, and "" for a missing field, null, or params that are
// not a JSON object. A value longer than wire.MaxKeyBytes becomes
// "sha256:<hex>" of it. An expression that does not parse (Parse refuses
// it when the job is written) is the empty key.
func Eval(expr, params string) string {
	rest, ok := strings.CutPrefix(expr, Root)
	if !ok {
		return ""
	}
	if rest == "" {
		return bounded(params)
	}
	if rest[0] != '.' {
		return ""
	}
	raw := json.RawMessage(params)
	path := rest[1:]
	for path != "" {
		var field string
		field, path, _ = strings.Cut(path, ".")
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
			return "" // not an object (or null): nothing at the path
		}
		if raw, ok = obj[field]; !ok {
			return ""
		}
	}
	return bounded(value(raw))
}

// value writes the JSON value raw as a key.
func value(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	switch raw[0] {
	case 'n':
		return ""
	case '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return ""
		}
		return s
	case '{', '[':
		var b bytes.Buffer
		if json.Compact(&b, raw) != nil {
			return ""
		}
		return b.String()
	default: // a number or a boolean: its literal
		return string(raw)
	}
}

// bounded is k, or its SHA-256 when it is longer than a key may be.
func bounded(k string) string {
	if len(k) <= wire.MaxKeyBytes {
		return k
	}
	sum := sha256.Sum256([]byte(k))
	return "sha256:" + hex.EncodeToString(sum[:])
}
