package localmaria

import (
	"context"
	"database/sql"
	"testing"
	"time"
)

// A started server answers queries on its port and is gone after Close.
func TestStartQueryClose(t *testing.T) {
	s := StartTest(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.CreateDatabase(ctx, "fixture"); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("mysql", s.DSN("fixture"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "CREATE TABLE t (id int PRIMARY KEY, v varchar(10)); INSERT INTO t VALUES (1, 'été')"); err != nil {
		t.Fatal(err)
	}
	var v string
	if err := db.QueryRowContext(ctx, "SELECT v FROM t WHERE id = 1").Scan(&v); err != nil || v != "été" {
		t.Fatalf("read back %q, %v; want été", v, err)
	}
	db.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db2, _ := sql.Open("mysql", s.DSN(""))
	defer db2.Close()
	if err := db2.PingContext(ctx); err == nil {
		t.Fatal("server still answers after Close")
	}
}
