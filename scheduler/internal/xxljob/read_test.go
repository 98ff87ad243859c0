package xxljob

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jetjob/jetjob/scheduler/internal/xxljob/localmaria"
)

// fixture is the xxl-job database of the tests: xxl-job 2.4's tables and
// a realistic data set (testdata/jobs.sql).
var fixture = []string{"testdata/schema.sql", "testdata/jobs.sql"}

// The fixture read from a real MariaDB comes back whole: NULL columns as
// "", multi-line glue sources and non-ASCII text intact.
func TestReadFixture(t *testing.T) {
	srv := localmaria.StartTest(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := srv.CreateDatabase(ctx, "xxl_job"); err != nil {
		t.Fatal(err)
	}
	if err := srv.LoadFiles(ctx, "xxl_job", fixture...); err != nil {
		t.Fatal(err)
	}
	cfg, err := ParseDSN(srv.DSN("xxl_job"))
	if err != nil {
		t.Fatal(err)
	}
	db, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	d, err := Read(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Groups) != 5 || len(d.Jobs) < 50 {
		t.Fatalf("read %d groups and %d jobs, want 5 and at least 50", len(d.Groups), len(d.Jobs))
	}
	if g := d.Groups[2]; g.AppName != "ops-scripts" || g.AddressType != 1 || !strings.Contains(g.AddressList, "10.0.0.6") {
		t.Errorf("group 3 = %+v", g)
	}
	if g := d.Groups[0]; g.Title != "示例执行器" || g.AddressList != "" {
		t.Errorf("group 1 = %+v", g)
	}
	byID := map[int64]Job{}
	for _, j := range d.Jobs {
		byID[j.ID] = j
	}
	if j := byID[39]; j.GlueType != "GLUE_SHELL" || !strings.Contains(j.GlueSource, "\nfind /var/log/app -name '*.gz'") || j.Param != "14" {
		t.Errorf("job 39 = %+v", j)
	}
	if j := byID[38]; j.RouteStrategy != "" || j.BlockStrategy != "" {
		t.Errorf("job 38: NULL strategies read as %q, %q", j.RouteStrategy, j.BlockStrategy)
	}
	if j := byID[3]; j.ScheduleConf != "0 0 2 * * ?" || j.Timeout != 600 || j.FailRetryCount != 3 || j.TriggerStatus != 1 || j.Author != "alice" {
		t.Errorf("job 3 = %+v", j)
	}
	if j := byID[35]; j.Desc != "数据同步" {
		t.Errorf("job 35 desc %q", j.Desc)
	}
}

func TestParseDSN(t *testing.T) {
	cfg, err := ParseDSN("mysql://reader:s%40cret@db.example.com/xxl_job?parseTime=true")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.User != "reader" || cfg.Passwd != "s@cret" || cfg.Addr != "db.example.com:3306" || cfg.DBName != "xxl_job" || !cfg.ParseTime {
		t.Errorf("URL form: %+v", cfg)
	}
	if cfg, err := ParseDSN("reader:pw@tcp(db:3307)/xxl_job"); err != nil || cfg.Addr != "db:3307" || cfg.DBName != "xxl_job" {
		t.Errorf("DSN form: %+v, %v", cfg, err)
	}
	for _, bad := range []string{"", "reader:topsecret@tcp(db:3306)/", "mysql://reader:topsecret@db:3306/", "reader:topsecret@bogus"} {
		_, err := ParseDSN(bad)
		if err == nil {
			t.Errorf("%q accepted", bad)
		} else if strings.Contains(err.Error(), "topsecret") {
			t.Errorf("%q: the error quotes the password: %v", bad, err)
		}
	}
}
