package builtin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/egress"
	"github.com/jetjob/jetjob/worker"
)

const (
	// httpSnippetBytes is how much of a response body is logged and quoted.
	httpSnippetBytes = 1 << 10
	// httpDrainBytes bounds how much of the rest of a body is read so that
	// the connection can be reused.
	httpDrainBytes = 256 << 10
)

// HTTPConfig configures HTTP.
type HTTPConfig struct {
	// AllowHosts are the hosts requests may go to, by the name in the URL
	// (and in a Host header, if a job sets one): an exact host name or IP
	// ("api.example.com", "10.0.0.7"), optionally with a port
	// ("10.0.0.7:8080" allows that port only), a wildcard for subdomains
	// ("*.example.com" allows a.example.com and a.b.example.com, not
	// example.com), or "*" for any host. Empty refuses every request.
	// Redirects are followed only to allowed hosts.
	//
	// Every connection is also checked on the address it goes to, by the
	// egress policy (docs/operations.md, "Egress policy"): an exact entry
	// trusts what its name resolves to, internal addresses included (the
	// operator named that host); a wildcard or "*" reaches public
	// addresses only, unless Egress.Allow allows an internal range too. So no DNS answer
	// for a name under a wildcard, and no redirect, leads a job to the
	// worker's loopback, the metadata endpoint or the private network.
	AllowHosts []string
	// Egress is what the policy allows beyond public addresses and the
	// exact entries of AllowHosts, and the worker's own listeners, which
	// are never reached.
	Egress Egress
}

// Egress tunes the egress policy of HTTP's connections.
type Egress struct {
	// Allow lists internal targets that may be reached (jetjob-worker's
	// --egress-allow). Each entry is one of: a CIDR ("10.20.0.0/16",
	// "fd00:1::/64"), an address ("10.0.0.7"), an address and port
	// ("10.0.0.7:8080", "[fd00::7]:443"), a host name ("hooks.internal"),
	// or a host name and port ("hooks.internal:8443"). A host name is
	// matched exactly, case-insensitively, against the name connected to:
	// no wildcards (a range is a CIDR).
	Allow []string
	// Self are the listeners of this process (its /metrics, say): never
	// reached, whatever Allow says. An unspecified address (0.0.0.0, ::)
	// stands for every address of the host.
	Self []netip.AddrPort
	// Resolver resolves host names; nil: net.DefaultResolver.
	Resolver *net.Resolver
}

// httpParams is the JSON of HTTP's params.
type httpParams struct {
	Method       string            `json:"method"`
	URL          string            `json:"url"`
	Headers      map[string]string `json:"headers"`
	Body         string            `json:"body"`
	ExpectStatus []int             `json:"expect_status"`
}

