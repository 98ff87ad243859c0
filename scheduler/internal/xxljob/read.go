// Package xxljob reads an xxl-job admin database (its xxl_job_group and
// xxl_job_info tables, xxl-job 2.x) and maps its executor groups and jobs to
// jetjob groups and job specs, saying for each job what mapped, what changed
// meaning and what could not map. It is the engine of
// `jetjob import xxl-job`; the command does the API calls.
//
// Reading and mapping are apart so that the mapping, where every decision
// lives, is a pure function tested without a database (map.go).
package xxljob

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Group is one row of xxl_job_group: an executor group.
type Group struct {
	ID      int64
	AppName string
	Title   string
	// AddressType is 0 for executors that register themselves, 1 for a
	// manually entered AddressList (comma separated).
	AddressType int
	AddressList string
}

// Job is one row of xxl_job_info, with the columns the import uses. NULL
// text columns read as "".
type Job struct {
	ID              int64
	GroupID         int64
	Desc            string
	Author          string
	AlarmEmail      string // comma separated
	ScheduleType    string // CRON, FIX_RATE, NONE
	ScheduleConf    string // Quartz expression, or seconds for FIX_RATE
	MisfireStrategy string // DO_NOTHING, FIRE_ONCE_NOW
	RouteStrategy   string
	Handler         string
	Param           string
	BlockStrategy   string
	Timeout         int // seconds, 0 for none
	FailRetryCount  int
	GlueType        string // BEAN, GLUE_GROOVY, GLUE_SHELL, ...
	GlueSource      string
	ChildJobIDs     string // comma separated old ids
	TriggerStatus   int    // 1 running, 0 stopped
}

// Dump is what Read found.
type Dump struct {
	Groups []Group
	Jobs   []Job
}

// queryTimeout bounds connecting and each query; an admin database of
// thousands of jobs reads in well under a second.
const queryTimeout = 60 * time.Second

// ParseDSN validates the --mysql-url value and returns the driver's
// configuration. It takes a go-sql-driver DSN
// (user:pass@tcp(host:3306)/xxl_job) or a URL
// (mysql://user:pass@host:3306/xxl_job?param=value). Errors never quote
// the password.
func ParseDSN(s string) (*mysql.Config, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, errors.New("empty: want user:pass@tcp(host:3306)/xxl_job or mysql://user:pass@host:3306/xxl_job")
	}
	if strings.HasPrefix(s, "mysql://") {
		u, err := url.Parse(s)
		if err != nil {
			return nil, errors.New("not a valid mysql:// URL")
		}
		cfg := mysql.NewConfig()
		cfg.Net = "tcp"
		cfg.Addr = u.Host
		if u.Port() == "" {
			cfg.Addr = u.Host + ":3306"
		}
		if u.User != nil {
			cfg.User = u.User.Username()
			cfg.Passwd, _ = u.User.Password()
		}
		cfg.DBName = strings.TrimPrefix(u.Path, "/")
		if u.RawQuery != "" {
			// The driver parses its parameters from the DSN form only.
			tmp, err := mysql.ParseDSN("/?" + u.RawQuery)
			if err != nil {
				return nil, fmt.Errorf("URL parameters: %w", err)
			}
			tmp.User, tmp.Passwd, tmp.Net, tmp.Addr, tmp.DBName = cfg.User, cfg.Passwd, cfg.Net, cfg.Addr, cfg.DBName
			cfg = tmp
		}
		if u.Hostname() == "" {
			return nil, errors.New("no host in the URL")
		}
		if cfg.DBName == "" {
			return nil, errors.New("no database in the URL: want mysql://user:pass@host:3306/xxl_job")
		}
		return cfg, nil
	}
	cfg, err := mysql.ParseDSN(s)
	if err != nil {
		// The driver's message can quote the DSN, password included.
		return nil, errors.New("not a valid DSN: want user:pass@tcp(host:3306)/xxl_job or mysql://user:pass@host:3306/xxl_job")
	}
	if cfg.DBName == "" {
		return nil, errors.New("no database: want user:pass@tcp(host:3306)/xxl_job")
	}
	return cfg, nil
}

// Open connects to the xxl-job database and checks that it answers.
func Open(ctx context.Context, cfg *mysql.Config) (*sql.DB, error) {
	cfg = cfg.Clone()
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("xxl-job database %s/%s: %w", cfg.Addr, cfg.DBName, err)
	}
	db := sql.OpenDB(conn)
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("xxl-job database %s/%s: %w", cfg.Addr, cfg.DBName, err)
	}
	return db, nil
}

// Read reads every executor group and job, ordered by id. It only reads:
// the xxl-job admin keeps running untouched.
func Read(ctx context.Context, db *sql.DB) (*Dump, error) {
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	var d Dump
	rows, err := db.QueryContext(ctx, `SELECT id, app_name, COALESCE(title, ''), address_type, COALESCE(address_list, '')
		FROM xxl_job_group ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("read xxl_job_group: %w", err)
	}
	for rows.Next() {
		var g Group
		if err := rows.Scan(&g.ID, &g.AppName, &g.Title, &g.AddressType, &g.AddressList); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read xxl_job_group: %w", err)
		}
		d.Groups = append(d.Groups, g)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read xxl_job_group: %w", err)
	}

	rows, err = db.QueryContext(ctx, `SELECT id, job_group, COALESCE(job_desc, ''), COALESCE(author, ''),
		COALESCE(alarm_email, ''), COALESCE(schedule_type, ''), COALESCE(schedule_conf, ''),
		COALESCE(misfire_strategy, ''), COALESCE(executor_route_strategy, ''), COALESCE(executor_handler, ''),
		COALESCE(executor_param, ''), COALESCE(executor_block_strategy, ''), executor_timeout,
		executor_fail_retry_count, COALESCE(glue_type, ''), COALESCE(glue_source, ''),
		COALESCE(child_jobid, ''), trigger_status
		FROM xxl_job_info ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("read xxl_job_info: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var j Job
		if err := rows.Scan(&j.ID, &j.GroupID, &j.Desc, &j.Author, &j.AlarmEmail, &j.ScheduleType, &j.ScheduleConf,
			&j.MisfireStrategy, &j.RouteStrategy, &j.Handler, &j.Param, &j.BlockStrategy, &j.Timeout,
			&j.FailRetryCount, &j.GlueType, &j.GlueSource, &j.ChildJobIDs, &j.TriggerStatus); err != nil {
			return nil, fmt.Errorf("read xxl_job_info: %w", err)
		}
		d.Jobs = append(d.Jobs, j)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read xxl_job_info: %w", err)
	}
	return &d, nil
}
