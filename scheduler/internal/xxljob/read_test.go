package xxljob

import (
	"context"
	"database/sql"
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
	_, db := loadDB(t, fixture...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
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

// loadDB starts a MariaDB, loads files into database xxl_job and opens it.
func loadDB(t *testing.T, files ...string) (*localmaria.Server, *sql.DB) {
	t.Helper()
	srv := localmaria.StartTestDB(t, "xxl_job", files...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg, err := ParseDSN(srv.DSN("xxl_job"))
	if err != nil {
		t.Fatal(err)
	}
	db, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return srv, db
}

// Each schema generation, built from xxl-job's published DDL with its
// sample rows, reads from a real MariaDB: the generation is told from the
// columns, and each row comes back with its meaning (2.0–2.2's job_cron as
// a CRON schedule with DO_NOTHING, 3.x's name as the description and its
// own zone), users included.
func TestReadGenerations(t *testing.T) {
	for _, c := range []struct {
		file, gen string
	}{
		{"testdata/gen20.sql", Gen20},
		{"testdata/gen23.sql", Gen23},
		{"testdata/gen3.sql", Gen3},
	} {
		t.Run(c.gen, func(t *testing.T) {
			_, db := loadDB(t, c.file)
			d, err := Read(context.Background(), db)
			if err != nil {
				t.Fatal(err)
			}
			if d.Generation != c.gen || d.Database != "xxl_job" {
				t.Fatalf("read generation %q of database %q, want %q of xxl_job", d.Generation, d.Database, c.gen)
			}
			if g := d.Groups[0]; g.AppName != "xxl-job-executor-sample" || g.Title == "" {
				t.Errorf("sample group = %+v", g)
			}
			byID := map[int64]Job{}
			for _, j := range d.Jobs {
				byID[j.ID] = j
			}
			if j := byID[1]; j.ScheduleType != "CRON" || j.ScheduleConf != "0 0 0 * * ? *" || j.MisfireStrategy != "DO_NOTHING" ||
				j.Handler != "demoJobHandler" || j.Desc == "" || j.GlueType != "BEAN" {
				t.Errorf("sample job = %+v", j)
			}
			if j := byID[2]; j.TriggerStatus != 1 || j.TriggerNextTime != 1893520800000 || j.ScheduleConf != "0 0 2 * * ?" {
				t.Errorf("job 2 = %+v", j)
			}
			if len(d.Users) < 2 || !d.Users[0].Admin || d.Users[0].Username != "admin" || d.Users[1].Admin || d.Users[1].Permission == "" {
				t.Errorf("users = %+v", d.Users)
			}
			switch c.gen {
			case Gen20:
				if j := byID[3]; j.ScheduleType != "NONE" || j.GlueType != "GLUE_PYTHON" {
					t.Errorf("2.0–2.2 job with an empty job_cron = %+v", j)
				}
			case Gen3:
				if j := byID[8]; j.Desc != "New York open" || j.ScheduleTimezone != "America/New_York" {
					t.Errorf("3.x job 8 = %+v", j)
				}
				// An admin whose group column is name instead of title
				// reads the same.
				if _, err := db.Exec("ALTER TABLE xxl_job_group CHANGE `title` `name` varchar(64) NOT NULL"); err != nil {
					t.Fatal(err)
				}
				d2, err := Read(context.Background(), db)
				if err != nil || d2.Generation != Gen3 || d2.Groups[0].Title != d.Groups[0].Title {
					t.Errorf("group name column: %v, %+v", err, d2)
				}
			}
		})
	}
}

// A database that is not xxl-job's says so instead of a SQL error.
func TestReadNotXXLJob(t *testing.T) {
	_, db := loadDB(t)
	if _, err := Read(context.Background(), db); err == nil || !strings.Contains(err.Error(), "not an xxl-job admin database") {
		t.Errorf("empty database: %v", err)
	}
	if _, err := db.Exec("CREATE TABLE xxl_job_group (id int, app_name varchar(64), title varchar(12)); CREATE TABLE xxl_job_info (id int, job_group int, job_desc varchar(255))"); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(context.Background(), db); err == nil || !strings.Contains(err.Error(), "neither job_cron nor schedule_type") {
		t.Errorf("unknown generation: %v", err)
	}
}
