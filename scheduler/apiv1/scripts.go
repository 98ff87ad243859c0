package apiv1

import "time"

// Stored scripts (docs/jobs.md, "Script jobs"): a job of handler "script"
// has its source stored by the scheduler, with versions.
//
//	GET  /api/v1/jobs/{id}/script                 → Script (the current version)
//	PUT  /api/v1/jobs/{id}/script   ScriptSave    → Script (a new version; scripts permission)
//	GET  /api/v1/jobs/{id}/script/versions        → ScriptVersionList (newest first, no sources)
//	GET  /api/v1/jobs/{id}/script/versions/{v}    → Script (that version)
//	GET  /api/v1/jobs/{id}/script/diff?from=&to=  → ScriptDiff (unified diff of two versions)
//	POST /api/v1/jobs/{id}/script/rollback ScriptRollback → Script (a new version with version v's source)

// Script is a version of a job's script with its source.
type Script struct {
	JobID     int64     `json:"job_id"`
	Version   int       `json:"version"`
	Language  string    `json:"language"`
	Source    string    `json:"source"`
	Remark    string    `json:"remark,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	CreatedBy string    `json:"created_by,omitempty"`
	// Current marks the job's current version.
	Current bool `json:"current"`
}

// ScriptSave is the body of PUT .../script. Language "" keeps the current
// one; Remark says what changed (as xxl-job's GLUE remark).
type ScriptSave struct {
	Source   string `json:"source"`
	Language string `json:"language,omitempty"`
	Remark   string `json:"remark,omitempty"`
}

// ScriptRollback is the body of POST .../script/rollback: the version
// whose source becomes a new version, remarked "rollback to vN".
type ScriptRollback struct {
	Version int `json:"version"`
}

// ScriptVersionList answers GET .../script/versions: the kept versions
// (the scheduler's --script-versions, 30 by default), newest first, their
// sources left out.
type ScriptVersionList struct {
	Current  int      `json:"current"`
	Versions []Script `json:"versions"`
}

// ScriptDiff answers GET .../script/diff: Diff is the unified diff (diff
// -u, 3 lines of context) from version From to To, "" when they are the
// same.
type ScriptDiff struct {
	From int    `json:"from"`
	To   int    `json:"to"`
	Diff string `json:"diff"`
}

// ScriptImport is the body of POST .../script/import (admin): an
// importer's history of a script job it has just created with its current
// source (xxl-job's xxl_job_logglue). Versions are older versions, oldest
// first: they become versions 1…n and the current one n+1. CurrentAt is
// when the current source was saved there.
//
//	POST /api/v1/jobs/{id}/script/import ScriptImport → ScriptVersionList
type ScriptImport struct {
	Versions  []ScriptImportVersion `json:"versions"`
	CurrentAt *time.Time            `json:"current_at,omitempty"`
}

// ScriptImportVersion is one older version of an imported script.
type ScriptImportVersion struct {
	Language  string    `json:"language"`
	Source    string    `json:"source"`
	Remark    string    `json:"remark,omitempty"`
	CreatedAt time.Time `json:"created_at,omitzero"`
}
