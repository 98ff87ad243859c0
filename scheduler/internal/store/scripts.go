package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/shared/wire"
)

// DefaultScriptVersions is how many versions of a script are kept, as
// xxl-job keeps 30 of a GLUE job's (GlueTypeEnum's backup count).
const DefaultScriptVersions = 30

// WithScriptVersions sets how many versions of each script are kept
// (0: DefaultScriptVersions); older ones are pruned when a version is
// saved.
func WithScriptVersions(n int) Option {
	return func(s *Store) { s.scriptVersions = n }
}

func (s *Store) keepVersions() int {
	if s.scriptVersions <= 0 {
		return DefaultScriptVersions
	}
	return s.scriptVersions
}

// ScriptVersion is one stored version of a job's script.
type ScriptVersion struct {
	JobID     int64
	Version   int
	Language  string
	Source    string
	Remark    string
	CreatedAt time.Time
	CreatedBy string
}

// ErrNotScript refuses a script operation on a job that is not a script
// job.
var ErrNotScript = fmt.Errorf("not a script job: %w", ErrInvalid)

func (j *Job) scriptLanguage() string {
	if j.Script == nil {
		return ""
	}
	return j.Script.Language
}

func (j *Job) scriptVersion() int {
	if j.Script == nil {
		return 0
	}
	return j.Script.Version
}

// scriptChanged reports whether an edit's script (next) differs from the
// stored one (cur): a new version is then saved. A nil next keeps cur.
func scriptChanged(cur, next *wire.Script) bool {
	if next == nil {
		return false
	}
	return cur == nil || cur.Language != next.Language || cur.Source != next.Source
}

// scriptAudit is a script version as the audit log keeps it.
type scriptAudit struct {
	Version  int    `json:"version"`
	Language string `json:"language"`
	Source   string `json:"source"`
	Remark   string `json:"remark,omitempty"`
}

