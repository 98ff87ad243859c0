package client

import (
	"context"
	"fmt"
	"net/http"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// EnableJobWith enables a job, saying what happens to the fires it
// missed while disabled (req.CatchUp: policy or none).
func (c *Client) EnableJobWith(ctx context.Context, id int64, req apiv1.EnableRequest) (*apiv1.Job, error) {
	var out apiv1.Job
	if err := c.do(ctx, http.MethodPost, jobPath(id)+"/enable", nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DisableJobWith disables a job with a note saying why.
func (c *Client) DisableJobWith(ctx context.Context, id int64, req apiv1.DisableRequest) (*apiv1.Job, error) {
	var out apiv1.Job
	if err := c.do(ctx, http.MethodPost, jobPath(id)+"/disable", nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Backfill starts running a job's past fires in [req.From, req.To).
func (c *Client) Backfill(ctx context.Context, id int64, req apiv1.BackfillRequest) (*apiv1.Backfill, error) {
	var out apiv1.Backfill
	if err := c.do(ctx, http.MethodPost, jobPath(id)+"/backfill", nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListBackfills lists a job's backfills, newest first.
func (c *Client) ListBackfills(ctx context.Context, jobID int64) (*apiv1.BackfillList, error) {
	var out apiv1.BackfillList
	if err := c.do(ctx, http.MethodGet, jobPath(jobID)+"/backfills", nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetBackfill reads one backfill.
func (c *Client) GetBackfill(ctx context.Context, id int64) (*apiv1.Backfill, error) {
	var out apiv1.Backfill
	if err := c.do(ctx, http.MethodGet, fmt.Sprintf("/backfills/%d", id), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// CancelBackfill stops a backfill.
func (c *Client) CancelBackfill(ctx context.Context, id int64) (*apiv1.Backfill, error) {
	var out apiv1.Backfill
	if err := c.do(ctx, http.MethodPost, fmt.Sprintf("/backfills/%d/cancel", id), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
