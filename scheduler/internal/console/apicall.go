package console

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/jetjob/jetjob/scheduler/apiv1"
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
	var rd io.Reader = http.NoBody
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("encode %s %s: %w", method, path, err)
		}
		rd = bytes.NewReader(b)
	}
	u := path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.RemoteAddr = r.RemoteAddr
	for _, h := range []string{"Cookie", "Authorization", "User-Agent"} {
		if v := r.Header.Get(h); v != "" {
			req.Header.Set(h, v)
		}
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := &recorder{header: http.Header{}}
	c.api.ServeHTTP(rec, req)
	if rec.code == 0 {
		rec.code = http.StatusOK
	}
	if rec.code < 200 || rec.code > 299 {
		e := &APIError{Status: rec.code}
		if err := json.Unmarshal(rec.body.Bytes(), &e.Doc); err != nil || e.Doc.Error == "" {
			e.Doc.Error = strings.TrimSpace(http.StatusText(rec.code) + " " + rec.body.String())
		}
		return rec.header, e
	}
	if out != nil && rec.code != http.StatusNoContent {
		if err := json.Unmarshal(rec.body.Bytes(), out); err != nil {
			return rec.header, fmt.Errorf("decode %s %s: %w", method, path, err)
		}
	}
	return rec.header, nil
}

// recorder is the http.ResponseWriter of an in-process API call.
type recorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (w *recorder) Header() http.Header { return w.header }

func (w *recorder) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

func (w *recorder) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.body.Write(b)
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
