package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// SSOInfo lists the identity providers the scheduler signs users in
// through.
func (c *Client) SSOInfo(ctx context.Context) (*apiv1.SSOInfo, error) {
	return call[apiv1.SSOInfo](ctx, c, http.MethodGet, "/sso", nil, nil)
}

// SSOStart starts a sign-in at provider whose answer goes to redirectURI
// (a CLI's loopback address).
func (c *Client) SSOStart(ctx context.Context, provider, redirectURI string) (*apiv1.SSOStarted, error) {
	return call[apiv1.SSOStarted](ctx, c, http.MethodPost, "/sso/"+url.PathEscape(provider)+"/start", nil,
		apiv1.SSOStart{RedirectURI: redirectURI})
}

// SSOKey redeems a loopback sign-in's answer for an API key.
func (c *Client) SSOKey(ctx context.Context, provider string, in apiv1.SSOCallback) (*apiv1.CreatedKey, error) {
	return call[apiv1.CreatedKey](ctx, c, http.MethodPost, "/sso/"+url.PathEscape(provider)+"/key", nil, in)
}

// SSODevice starts a device authorization at provider.
func (c *Client) SSODevice(ctx context.Context, provider string) (*apiv1.SSODevice, error) {
	return call[apiv1.SSODevice](ctx, c, http.MethodPost, "/sso/"+url.PathEscape(provider)+"/device", nil, nil)
}

// SSODevicePoll asks once whether the user finished a device
// authorization: the key when they did, else the pending answer.
func (c *Client) SSODevicePoll(ctx context.Context, provider string, in apiv1.SSODevicePoll) (*apiv1.CreatedKey, *apiv1.SSOPending, error) {
	var raw json.RawMessage
	resp, err := c.send(ctx, http.MethodPost, "/sso/"+url.PathEscape(provider)+"/device/key", nil, in, &raw)
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode == http.StatusAccepted {
		var p apiv1.SSOPending
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, nil, fmt.Errorf("client: decoding a pending device authorization: %w", err)
		}
		return nil, &p, nil
	}
	var k apiv1.CreatedKey
	if err := json.Unmarshal(raw, &k); err != nil {
		return nil, nil, fmt.Errorf("client: decoding the device sign-in's key: %w", err)
	}
	return &k, nil, nil
}
