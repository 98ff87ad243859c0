package console

import (
	"net/url"
	"path"
	"strings"
)

// maxLocalPath bounds a destination carried in a form or a link.
const maxLocalPath = 2048

// localPath is the one check of a destination the console sends a browser
// to after a form (the login's next, a job action's back): raw, parsed and
// written anew, when it is a path of this site; ok false for anything else.
//
// Browsers are lenient where Go is strict: they drop tabs and newlines
// anywhere in a URL ("/\t/evil" becomes "//evil"), read a backslash as a
// slash ("/\evil"), and take "//evil" as another host. So the raw text
// must start with exactly one "/", followed by neither "/" nor "\", and
// hold no control character or backslash anywhere; its decoded path must
// keep those promises too ("/%2F/evil", "/%09/evil", "/%5Cevil"), since
// something along the way may decode it. What is sent back is the cleaned
// path and the re-encoded query, never the text as given (no fragment, no
// "/./" or "/../" segments).
func localPath(raw string) (string, bool) {
	if raw == "" || len(raw) > maxLocalPath || raw[0] != '/' || strings.HasPrefix(raw, "//") || unsafePathText(raw) {
		return "", false
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" ||
		!strings.HasPrefix(u.Path, "/") || strings.HasPrefix(u.Path, "//") || unsafePathText(u.Path) {
		return "", false
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return "", false
	}
	return (&url.URL{Path: path.Clean(u.Path), RawQuery: q.Encode()}).String(), true
}

// unsafePathText reports a control character (browsers drop or mangle
// them) or a backslash (browsers read it as a slash).
func unsafePathText(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '\\' || (r >= 0x80 && r < 0xa0) })
}
