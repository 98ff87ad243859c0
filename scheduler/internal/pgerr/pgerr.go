// Package pgerr tells PostgreSQL's errors apart by their SQLSTATE, for the
// statements whose callers answer a constraint violation differently from
// any other failure (a conflict for the API, the idempotent retry of a
// planning insert).
package pgerr

import (
	"errors"

	"github.com/jackc/pgx/v5/pgconn"
)

// Unique reports whether err is a unique_violation (23505).
func Unique(err error) bool { return is(err, "23505") }

// ForeignKey reports whether err is a foreign_key_violation (23503).
func ForeignKey(err error) bool { return is(err, "23503") }

func is(err error, code string) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == code
}
