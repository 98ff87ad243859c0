package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// ListCalendars lists the calendars the caller may read.
func (c *Client) ListCalendars(ctx context.Context) (*apiv1.CalendarList, error) {
	var out apiv1.CalendarList
	return &out, c.do(ctx, http.MethodGet, "/calendars", nil, nil, &out)
}

// GetCalendar reads one calendar.
func (c *Client) GetCalendar(ctx context.Context, name string) (*apiv1.Calendar, error) {
	var out apiv1.Calendar
	return &out, c.do(ctx, http.MethodGet, "/calendars/"+url.PathEscape(name), nil, nil, &out)
}

// PutCalendar creates or replaces calendar name.
func (c *Client) PutCalendar(ctx context.Context, name string, cal apiv1.Calendar) (*apiv1.Calendar, error) {
	var out apiv1.Calendar
	return &out, c.do(ctx, http.MethodPut, "/calendars/"+url.PathEscape(name), nil, cal, &out)
}

// DeleteCalendar removes a calendar no job names.
func (c *Client) DeleteCalendar(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodDelete, "/calendars/"+url.PathEscape(name), nil, nil, nil)
}

// BulkJobs applies one action to every job a label selector picks.
func (c *Client) BulkJobs(ctx context.Context, req apiv1.BulkRequest) (*apiv1.BulkResult, error) {
	var out apiv1.BulkResult
	return &out, c.do(ctx, http.MethodPost, "/jobs/bulk", nil, req, &out)
}
