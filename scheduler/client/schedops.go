package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// EnableJobWith enables a job, saying what happens to the fires it
// missed while disabled (req.CatchUp: policy or none).
func (c *Client) EnableJobWith(ctx context.Context, id int64, req apiv1.EnableRequest) (*apiv1.Job, error) {
	return call[apiv1.Job](ctx, c, http.MethodPost, jobPath(id)+"/enable", nil, req)
}

// DisableJobWith disables a job with a note saying why.
func (c *Client) DisableJobWith(ctx context.Context, id int64, req apiv1.DisableRequest) (*apiv1.Job, error) {
	return call[apiv1.Job](ctx, c, http.MethodPost, jobPath(id)+"/disable", nil, req)
}

// Backfill starts running a job's past fires in [req.From, req.To).
func (c *Client) Backfill(ctx context.Context, id int64, req apiv1.BackfillRequest) (*apiv1.Backfill, error) {
	return call[apiv1.Backfill](ctx, c, http.MethodPost, jobPath(id)+"/backfill", nil, req)
}

// ListBackfills lists a job's backfills, newest first.
func (c *Client) ListBackfills(ctx context.Context, jobID int64) (*apiv1.BackfillList, error) {
	return call[apiv1.BackfillList](ctx, c, http.MethodGet, jobPath(jobID)+"/backfills", nil, nil)
}

// GetBackfill reads one backfill.
func (c *Client) GetBackfill(ctx context.Context, id int64) (*apiv1.Backfill, error) {
	return call[apiv1.Backfill](ctx, c, http.MethodGet, fmt.Sprintf("/backfills/%d", id), nil, nil)
}

// CancelBackfill stops a backfill.
func (c *Client) CancelBackfill(ctx context.Context, id int64) (*apiv1.Backfill, error) {
	return call[apiv1.Backfill](ctx, c, http.MethodPost, fmt.Sprintf("/backfills/%d/cancel", id), nil, nil)
}

// ImportRuns writes finished runs of another scheduler as runs of their
// jobs (admin; at most apiv1.MaxImportedRuns a call).
func (c *Client) ImportRuns(ctx context.Context, req apiv1.RunImport) (*apiv1.RunImportResult, error) {
	return call[apiv1.RunImportResult](ctx, c, http.MethodPost, "/runs/import", nil, req)
}

// ImportStats writes another scheduler's daily run counts into the daily
// statistics where jetjob has none of its own (admin).
func (c *Client) ImportStats(ctx context.Context, req apiv1.StatsImport) (*apiv1.StatsImportResult, error) {
	return call[apiv1.StatsImportResult](ctx, c, http.MethodPost, "/stats/import", nil, req)
}

// SetGroupFlow pauses, drains or resumes a group (action: "pause",
// "drain" or "resume") with a note.
func (c *Client) SetGroupFlow(ctx context.Context, group, action string, req apiv1.GroupFlowRequest) (*apiv1.Group, error) {
	return call[apiv1.Group](ctx, c, http.MethodPost, "/groups/"+url.PathEscape(group)+"/"+url.PathEscape(action), nil, req)
}

// SetGroupLimits changes a group's cap and rate limit (the fields req
// gives).
func (c *Client) SetGroupLimits(ctx context.Context, group string, req apiv1.GroupLimitsRequest) (*apiv1.Group, error) {
	return call[apiv1.Group](ctx, c, http.MethodPatch, "/groups/"+url.PathEscape(group), nil, req)
}

// GroupQueue reads what holds and waits for a group's cap and rate limit,
// and its runs in flight.
func (c *Client) GroupQueue(ctx context.Context, group string) (*apiv1.GroupQueue, error) {
	return call[apiv1.GroupQueue](ctx, c, http.MethodGet, "/groups/"+url.PathEscape(group)+"/queue", nil, nil)
}
