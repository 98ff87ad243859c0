package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// GetScript reads a script job's current script.
func (c *Client) GetScript(ctx context.Context, jobID int64) (*apiv1.Script, error) {
	return call[apiv1.Script](ctx, c, http.MethodGet, jobPath(jobID)+"/script", nil, nil)
}

// SaveScript saves a new version of a script job's script.
func (c *Client) SaveScript(ctx context.Context, jobID int64, req apiv1.ScriptSave) (*apiv1.Script, error) {
	return call[apiv1.Script](ctx, c, http.MethodPut, jobPath(jobID)+"/script", nil, req)
}

// ScriptVersions lists the kept versions of a job's script, newest first.
func (c *Client) ScriptVersions(ctx context.Context, jobID int64) (*apiv1.ScriptVersionList, error) {
	return call[apiv1.ScriptVersionList](ctx, c, http.MethodGet, jobPath(jobID)+"/script/versions", nil, nil)
}

// ScriptVersion reads version v of a job's script.
func (c *Client) ScriptVersion(ctx context.Context, jobID int64, v int) (*apiv1.Script, error) {
	return call[apiv1.Script](ctx, c, http.MethodGet, fmt.Sprintf("%s/script/versions/%d", jobPath(jobID), v), nil, nil)
}

// DiffScript is the unified diff of a job's script from version from to
// version to.
func (c *Client) DiffScript(ctx context.Context, jobID int64, from, to int) (*apiv1.ScriptDiff, error) {
	q := url.Values{"from": {strconv.Itoa(from)}, "to": {strconv.Itoa(to)}}
	return call[apiv1.ScriptDiff](ctx, c, http.MethodGet, jobPath(jobID)+"/script/diff", q, nil)
}

// RollbackScript saves version v's source as a new version.
func (c *Client) RollbackScript(ctx context.Context, jobID int64, v int) (*apiv1.Script, error) {
	return call[apiv1.Script](ctx, c, http.MethodPost, jobPath(jobID)+"/script/rollback", nil, apiv1.ScriptRollback{Version: v})
}

// ImportScript writes an importer's older versions below a script job's
// current one (admin).
func (c *Client) ImportScript(ctx context.Context, jobID int64, req apiv1.ScriptImport) (*apiv1.ScriptVersionList, error) {
	return call[apiv1.ScriptVersionList](ctx, c, http.MethodPost, jobPath(jobID)+"/script/import", nil, req)
}
