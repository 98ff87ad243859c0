// Package xxljob reads an xxl-job admin database (its xxl_job_group,
// xxl_job_info and xxl_job_user tables, of every schema generation from
// 2.0 to 3.x, told apart by their columns) and maps its executor groups and jobs to
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
	// Title is the group's display name: column title (every generation
	// in xxl-job's published DDL), or name where an admin has that
	// instead.
	Title string
	// AddressType is 0 for executors that register themselves, 1 for a
	// manually entered AddressList (comma separated).
	AddressType int
	AddressList string
}

// Job is one row of xxl_job_info, with the columns the import uses. NULL
// text columns read as "".
type Job struct {
	ID      int64
	GroupID int64
	// Desc is job_desc (2.x) or name (3.x): the job's display name.
	Desc       string
	Author     string
	AlarmEmail string // comma separated
	// ScheduleType is CRON, FIX_RATE or NONE; 2.0–2.2 have only job_cron,
	// read as CRON (NONE when empty).
	ScheduleType string
	ScheduleConf string // Quartz expression, or seconds for FIX_RATE
	// ScheduleTimezone is the job's own zone (schedule_timezone, newer
	// 3.x admins); "" means the admin's zone.
	ScheduleTimezone string
	// MisfireStrategy is DO_NOTHING or FIRE_ONCE_NOW; 2.0–2.2 have none and
	// read DO_NOTHING, what their scheduler did with a fire missed by
	// more than 5 s.
	MisfireStrategy string
	RouteStrategy   string
	Handler         string
	Param           string
	BlockStrategy   string
	Timeout         int // seconds, 0 for none
	FailRetryCount  int
	GlueType        string // BEAN, GLUE_GROOVY, GLUE_SHELL, ...
	GlueSource      string
	GlueRemark      string
	// GlueUpdated is glue_updatetime, "2006-01-02 15:04:05" in the admin's
	// zone ("" when NULL): when the current source was saved.
	GlueUpdated   string
	ChildJobIDs   string // comma separated old ids
	TriggerStatus int    // 1 running, 0 stopped
	// TriggerNextTime is the next fire the admin computed (epoch ms, 0 for
	// a stopped job): the evidence of the zone it ran in (zone.go).
	TriggerNextTime int64
}

// User is one row of xxl_job_user. Its password (a hash of xxl-job's own
// scheme) is not read: it cannot be carried over.
type User struct {
	ID       int64
	Username string
	// Admin is role 1; a normal user (role 0) may act on the groups in
	// Permission.
	Admin bool
	// Permission is the comma separated ids of the executor groups a
	// normal user may act on.
	Permission string
}

// Generations of xxl-job's admin schema, told apart by their columns.
const (
	Gen20 = "2.0–2.2" // xxl_job_info.job_cron, group title
	Gen23 = "2.3–2.4" // schedule_type, schedule_conf, misfire_strategy, job_desc
	Gen3  = "3.x"     // job name, group access_token, user token
)

