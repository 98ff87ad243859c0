package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/jetjob/jetjob/scheduler/internal/auth"
	"github.com/jetjob/jetjob/scheduler/internal/pgtest"
	"github.com/jetjob/jetjob/scheduler/internal/store"
)

// users create-admin stores an admin with the password from
// JETJOB_ADMIN_PASSWORD (or stdin), hashed; a short one is refused.
func TestCreateAdmin(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	t.Setenv("JETJOB_DATABASE_URL", url)
	t.Setenv("JETJOB_ADMIN_PASSWORD", "short")
	if _, err := execute(ctx, "users", "create-admin", "root"); !errors.As(err, new(usageError)) || !strings.Contains(err.Error(), "12") {
		t.Fatalf("short password: %v, want a usage error naming the minimum", err)
	}
	t.Setenv("JETJOB_ADMIN_PASSWORD", "a long enough password")
	out, err := execute(ctx, "users", "create-admin", "root")
	if err != nil || !strings.Contains(out, "admin root created") {
		t.Fatalf("create-admin: %v %s", err, out)
	}
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	st, err := store.Open(ctx, pool, 0)
	if err != nil {
		t.Fatal(err)
	}
	u, err := st.GetUser(ctx, "root")
	if err != nil || !u.Admin {
		t.Fatalf("user root: %+v %v", u, err)
	}
	if err := auth.CheckPassword(ctx, u.PasswordHash, "a long enough password"); err != nil {
		t.Errorf("stored password: %v", err)
	}
	if _, err := execute(ctx, "users", "create-admin", "root"); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("second create-admin: %v, want already exists", err)
	}
}
