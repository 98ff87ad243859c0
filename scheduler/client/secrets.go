package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// ListSecrets lists the secrets of group ("" for every group the caller
// reads): names and versions, never values.
func (c *Client) ListSecrets(ctx context.Context, group string) ([]apiv1.Secret, error) {
	q := url.Values{}
	if group != "" {
		q.Set("group", group)
	}
	out, err := call[apiv1.SecretList](ctx, c, http.MethodGet, "/secrets", q, nil)
	if err != nil {
		return nil, err
	}
	return out.Secrets, nil
}

// GetSecret reads one secret (never its value).
func (c *Client) GetSecret(ctx context.Context, id int64) (*apiv1.Secret, error) {
	return call[apiv1.Secret](ctx, c, http.MethodGet, fmt.Sprintf("/secrets/%d", id), nil, nil)
}

// CreateSecret stores value as group's secret name.
func (c *Client) CreateSecret(ctx context.Context, group, name, value string) (*apiv1.Secret, error) {
	return call[apiv1.Secret](ctx, c, http.MethodPost, "/secrets", nil, apiv1.SecretWrite{Group: group, Name: name, Value: value})
}

// SetSecret gives a secret a new value (its next version).
func (c *Client) SetSecret(ctx context.Context, id int64, value string) (*apiv1.Secret, error) {
	return call[apiv1.Secret](ctx, c, http.MethodPut, fmt.Sprintf("/secrets/%d", id), nil, apiv1.SecretWrite{Value: value})
}

// DeleteSecret deletes a secret no job references.
func (c *Client) DeleteSecret(ctx context.Context, id int64) error {
	return c.do(ctx, http.MethodDelete, fmt.Sprintf("/secrets/%d", id), nil, nil, nil)
}