// CheckAllowHosts reports the entries of an allow-list that can never
// match, so that a configuration mistake is found at start.
func CheckAllowHosts(hosts []string) error {
	var errs []error
	for _, h := range hosts {
		if err := checkAllowHost(h); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func checkAllowHost(h string) error {
	bad := func(why string) error { return fmt.Errorf("allowed host %q: %s", h, why) }
	switch {
	case h == "":
		return bad("empty")
	case h == "*":
		return nil
	case strings.Contains(h, "://") || strings.ContainsAny(h, "/?#@ "):
		return bad("want a host name, not a URL")
	case strings.HasPrefix(h, "*."):
		if strings.Contains(h[2:], "*") || len(h) == 2 {
			return bad(`a wildcard is "*." followed by a domain`)
		}
	case strings.Contains(h, "*"):
		return bad(`a wildcard is "*." followed by a domain`)
	}
	return nil
}

// exactHosts are the entries of an allow-list that name one host, as the
// egress policy's allow entries: the operator named them, so what they
// resolve to is trusted. Wildcards are left out, and so is what the
// policy cannot read (it still matches names, and grants no address).
func exactHosts(hosts []string) []string {
	var out []string
	for _, h := range hosts {
		if strings.HasPrefix(h, "*") {
			continue
		}
		if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") { // "[::1]"
			h = h[1 : len(h)-1]
		}
		if (egress.Config{Allow: []string{h}}).Validate() == nil {
			out = append(out, h)
		}
	}
	return out
}

// allowed reports whether u may be requested under hosts.
func allowed(hosts []string, u *url.URL) bool {
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	hostPort := strings.ToLower(u.Host)
	for _, a := range hosts {
		a = strings.ToLower(a)
		switch {
		case a == "*":
			return true
		case strings.HasPrefix(a, "*."):
			if strings.HasSuffix(host, a[1:]) {
				return true
			}
		case a == host || a == hostPort:
			return true
		case strings.Trim(a, "[]") == host && strings.Contains(host, ":"): // "[::1]" for IPv6
			return true
		}
	}
	return false
}

// notAllowed is the error for a host outside the allow-list.
func notAllowed(hosts []string, u *url.URL) error {
	list := "empty: every request is refused"
	if len(hosts) > 0 {
		list = strings.Join(hosts, ",")
	}
	return fmt.Errorf("http: host %q is not allowed; allow it with --http-allow-hosts / JETJOB_HTTP_ALLOW_HOSTS "+
		"(HTTPConfig.AllowHosts), currently %s", u.Host, list)
}

// checkHostHeader refuses a Host header naming a host outside the
// allow-list: it would let a job reach, on an allowed server, a virtual
// host the operator did not allow.
func checkHostHeader(hosts []string, p *httpParams) error {
	for k, v := range p.Headers {
		if !strings.EqualFold(k, "Host") {
			continue
		}
		if v == "" || strings.ContainsAny(v, "/?#@ \t") {
			return fmt.Errorf("http: Host header %q: want host or host:port", v)
		}
		if !allowed(hosts, &url.URL{Host: v}) {
			return fmt.Errorf("http: Host header %q: %w", v, notAllowed(hosts, &url.URL{Host: v}))
		}
	}
	return nil
}

// HTTP returns a handler that makes one HTTP request per run. Its params
// are a JSON object:
//
//	{"method": "POST", "url": "https://api.example.com/hook", "headers": {"Content-Type": "application/json"},
//	 "body": "{\"x\":1}", "expect_status": [200, 201]}
//
// method defaults to GET; expect_status to any 2xx. The URL's host (and a
// Host header, if set) must be in AllowHosts, and the address connected to
// must pass the egress policy (see HTTPConfig); otherwise the run fails
// without a request being sent. The response status and the first KiB of
// its body are logged to job.Logger; a status outside the expectation
// fails the run with "HTTP 503 from <url>: <body snippet>". The request is
// bound to the run's context, so the run's timeout and a kill abort it.
func HTTP(cfg HTTPConfig) worker.HandlerFunc {
	hosts := slices.Clone(cfg.AllowHosts)
	policy, err := egress.New(egress.Config{
		Allow:    append(slices.Clone(cfg.Egress.Allow), exactHosts(hosts)...),
		Self:     slices.Clone(cfg.Egress.Self),
		Resolver: cfg.Egress.Resolver,
	})
	if err != nil {
		return func(context.Context, *worker.Job) error { return fmt.Errorf("http: %w", err) }
	}
	// No timeout of its own: the run's timeout bounds each request.
	client := policy.Client(0)
	client.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if !allowed(hosts, req.URL) {
			return fmt.Errorf("redirect to %s refused: %w", req.URL.Redacted(), notAllowed(hosts, req.URL))
		}
		return policy.CheckRedirect(req, via)
	}
	return func(ctx context.Context, job *worker.Job) error {
		p, u, err := parseHTTPParams(job.Params)
		if err != nil {
			return err
		}
		if !allowed(hosts, u) {
			return notAllowed(hosts, u)
		}
		if err := checkHostHeader(hosts, p); err != nil {
			return err
		}
		return doHTTP(ctx, client, jobLogger(job), p, u)
	}
}