// Dump is what Read found.
type Dump struct {
	// Database is the xxl-job database's name: the source recorded on
	// each job ("xxl-job <database>#<id>").
	Database string
	// Generation is the schema generation found (Gen20, Gen23, Gen3).
	Generation string
	Groups     []Group
	Jobs       []Job
	// Users are xxl_job_user's rows (ReadUsers only).
	Users []User
	// GlueHistory are the older sources of GLUE jobs (xxl_job_logglue),
	// by job id, oldest first.
	GlueHistory map[int64][]GlueVersion
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

// columns lists the columns of the xxl-job tables, by table.
type columns map[string]map[string]bool

func (c columns) has(table, col string) bool { return c[table][col] }

// readColumns reads the columns of the tables the import reads.
func readColumns(ctx context.Context, db *sql.DB) (columns, string, error) {
	var database sql.NullString
	if err := db.QueryRowContext(ctx, `SELECT DATABASE()`).Scan(&database); err != nil {
		return nil, "", fmt.Errorf("read the database name: %w", err)
	}
	rows, err := db.QueryContext(ctx, `SELECT TABLE_NAME, COLUMN_NAME FROM information_schema.COLUMNS
		WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME IN ('xxl_job_group', 'xxl_job_info', 'xxl_job_user', 'xxl_job_log', 'xxl_job_logglue')`)
	if err != nil {
		return nil, "", fmt.Errorf("read the columns of the xxl-job tables: %w", err)
	}
	defer rows.Close()
	cols := columns{}
	for rows.Next() {
		var t, c string
		if err := rows.Scan(&t, &c); err != nil {
			return nil, "", fmt.Errorf("read the columns of the xxl-job tables: %w", err)
		}
		t, c = strings.ToLower(t), strings.ToLower(c)
		if cols[t] == nil {
			cols[t] = map[string]bool{}
		}
		cols[t][c] = true
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("read the columns of the xxl-job tables: %w", err)
	}
	return cols, database.String, nil
}

// generation tells the schema generation from the columns, or says why
// the database is not an xxl-job admin database the import knows.
func (c columns) generation() (string, error) {
	switch {
	case c["xxl_job_info"] == nil || c["xxl_job_group"] == nil:
		return "", errors.New("no xxl_job_info or xxl_job_group table: not an xxl-job admin database (wrong database name?)")
	case !c.has("xxl_job_group", "title") && !c.has("xxl_job_group", "name"):
		return "", errors.New("xxl_job_group has neither title nor name: an xxl-job admin schema this import does not know")
	case !c.has("xxl_job_info", "job_desc") && !c.has("xxl_job_info", "name"):
		return "", errors.New("xxl_job_info has neither job_desc nor name: an xxl-job admin schema this import does not know")
	case c.has("xxl_job_info", "job_cron"):
		return Gen20, nil
	case !c.has("xxl_job_info", "schedule_type") || !c.has("xxl_job_info", "schedule_conf"):
		return "", errors.New("xxl_job_info has neither job_cron nor schedule_type and schedule_conf: an xxl-job admin schema this import does not know")
	case c.has("xxl_job_info", "name") || c.has("xxl_job_group", "access_token") ||
		c.has("xxl_job_group", "name") || c.has("xxl_job_user", "token"):
		return Gen3, nil
	default:
		return Gen23, nil
	}
}

// text is the SQL that reads a text column of table as "" when NULL, or
// "" when the generation has no such column; the first of names present
// wins.
func (c columns) text(table string, names ...string) string {
	for _, n := range names {
		if c.has(table, n) {
			return "COALESCE(`" + n + "`, '')"
		}
	}
	return "''"
}

// datetime is the select of a DATETIME column as the admin's wall clock
// ("2006-01-02 15:04:05", whatever zone the connection has), "" when NULL
// or absent.
func (c columns) datetime(table, name string) string {
	if c.has(table, name) {
		return "COALESCE(DATE_FORMAT(`" + name + "`, '%Y-%m-%d %H:%i:%s'), '')"
	}
	return "''"
}

// number is text for a numeric column, 0 when absent.
func (c columns) number(table, name string) string {
	if c.has(table, name) {
		return "COALESCE(`" + name + "`, 0)"
	}
	return "0"
}

// Read reads every executor group and job, ordered by id, from whichever
// schema generation the database has (Dump.Generation says which). It
// only reads: the xxl-job admin keeps running untouched.
func Read(ctx context.Context, db *sql.DB) (*Dump, error) {
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	cols, database, err := readColumns(ctx, db)
	if err != nil {
		return nil, err
	}
	gen, err := cols.generation()
	if err != nil {
		return nil, err
	}
	d := Dump{Database: database, Generation: gen}
	const tg, ti = "xxl_job_group", "xxl_job_info"
	rows, err := db.QueryContext(ctx, `SELECT id, COALESCE(app_name, ''), `+cols.text(tg, "title", "name")+`, `+
		cols.number(tg, "address_type")+`, `+cols.text(tg, "address_list")+` FROM xxl_job_group ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("read xxl_job_group (%s schema): %w", gen, err)
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

	schedType, schedConf, misfire := cols.text(ti, "schedule_type"), cols.text(ti, "schedule_conf"), cols.text(ti, "misfire_strategy")
	if gen == Gen20 {
		// 2.0–2.2: a job has a Quartz expression or none (an empty
		// job_cron is refused by their admin, kept safe here).
		schedType = "CASE WHEN TRIM(COALESCE(job_cron, '')) = '' THEN 'NONE' ELSE 'CRON' END"
		schedConf = "COALESCE(job_cron, '')"
		misfire = "'DO_NOTHING'"
	}
	rows, err = db.QueryContext(ctx, `SELECT id, job_group, `+cols.text(ti, "job_desc", "name")+`, `+cols.text(ti, "author")+`, `+
		cols.text(ti, "alarm_email")+`, `+schedType+`, `+schedConf+`, `+cols.text(ti, "schedule_timezone")+`, `+misfire+`,
		COALESCE(executor_route_strategy, ''), COALESCE(executor_handler, ''), COALESCE(executor_param, ''),
		COALESCE(executor_block_strategy, ''), COALESCE(executor_timeout, 0), COALESCE(executor_fail_retry_count, 0),
		COALESCE(glue_type, ''), COALESCE(glue_source, ''), COALESCE(child_jobid, ''), COALESCE(trigger_status, 0), `+
		cols.number(ti, "trigger_next_time")+`, `+cols.text(ti, "glue_remark")+`, `+cols.datetime(ti, "glue_updatetime")+`
		FROM xxl_job_info ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("read xxl_job_info (%s schema): %w", gen, err)
	}
	defer rows.Close()
	for rows.Next() {
		var j Job
		if err := rows.Scan(&j.ID, &j.GroupID, &j.Desc, &j.Author, &j.AlarmEmail, &j.ScheduleType, &j.ScheduleConf,
			&j.ScheduleTimezone, &j.MisfireStrategy, &j.RouteStrategy, &j.Handler, &j.Param, &j.BlockStrategy, &j.Timeout,
			&j.FailRetryCount, &j.GlueType, &j.GlueSource, &j.ChildJobIDs, &j.TriggerStatus, &j.TriggerNextTime,
			&j.GlueRemark, &j.GlueUpdated); err != nil {
			return nil, fmt.Errorf("read xxl_job_info: %w", err)
		}
		d.Jobs = append(d.Jobs, j)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read xxl_job_info: %w", err)
	}
	if cols["xxl_job_user"] != nil {
		if d.Users, err = readUsers(ctx, db, cols); err != nil {
			return nil, err
		}
	}
	if cols["xxl_job_logglue"] != nil {
		if d.GlueHistory, err = readGlueHistory(ctx, db, cols); err != nil {
			return nil, err
		}
	}
	return &d, nil
}

// readUsers reads xxl_job_user, without the password column.
func readUsers(ctx context.Context, db *sql.DB, cols columns) ([]User, error) {
	const u = "xxl_job_user"
	rows, err := db.QueryContext(ctx, `SELECT id, COALESCE(username, ''), `+cols.number(u, "role")+`, `+
		cols.text(u, "permission")+` FROM xxl_job_user ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("read xxl_job_user: %w", err)
	}
	defer rows.Close()
	var out []User
	for rows.Next() {
		var x User
		var role int
		if err := rows.Scan(&x.ID, &x.Username, &role, &x.Permission); err != nil {
			return nil, fmt.Errorf("read xxl_job_user: %w", err)
		}
		x.Admin = role == 1
		out = append(out, x)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read xxl_job_user: %w", err)
	}
	return out, nil
}
