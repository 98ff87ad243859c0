package console

import (
	"strings"
	"testing"
)

// redirectVectors are destinations that lead a browser off the site, or
// that some layer might decode into one: each must be refused.
var redirectVectors = []string{
	"//evil.example", "///evil.example", "////evil.example/x", `/\evil.example`, `/\/evil.example`, `\\evil.example`,
	`\/evil.example`, "/\t/evil.example", "/\n/evil.example", "/\r\n/evil.example", "/\x00/evil.example",
	"/\x7f/evil.example", "/%09/evil.example", "/%0a/evil.example", "/%2F/evil.example", "/%2f%2fevil.example",
	"/%5Cevil.example", "/%5C%5Cevil.example", "%2F%2Fevil.example", "https://evil.example", "http:evil.example",
	"//evil.example@127.0.0.1", "https:/evil.example", "javascript:alert(1)", "JaVaScRiPt:alert(1)",
	"data:text/html,<script>alert(1)</script>", "evil.example", "./evil.example", "../evil.example",
	" //evil.example", "\t//evil.example", "?x=//evil.example", "#//evil.example",
	"/ok?x=%zz", "/ok?a=1;b=2", "/" + strings.Repeat("a", maxLocalPath),
}

func TestLocalPathRefusesOtherSites(t *testing.T) {
	for _, raw := range redirectVectors {
		if got, ok := localPath(raw); ok {
			t.Errorf("localPath(%q) = %q, want refused", raw, got)
		}
	}
}

func TestLocalPathKeepsPathsOfThisSite(t *testing.T) {
	for raw, want := range map[string]string{
		"/":                            "/",
		"/jobs":                        "/jobs",
		"/jobs?group=a":                "/jobs?group=a",
		"/jobs?q=a%2Fb&group=a":        "/jobs?group=a&q=a%2Fb", // re-encoded, sorted
		"/runs/12#log":                 "/runs/12",              // no fragment
		"/.//evil.example":             "/evil.example",         // a path here, cleaned
		"/x/../..//evil.example":       "/evil.example",
		"/%2e%2e//evil.example":        "/evil.example",
		"/@evil.example":               "/@evil.example",
		"/ /evil.example":              "/%20/evil.example",
		"/jobs/7/edit?back=%2F%2Fevil": "/jobs/7/edit?back=%2F%2Fevil", // a parameter, not a destination
	} {
		if got, ok := localPath(raw); !ok || got != want {
			t.Errorf("localPath(%q) = %q, %v; want %q", raw, got, ok, want)
		}
	}
	// The login page's destination: never the login page itself.
	for raw, want := range map[string]string{"/login": "/", "/login?next=/jobs": "/", "/jobs": "/jobs", "//evil.example": "/"} {
		if got := safeNext(raw); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", raw, got, want)
		}
	}
}

// RedirectVectors are redirectVectors for the package's black-box tests.
var RedirectVectors = redirectVectors
