package runs

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DB is what a statement that needs no transaction of its own runs on: a
// pool, a connection or a transaction (*pgxpool.Pool, *pgx.Conn, pgx.Tx).
// Statements that must share a transaction with the caller's other writes
// take a pgx.Tx instead.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}
