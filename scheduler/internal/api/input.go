package api

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"unicode"
)

// This file holds the API's checks of raw input that every endpoint shares:
// how a number is spelt, what a name may contain, and what a query string
// may look like. Each is one function so that every path asks the same
// question and answers it the same way.

// decimal parses s as a non-negative integer written in canonical decimal:
// digits only, no sign, no spaces, no leading zero (except "0" itself).
// strconv.ParseInt alone also takes "+1" and "007": one id with several
// spellings is a way past checks that compare text (a cache, an audit
// search, a proxy rule) and never what a client means to send.
func decimal(s string) (int64, bool) {
	if s == "" || len(s) > 19 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// isBidiControl reports whether r is one of Unicode's bidirectional
// formatting characters: the embeddings and overrides U+202A–U+202E, the
// isolates U+2066–U+2069, and the marks U+200E, U+200F and U+061C. In a
// name they make text display in an order other than the one stored
// ("Trojan Source"): a job that reads "backup" in the console and the CLI
// may be another.
func isBidiControl(r rune) bool {
	switch {
	case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return r == 0x200E || r == 0x200F || r == 0x061C
}

// nameProblem says what makes s unfit as a name shown to people (a job's
// name, a group's title, a user's display name, a key's name): a control
// character (a newline or escape sequence forges lines in a terminal or a
// log) or a bidirectional formatting character. "" when s is fine. Lengths
// and emptiness are each caller's to check.
func nameProblem(s string) string {
	for _, r := range s {
		switch {
		case isBidiControl(r):
			return fmt.Sprintf("contains the bidirectional formatting character U+%04X, which makes text display in another order than it is stored", r)
		case unicode.IsControl(r):
			return fmt.Sprintf("contains the control character U+%04X", r)
		}
	}
	return ""
}

// checkQuery refuses a query string that does not parse as a whole. Go's
// URL.Query() silently drops what it cannot read, a "job=7;group=b" pair
// among them (a semicolon separated pairs in old HTML forms; net/url no
// longer splits on it): the request would run without a filter the caller
// believes applies. Every route gets 400 instead.
func checkQuery(r *http.Request) error {
	if _, err := url.ParseQuery(r.URL.RawQuery); err != nil {
		return invalidf("malformed query string (separate parameters with &, never ;, and percent-encode the rest): %v", err)
	}
	return nil
}

// bufferBody reads an authenticated request's body in full, at most maxBody
// bytes, and puts it back for the permission rules (peekBody) and the
// handler to read. An oversized body answers 413 here, before any rule or
// lookup runs: whoever the caller and whatever the path's id (a foreign
// job answers exactly like a missing one), and whether the length was
// declared or the body came chunked. Unauthenticated requests never get
// here: their bodies are not read at all.
func bufferBody(w http.ResponseWriter, r *http.Request) error {
	if r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	if r.ContentLength > maxBody {
		return &http.MaxBytesError{Limit: maxBody}
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		return bodyError(err)
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	return nil
}

// bodyError classifies a failed read of a request body: over the limit
// (413), not received in time (408, see package httplimit), or cut off.
func bodyError(err error) error {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return err
	case errors.Is(err, os.ErrDeadlineExceeded):
		return &httpError{http.StatusRequestTimeout, "request body not received within the time allowed"}
	}
	return invalidf("reading request body: %v", err)
}
