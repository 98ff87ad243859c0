package xxljob

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// GlueVersion is one row of xxl_job_logglue: a GLUE job's source as it
// was before an edit (xxl-job's admin writes the old source there on each
// save and keeps the last 30).
type GlueVersion struct {
	ID       int64
	JobID    int64
	GlueType string
	Source   string
	Remark   string
	// Updated is update_time (else add_time), the admin's wall clock.
	Updated string
}

// readGlueHistory reads xxl_job_logglue, oldest first per job.
func readGlueHistory(ctx context.Context, db *sql.DB, cols columns) (map[int64][]GlueVersion, error) {
	const t = "xxl_job_logglue"
	at := "''"
	switch {
	case cols.has(t, "update_time") && cols.has(t, "add_time"):
		at = "COALESCE(DATE_FORMAT(COALESCE(`update_time`, `add_time`), '%Y-%m-%d %H:%i:%s'), '')"
	case cols.has(t, "update_time"):
		at = cols.datetime(t, "update_time")
	case cols.has(t, "add_time"):
		at = cols.datetime(t, "add_time")
	}
	rows, err := db.QueryContext(ctx, `SELECT id, job_id, `+cols.text(t, "glue_type")+`, `+cols.text(t, "glue_source")+`, `+
		cols.text(t, "glue_remark")+`, `+at+` FROM xxl_job_logglue ORDER BY job_id, id`)
	if err != nil {
		return nil, fmt.Errorf("read xxl_job_logglue: %w", err)
	}
	defer rows.Close()
	out := map[int64][]GlueVersion{}
	for rows.Next() {
		var v GlueVersion
		if err := rows.Scan(&v.ID, &v.JobID, &v.GlueType, &v.Source, &v.Remark, &v.Updated); err != nil {
			return nil, fmt.Errorf("read xxl_job_logglue: %w", err)
		}
		out[v.JobID] = append(out[v.JobID], v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read xxl_job_logglue: %w", err)
	}
	return out, nil
}

// glueLanguages are the script languages of the GLUE types: xxl-job's
// GlueTypeEnum (GLUE_PWSH, PowerShell 7, runs as powershell with the
// worker's --script-interpreters powershell=pwsh).
var glueLanguages = map[string]string{
	"GLUE_SHELL":      "bash",
	"GLUE_PYTHON":     "python3",
	"GLUE_PYTHON2":    "python2",
	"GLUE_PHP":        "php",
	"GLUE_NODEJS":     "nodejs",
	"GLUE_POWERSHELL": "powershell",
	"GLUE_PWSH":       "powershell",
}

// adminTime reads a DATETIME of the admin's ("" or unreadable: zero) in
// the zone the import checked.
func adminTime(s string, loc *time.Location) time.Time {
	if s == "" || loc == nil {
		return time.Time{}
	}
	t, err := time.ParseInLocation(time.DateTime, s, loc)
	if err != nil {
		return time.Time{}
	}
	return t
}

// scriptHistory is what the import sends of a GLUE job's history: its
// xxl_job_logglue rows of a script glue type as older versions, and when
// its current source was saved (glue_updatetime).
func scriptHistory(j Job, old []GlueVersion, loc *time.Location) apiv1.ScriptImport {
	var imp apiv1.ScriptImport
	for _, v := range old {
		lang, ok := glueLanguages[v.GlueType]
		if !ok {
			lang = glueLanguages[j.GlueType] // a row of a type since changed: the job's language
		}
		imp.Versions = append(imp.Versions, apiv1.ScriptImportVersion{Language: lang, Source: v.Source,
			Remark: v.Remark, CreatedAt: adminTime(v.Updated, loc)})
	}
	if t := adminTime(j.GlueUpdated, loc); !t.IsZero() {
		imp.CurrentAt = &t
	}
	return imp
}