func parseHTTPParams(params string) (*httpParams, *url.URL, error) {
	const shape = `{"method": "GET", "url": "https://...", "headers": {...}, "body": "...", "expect_status": [200]}`
	var p httpParams
	if err := decodeParams(params, &p); err != nil {
		return nil, nil, fmt.Errorf("http: params must be a JSON object %s: %v", shape, err)
	}
	var errs []string
	if p.Method == "" {
		p.Method = http.MethodGet
	}
	p.Method = strings.ToUpper(p.Method)
	if strings.ContainsAny(p.Method, " \t\r\n") {
		errs = append(errs, fmt.Sprintf("method %q is not a valid HTTP method", p.Method))
	}
	u, err := url.Parse(p.URL)
	switch {
	case p.URL == "":
		errs = append(errs, `"url" is required`)
	case err != nil:
		errs = append(errs, fmt.Sprintf("url: %v", err))
	case u.Scheme != "http" && u.Scheme != "https":
		errs = append(errs, fmt.Sprintf("url %q: want an http or https URL", u.Redacted()))
	case u.Hostname() == "":
		errs = append(errs, fmt.Sprintf("url %q has no host", u.Redacted()))
	}
	for _, s := range p.ExpectStatus {
		if s < 100 || s > 599 {
			errs = append(errs, fmt.Sprintf("expect_status %d: want 100-599", s))
		}
	}
	for k, v := range p.Headers {
		if k == "" || strings.ContainsAny(k, " \t\r\n:") || strings.ContainsAny(v, "\r\n") {
			errs = append(errs, fmt.Sprintf("header %q: invalid name or value", k))
		}
	}
	if len(errs) > 0 {
		slices.Sort(errs)
		return nil, nil, fmt.Errorf("http: invalid params: %s", strings.Join(errs, "; "))
	}
	return &p, u, nil
}

func doHTTP(ctx context.Context, client *http.Client, log *zap.Logger, p *httpParams, u *url.URL) error {
	var body io.Reader
	if p.Body != "" {
		body = strings.NewReader(p.Body)
	}
	req, err := http.NewRequestWithContext(ctx, p.Method, u.String(), body)
	if err != nil {
		return fmt.Errorf("http: %w", err)
	}
	for k, v := range p.Headers {
		if strings.EqualFold(k, "Host") {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	target := u.Redacted()
	log.Info("HTTP request", zap.String("method", p.Method), zap.String("url", target))
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is named below, without credentials
		}
		if ctx.Err() != nil {
			return fmt.Errorf("http: %s %s: %w", p.Method, target, ctx.Err())
		}
		if errors.Is(err, egress.ErrDenied) {
			return fmt.Errorf("http: %s %s: %v (an internal address: name the host exactly in --http-allow-hosts, "+
				"or allow its range with --egress-allow / JETJOB_EGRESS_ALLOW)", p.Method, target, err)
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return fmt.Errorf("http: %s %s: timed out: %v", p.Method, target, err)
		}
		return fmt.Errorf("http: %s %s: %v", p.Method, target, err)
	}
	defer resp.Body.Close()
	head, _ := io.ReadAll(io.LimitReader(resp.Body, httpSnippetBytes))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, httpDrainBytes))
	snippet := textSnippet(head)
	lvl := zap.InfoLevel
	ok := expected(p.ExpectStatus, resp.StatusCode)
	if !ok {
		lvl = zap.WarnLevel
	}
	log.Log(lvl, "HTTP response", zap.Int("status", resp.StatusCode), zap.String("body", snippet))
	if !ok {
		return fmt.Errorf("HTTP %d from %s: %s", resp.StatusCode, target, snippet)
	}
	return nil
}

func expected(want []int, status int) bool {
	if len(want) == 0 {
		return status >= 200 && status <= 299
	}
	return slices.Contains(want, status)
}

// textSnippet renders a body prefix as text: invalid UTF-8 (binary data or
// a rune cut by the limit) becomes U+FFFD.
func textSnippet(b []byte) string {
	return strings.TrimSpace(strings.ToValidUTF8(string(b), "\uFFFD"))
}

// jobLogger is the run's logger; a Job built by hand may lack one.
func jobLogger(job *worker.Job) *zap.Logger {
	if job.Logger == nil {
		return zap.NewNop()
	}
	return job.Logger
}
