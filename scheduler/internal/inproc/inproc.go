// Package inproc makes an HTTP request to a handler in the same process
// on behalf of another request: with its credentials, client address and
// context. The console reads and writes only through the API this way, so
// that it can never show or do what the API would refuse; the API's bulk
// operations run each item through the item's own route the same way, so
// that each is authorized, validated and audited exactly as alone.
package inproc

import (
	"bytes"
	"context"
	"io"
	"net/http"
)

// Response is a handler's answer.
type Response struct {
	Code   int
	Header http.Header
	Body   []byte
}

// OK reports a 2xx answer.
func (r *Response) OK() bool { return r.Code >= 200 && r.Code <= 299 }

// Do serves method url (a path with its query) with body (nil for none,
// else JSON) by h, as from: its Cookie, Authorization and User-Agent
// headers and its client address go along.
func Do(ctx context.Context, h http.Handler, from *http.Request, method, url string, body []byte) (*Response, error) {
	var rd io.Reader = http.NoBody
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return nil, err
	}
	req.RemoteAddr = from.RemoteAddr
	for _, k := range []string{"Cookie", "Authorization", "User-Agent"} {
		if v := from.Header.Get(k); v != "" {
			req.Header.Set(k, v)
		}
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := &recorder{header: http.Header{}}
	h.ServeHTTP(rec, req)
	if rec.code == 0 {
		rec.code = http.StatusOK
	}
	return &Response{Code: rec.code, Header: rec.header, Body: rec.body.Bytes()}, nil
}

// recorder is the http.ResponseWriter of an in-process request.
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