// saveScriptVersion saves source in language as the next version of job
// id's script (locked in tx by the caller, or new), makes it the job's
// current one and prunes the versions past the scheduler's count. It does
// not write the job's audit entry: its caller's does.
func (s *Store) saveScriptVersion(ctx context.Context, tx pgx.Tx, a Actor, id int64, language, source, remark string) (*wire.Script, error) {
	var v int
	err := tx.QueryRow(ctx, `INSERT INTO job_script_versions (job_id, version, language, source, remark, created_by)
		SELECT $1, COALESCE(max(version), 0) + 1, $2, $3, $4, $5 FROM job_script_versions WHERE job_id = $1
		RETURNING version`, id, language, source, remark, a.Name).Scan(&v)
	if err != nil {
		return nil, fmt.Errorf("save version of job %d's script: %w", id, err)
	}
	if _, err := tx.Exec(ctx, `UPDATE jobs SET script_language = $2, script_version = $3, script_source = $4 WHERE id = $1`,
		id, language, v, source); err != nil {
		return nil, fmt.Errorf("make version %d job %d's script: %w", v, id, err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM job_script_versions WHERE job_id = $1 AND version <= $2`, id, v-s.keepVersions()); err != nil {
		return nil, fmt.Errorf("prune job %d's old script versions: %w", id, err)
	}
	return &wire.Script{Language: language, Version: v, Source: source}, nil
}

// SaveScript saves source as a new version of script job id's script
// (language "" keeps the current one), records script.save by a, and
// re-plans the job as an edit does: runs planned ahead with the old
// version are removed, so every fire after the commit runs the new one.
func (s *Store) SaveScript(ctx context.Context, a Actor, id int64, language, source, remark string) (Job, error) {
	return s.writeScript(ctx, a, id, "script.save", func(cur Job) (string, string, string, error) {
		if language == "" {
			language = cur.Script.Language
		}
		return language, source, remark, nil
	})
}

// RollbackScript saves version v of job id's script as a new version,
// remark "rollback to vN", recorded as script.rollback.
func (s *Store) RollbackScript(ctx context.Context, a Actor, id int64, v int) (Job, error) {
	return s.writeScript(ctx, a, id, "script.rollback", func(cur Job) (string, string, string, error) {
		old, err := s.scriptVersion(ctx, s.pool, id, v)
		if err != nil {
			return "", "", "", err
		}
		return old.Language, old.Source, fmt.Sprintf("rollback to v%d", v), nil
	})
}

// lockScriptJob locks job id's row (lockJob) for a script operation, and
// refuses a job that is not a script job (ErrNotScript).
func lockScriptJob(ctx context.Context, tx pgx.Tx, id int64) (Job, error) {
	cur, err := lockJob(ctx, tx, id)
	if err != nil {
		return Job{}, err
	}
	if cur.Script == nil {
		return Job{}, fmt.Errorf("job %d (handler %s): %w", id, cur.Handler, ErrNotScript)
	}
	return cur, nil
}

// writeScript is SaveScript's and RollbackScript's transaction: lock the
// job, check it is a script job, re-plan it, save what next says.
func (s *Store) writeScript(ctx context.Context, a Actor, id int64, action string,
	next func(cur Job) (language, source, remark string, err error)) (Job, error) {
	var out Job
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		cur, err := lockScriptJob(ctx, tx, id)
		if err != nil {
			return err
		}
		language, source, remark, err := next(cur)
		if err != nil {
			return err
		}
		before := scriptAudit{Version: cur.Script.Version, Language: cur.Script.Language, Source: cur.Script.Source}
		// The job's own row as an edit rewrites it: version + 1, planned
		// runs removed and re-planned.
		j := cur
		if out, err = updateJobRow(ctx, tx, &j); err != nil {
			return err
		}
		if out.Script, err = s.saveScriptVersion(ctx, tx, a, id, language, source, remark); err != nil {
			return err
		}
		after := scriptAudit{Version: out.Script.Version, Language: language, Source: source, Remark: remark}
		return writeAudit(ctx, tx, a, action, JobTarget(id), out.Group, before, after)
	})
	if err != nil {
		return out, fmt.Errorf("%s of job %d: %w", action, id, err)
	}
	return out, nil
}

// ScriptVersions returns job id's stored script versions, newest first,
// without their sources.
func (s *Store) ScriptVersions(ctx context.Context, id int64) ([]ScriptVersion, error) {
	rows, _ := s.pool.Query(ctx, `SELECT job_id, version, language, '', remark, created_at, created_by
		FROM job_script_versions WHERE job_id = $1 ORDER BY version DESC`, id)
	vs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ScriptVersion, error) { return scanScriptVersion(r) })
	if err != nil {
		return nil, fmt.Errorf("read job %d's script versions: %w", id, err)
	}
	return vs, nil
}

// GetScriptVersion returns version v of job id's script.
func (s *Store) GetScriptVersion(ctx context.Context, id int64, v int) (ScriptVersion, error) {
	return s.scriptVersion(ctx, s.pool, id, v)
}

func (s *Store) scriptVersion(ctx context.Context, q querier, id int64, v int) (ScriptVersion, error) {
	sv, err := scanScriptVersion(q.QueryRow(ctx, `SELECT job_id, version, language, source, remark, created_at, created_by
		FROM job_script_versions WHERE job_id = $1 AND version = $2`, id, v))
	if errors.Is(err, pgx.ErrNoRows) {
		return sv, fmt.Errorf("version %d of job %d's script (kept: the last %d): %w", v, id, s.keepVersions(), ErrNotFound)
	}
	if err != nil {
		return sv, fmt.Errorf("read version %d of job %d's script: %w", v, id, err)
	}
	return sv, nil
}

func scanScriptVersion(row pgx.Row) (ScriptVersion, error) {
	var v ScriptVersion
	err := row.Scan(&v.JobID, &v.Version, &v.Language, &v.Source, &v.Remark, &v.CreatedAt, &v.CreatedBy)
	return v, err
}

// ImportScriptVersions writes versions older than a script job's first
// (an importer's history, oldest first; a zero CreatedAt is now) below its
// current version: the job's versions are renumbered so that the imported
// ones come first, in their order, and the current one stays current,
// saved at currentAt when it is not zero. It is for a job just created by
// an importer with its current source; versions past the scheduler's
// count are pruned.
func (s *Store) ImportScriptVersions(ctx context.Context, a Actor, id int64, old []ScriptVersion, currentAt time.Time) (Job, error) {
	var out Job
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		cur, err := lockScriptJob(ctx, tx, id)
		if err != nil {
			return err
		}
		n := len(old)
		// In two steps: the primary key is checked row by row, so a
		// shift by n could collide with a row not yet shifted.
		for _, shift := range []string{`version + 1000000000`, `version - 1000000000 + $2`} {
			if _, err := tx.Exec(ctx, `UPDATE job_script_versions SET version = `+shift+` WHERE job_id = $1 AND $2 >= 0`, id, n); err != nil {
				return fmt.Errorf("renumber job %d's script versions: %w", id, err)
			}
		}
		for i, v := range old {
			if _, err := tx.Exec(ctx, `INSERT INTO job_script_versions (job_id, version, language, source, remark, created_at, created_by)
				VALUES ($1, $2, $3, $4, $5, COALESCE($6, now()), $7)`, id, i+1, v.Language, v.Source, v.Remark, nilIfZero(v.CreatedAt), a.Name); err != nil {
				return fmt.Errorf("import version %d of job %d's script: %w", i+1, id, err)
			}
		}
		top := cur.Script.Version + n
		if !currentAt.IsZero() {
			if _, err := tx.Exec(ctx, `UPDATE job_script_versions SET created_at = $3 WHERE job_id = $1 AND version = $2`, id, top, currentAt); err != nil {
				return fmt.Errorf("date job %d's current script version: %w", id, err)
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE jobs SET script_version = $2 WHERE id = $1`, id, top); err != nil {
			return fmt.Errorf("renumber job %d's script: %w", id, err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM job_script_versions WHERE job_id = $1 AND version <= $2`, id, top-s.keepVersions()); err != nil {
			return fmt.Errorf("prune job %d's old script versions: %w", id, err)
		}
		if out, err = lockJob(ctx, tx, id); err != nil {
			return err
		}
		return writeAudit(ctx, tx, a, "script.import", JobTarget(id), out.Group, nil, map[string]int{"versions": n, "current": top})
	})
	if err != nil {
		return out, fmt.Errorf("import script versions of job %d: %w", id, err)
	}
	return out, nil
}

// MaxRemarkLen bounds a version's remark (characters).
const MaxRemarkLen = 500

// CheckScript reports why a script's source or a version's remark cannot
// be stored: the source at most wire.MaxScriptBytes of UTF-8 without NUL
// (it is written to a file and run), the remark one line of at most
// MaxRemarkLen characters.
func CheckScript(source, remark string) error {
	var errs []string
	switch {
	case len(source) > wire.MaxScriptBytes:
		errs = append(errs, fmt.Sprintf("script is %d bytes, more than the limit of %d (64 KiB)", len(source), wire.MaxScriptBytes))
	case !utf8.ValidString(source) || strings.ContainsRune(source, 0):
		errs = append(errs, "script must be UTF-8 text without NUL bytes")
	}
	if utf8.RuneCountInString(remark) > MaxRemarkLen || strings.ContainsFunc(remark, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		errs = append(errs, fmt.Sprintf("script_remark: one line of at most %d characters", MaxRemarkLen))
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}
