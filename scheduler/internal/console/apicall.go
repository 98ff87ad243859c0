package console

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/inproc"
)

// APIError is a non-2xx answer of the API: its status and document.
type APIError struct {
	Status int
	Doc    apiv1.Error
}

func (e *APIError) Error() string {
	if e.Doc.Permission != "" && !strings.Contains(e.Doc.Error, e.Doc.Permission) {
		return fmt.Sprintf("%s (needs %s)", e.Doc.Error, e.Doc.Permission)
	}
	return e.Doc.Error
}

// call makes an API request in-process on behalf of the browser's request
// r: with r's credentials (cookie, or Authorization for a script), its
// client address (for the audit log and the login limiter) and its
// context. A non-nil body is sent as JSON; a 2xx answer is decoded into
// out (when not nil); anything else is an *APIError. The answer's headers
// are returned for the few callers that pass some on (login's cookie).
func (c *Console) call(r *http.Request, method, path string, query url.Values, body, out any) (http.Header, error) {
	return c.callCtx(r.Context(), r, method, path, query, body, out)
}

func (c *Console) callCtx(ctx context.Context, r *http.Request, method, path string, query url.Values, body, out any) (http.Header, error) {
	var b []byte
	if body != nil {
		var err error
		if b, err = json.Marshal(body); err != nil {
			return nil, fmt.Errorf("encode %s %s: %w", method, path, err)
		}
	}
	u := path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	resp, err := inproc.Do(ctx, c.api, r, method, u, b)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if !resp.OK() {
		e := &APIError{Status: resp.Code}
		if err := json.Unmarshal(resp.Body, &e.Doc); err != nil || e.Doc.Error == "" {
			e.Doc.Error = strings.TrimSpace(http.StatusText(resp.Code) + " " + string(resp.Body))
		}
		return resp.Header, e
	}
	if out != nil && resp.Code != http.StatusNoContent {
		if err := json.Unmarshal(resp.Body, out); err != nil {
			return resp.Header, fmt.Errorf("decode %s %s: %w", method, path, err)
		}
	}
	return resp.Header, nil
}

// groupNames lists the names of the groups the user may read (GET
// /api/v1/groups): the choices of a page's group filter.
func (c *Console) groupNames(r *http.Request) ([]string, error) {
	var gl apiv1.GroupList
	if _, err := c.call(r, http.MethodGet, "/api/v1/groups", nil, nil, &gl); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(gl.Groups))
	for _, g := range gl.Groups {
		out = append(out, g.Name)
	}
	return out, nil
}
