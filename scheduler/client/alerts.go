package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// ListChannels lists the alert channels the caller may see.
func (c *Client) ListChannels(ctx context.Context) ([]apiv1.Channel, error) {
	return callList[apiv1.Channel](ctx, c, "/channels", nil)
}

// GetChannel reads one channel (never its secret).
func (c *Client) GetChannel(ctx context.Context, id int64) (*apiv1.Channel, error) {
	return call[apiv1.Channel](ctx, c, http.MethodGet, fmt.Sprintf("/channels/%d", id), nil, nil)
}

// CreateChannel creates a channel.
func (c *Client) CreateChannel(ctx context.Context, ch apiv1.Channel) (*apiv1.Channel, error) {
	return call[apiv1.Channel](ctx, c, http.MethodPost, "/channels", nil, ch)
}

// UpdateChannel replaces a channel's name, target, template and secret
// (an empty Secret keeps the stored one unless ClearSecret).
func (c *Client) UpdateChannel(ctx context.Context, id int64, ch apiv1.Channel) (*apiv1.Channel, error) {
	return call[apiv1.Channel](ctx, c, http.MethodPut, fmt.Sprintf("/channels/%d", id), nil, ch)
}

// DeleteChannel deletes a channel no rule names.
func (c *Client) DeleteChannel(ctx context.Context, id int64) error {
	return c.do(ctx, http.MethodDelete, fmt.Sprintf("/channels/%d", id), nil, nil, nil)
}

// TestChannel sends a test notice on a channel now.
func (c *Client) TestChannel(ctx context.Context, id int64) (*apiv1.ChannelTest, error) {
	return call[apiv1.ChannelTest](ctx, c, http.MethodPost, fmt.Sprintf("/channels/%d/test", id), nil, nil)
}

// ListAlertRules lists the rules the caller may see.
func (c *Client) ListAlertRules(ctx context.Context) ([]apiv1.AlertRule, error) {
	return callList[apiv1.AlertRule](ctx, c, "/alert-rules", nil)
}

// CreateAlertRule creates a rule.
func (c *Client) CreateAlertRule(ctx context.Context, r apiv1.AlertRule) (*apiv1.AlertRule, error) {
	return call[apiv1.AlertRule](ctx, c, http.MethodPost, "/alert-rules", nil, r)
}

// UpdateAlertRule replaces a rule's settings and channels (its job or
// group stays).
func (c *Client) UpdateAlertRule(ctx context.Context, id int64, r apiv1.AlertRule) (*apiv1.AlertRule, error) {
	return call[apiv1.AlertRule](ctx, c, http.MethodPut, fmt.Sprintf("/alert-rules/%d", id), nil, r)
}

// DeleteAlertRule deletes a rule and its alerts.
func (c *Client) DeleteAlertRule(ctx context.Context, id int64) error {
	return c.do(ctx, http.MethodDelete, fmt.Sprintf("/alert-rules/%d", id), nil, nil, nil)
}

// MuteAlertRule silences a rule until m.Until (zero: lifts it).
func (c *Client) MuteAlertRule(ctx context.Context, id int64, m apiv1.Mute) error {
	return c.do(ctx, http.MethodPost, fmt.Sprintf("/alert-rules/%d/mute", id), nil, m, nil)
}

// ListAlerts lists alerts, newest first: open ones only with open.
func (c *Client) ListAlerts(ctx context.Context, group string, open bool, limit int) ([]apiv1.Alert, error) {
	q := url.Values{}
	if group != "" {
		q.Set("group", group)
	}
	if open {
		q.Set("state", "open")
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	return callList[apiv1.Alert](ctx, c, "/alerts", q)
}

// GetAlert reads an alert with its deliveries.
func (c *Client) GetAlert(ctx context.Context, id int64) (*apiv1.Alert, error) {
	return call[apiv1.Alert](ctx, c, http.MethodGet, fmt.Sprintf("/alerts/%d", id), nil, nil)
}

// AckAlert acknowledges an alert: it is not told again until it closes.
func (c *Client) AckAlert(ctx context.Context, id int64) error {
	return c.do(ctx, http.MethodPost, fmt.Sprintf("/alerts/%d/ack", id), nil, nil, nil)
}

// MuteAlert silences an alert until m.Until (zero: lifts it).
func (c *Client) MuteAlert(ctx context.Context, id int64, m apiv1.Mute) error {
	return c.do(ctx, http.MethodPost, fmt.Sprintf("/alerts/%d/mute", id), nil, m, nil)
}
