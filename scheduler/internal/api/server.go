// Package api serves jetjob's HTTP JSON API under /api/v1 (documents in
// package apiv1), plus /healthz, /readyz and, behind a scrape token,
// /metrics.
package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/egress"
	"github.com/jetjob/jetjob/internal/runlog"
	"github.com/jetjob/jetjob/internal/scrape"
	"github.com/jetjob/jetjob/internal/supervise"
	"github.com/jetjob/jetjob/internal/version"
	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/alarm"
	"github.com/jetjob/jetjob/scheduler/internal/alerts"
	"github.com/jetjob/jetjob/scheduler/internal/auth"
	"github.com/jetjob/jetjob/scheduler/internal/backlog"
	"github.com/jetjob/jetjob/scheduler/internal/calendar"
	"github.com/jetjob/jetjob/scheduler/internal/refs"
	"github.com/jetjob/jetjob/scheduler/internal/runs"
	"github.com/jetjob/jetjob/scheduler/internal/secrets"
	"github.com/jetjob/jetjob/scheduler/internal/sso"
	"github.com/jetjob/jetjob/scheduler/internal/store"
	"github.com/jetjob/jetjob/scheduler/internal/wfengine"
	"github.com/jetjob/jetjob/scheduler/internal/workflow"
	"github.com/jetjob/jetjob/shared/schedule"
	"github.com/jetjob/jetjob/shared/wire"
)

// Config configures the API.
type Config struct {
	// Token is the bootstrap key (JETJOB_API_TOKEN): a bearer token that
	// authenticates as the admin principal "bootstrap". It is the
	// break-glass way in (first admin, lost passwords); day-to-day callers
	// use their own API keys. Empty: no bootstrap key.
	Token string
	// InsecureNoAuth makes every request the admin principal
	// "anonymous-admin" (local use only; changes are still audited).
	InsecureNoAuth bool
	// InsecureCookies drops the Secure attribute of the session cookie,
	// for dev's plain-HTTP listener.
	InsecureCookies bool
	// SessionIdle and SessionMax end a console session after this long
	// without a request, respectively after login (defaults 30m and 12h).
	SessionIdle, SessionMax time.Duration
	// Ready reports whether the scheduler can do its work (PostgreSQL and
	// NATS reachable); nil means always ready.
	Ready func(context.Context) error
	// Dependencies checks each dependency (postgresql, nats) for the
	// cluster view; nil reports Ready as one entry.
	Dependencies func(context.Context) []apiv1.Dependency
	// SchedulerID is this scheduler's instance id (the cluster view's
	// answered_by).
	SchedulerID string
	// Fire hands a manual run to the scheduler's firing path.
	Fire func(runs.Planned)
	// Gatherer serves /metrics (default: prometheus.DefaultGatherer).
	Gatherer prometheus.Gatherer
	// MetricsToken is the scrape token (package internal/scrape). Empty:
	// the API serves no /metrics (it answers 404), the metrics listener
	// does; set: /metrics answers only requests that carry it as a bearer
	// token.
	MetricsToken string
	// Logs reads run logs (required).
	Logs *runlog.Reader
	// Workers lists the live workers of a group ("" for all); required.
	Workers func(group string) []wire.WorkerInfo
	// Backlog returns the latest sample of the groups' waiting triggers;
	// nil reports only the live workers' capacity.
	Backlog func() backlog.Snapshot
	// Kill asks the workers to stop a run (required).
	Kill func(ctx context.Context, runID int64, reason string) error
	// Locks reads a key of JETJOB_LOCKS, nil without an error for a key
	// that does not exist: what a group's queue view shows (nil: every
	// key reads as missing).
	Locks func(ctx context.Context, key string) ([]byte, error)
	// Egress refuses an alarm webhook whose host is an address the
	// scheduler would never connect to, as soon as it is set (nil: the
	// default policy). The alarm sender's check at connect time is the
	// one that protects; this one only tells the user at once.
	Egress *egress.Policy
	// SendTest sends a channel's test notice ("send test"); nil answers
	// 503.
	SendTest func(ctx context.Context, ch alarm.Channel) alarm.Result
	// SSO are the identity providers users may sign in through (nil:
	// none, local passwords only).
	SSO *sso.Providers
}

// Server is the API's http.Handler.
type Server struct {
	cfg     Config
	store   *store.Store
	log     *zap.Logger
	mux     *http.ServeMux
	handler http.Handler
	logins  *auth.LoginLimiter
	now     func() time.Time
	// requests counts requests by route pattern and status (metrics.go).
	requests *prometheus.CounterVec
}

// maxBody bounds request bodies: params are at most 64 KiB, the rest small.
const maxBody = 1 << 20

// New returns the API handler.
func New(cfg Config, st *store.Store, log *zap.Logger) (*Server, error) {
	if cfg.Fire == nil {
		return nil, errors.New("api: Fire is required")
	}
	if cfg.Logs == nil || cfg.Workers == nil || cfg.Kill == nil {
		return nil, errors.New("api: Logs, Workers and Kill are required")
	}
	if cfg.Gatherer == nil {
		cfg.Gatherer = prometheus.DefaultGatherer
	}
	if cfg.Egress == nil {
		cfg.Egress = egress.Default()
	}
	if cfg.SSO == nil {
		var err error
		if cfg.SSO, err = sso.New(nil); err != nil {
			return nil, err
		}
	}
	if cfg.SessionIdle <= 0 {
		cfg.SessionIdle = 30 * time.Minute
	}
	if cfg.SessionMax <= 0 {
		cfg.SessionMax = 12 * time.Hour
	}
	s := &Server{cfg: cfg, store: st, log: log.Named("api"), mux: http.NewServeMux(),
		logins: auth.NewLoginLimiter(), now: time.Now, requests: newRequestCounter()}
	s.routes()
	// Every state-changing request from a browser must come from the
	// scheduler's own origin (Sec-Fetch-Site / Origin): a session cookie
	// alone never authorises a cross-site form or fetch. Clients that are
	// not browsers send neither header and pass.
	// The refusal is an Error document, as every other error answer.
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusForbidden, apiv1.Error{Error: "cross-origin request refused: " +
			"a browser may change state only from the scheduler's own origin"})
	}))
	s.handler = cop.Handler(s.mux)
	return s, nil
}

// allowedMethods lists the methods that have a route for r's path. The
// catch-all "/api/" pattern matches every method, so without this a known
// path with the wrong method would answer 404 instead of 405.
func (s *Server) allowedMethods(r *http.Request) []string {
	var out []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := s.mux.Handler(probe); pattern != "" && pattern != "/api/" {
			out = append(out, m)
		}
	}
	return out
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) error {
	writeJSON(w, http.StatusOK, version.OK())
	return nil
}

// metrics serves the registry behind the scrape token. Without one the
// route answers like an unknown path: metrics name groups and handlers the
// API hides from non-members, and the API's listener is the one published
// (Service, Ingress); they are on the metrics listener instead.
func (s *Server) metrics(w http.ResponseWriter, r *http.Request) error {
	if s.cfg.MetricsToken == "" {
		return &httpError{http.StatusNotFound, "no such endpoint: GET /metrics (metrics are served on the metrics listener, --metrics-listen, or here with a scrape token)"}
	}
	scrape.Handler(s.cfg.Gatherer, s.cfg.MetricsToken).ServeHTTP(w, r)
	return nil
}

// readiness is /readyz's answer: the status, why it is not ready, and
// which components are down when that is why (package internal/supervise).
type readiness struct {
	Status string           `json:"status"`
	Reason string           `json:"reason,omitempty"`
	Down   []supervise.Down `json:"down,omitempty"`
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) error {
	if s.cfg.Ready != nil {
		if err := s.cfg.Ready(r.Context()); err != nil {
			out := readiness{Status: "not ready", Reason: err.Error()}
			if de := (*supervise.DownError)(nil); errors.As(err, &de) {
				out.Down = de.Down
			}
			writeJSON(w, http.StatusServiceUnavailable, out)
			return nil
		}
	}
	writeJSON(w, http.StatusOK, readiness{Status: "ready"})
	return nil
}

// httpError is an error with the status code it answers with.
type httpError struct {
	code int
	msg  string
}

func (e *httpError) Error() string { return e.msg }

func (s *Server) handle(h func(http.ResponseWriter, *http.Request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := h(w, r)
		if err == nil {
			return
		}
		var he *httpError
		var mbe *http.MaxBytesError
		var forbidden *auth.Forbidden
		var stale *store.StaleVersionError
		var kept *store.RunKept
		var limited *auth.LimitError
		switch {
		case errors.Is(err, auth.ErrUnauthenticated), errors.Is(err, store.ErrBadCredentials):
			w.Header().Set("WWW-Authenticate", `Bearer realm="jetjob"`)
			writeJSON(w, http.StatusUnauthorized, apiv1.Error{Error: err.Error()})
		case errors.Is(err, auth.ErrHidden):
			writeJSON(w, http.StatusNotFound, apiv1.Error{Error: err.Error()})
		case errors.As(err, &forbidden):
			writeJSON(w, http.StatusForbidden, apiv1.Error{Error: err.Error(), Permission: forbidden.Permission})
		case errors.As(err, &stale):
			writeJSON(w, http.StatusConflict, apiv1.Error{Error: stale.Error(), CurrentVersion: stale.Current})
		case errors.As(err, &kept):
			writeJSON(w, http.StatusConflict, apiv1.Error{Error: kept.Error()})
		case errors.As(err, &he):
			writeJSON(w, he.code, apiv1.Error{Error: he.msg})
		case errors.As(err, &limited):
			w.Header().Set("Retry-After", strconv.Itoa(int(max(limited.RetryAfter, time.Second).Seconds())))
			writeJSON(w, http.StatusTooManyRequests, apiv1.Error{Error: limited.Error()})
		case errors.Is(err, secrets.ErrNoKey):
			writeJSON(w, http.StatusServiceUnavailable, apiv1.Error{Error: err.Error()})
		case errors.Is(err, auth.ErrHashBusy):
			w.Header().Set("Retry-After", "1")
			writeJSON(w, http.StatusServiceUnavailable, apiv1.Error{Error: err.Error()})
		case errors.As(err, &mbe):
			writeJSON(w, http.StatusRequestEntityTooLarge, apiv1.Error{Error: fmt.Sprintf("request body larger than %d bytes", mbe.Limit)})
		case errors.Is(err, errInvalid), errors.Is(err, schedule.ErrInvalid),
			errors.Is(err, refs.ErrCycle), errors.Is(err, refs.ErrUnknown), errors.Is(err, refs.ErrFanOut), errors.Is(err, refs.ErrInlineRefused), errors.Is(err, refs.ErrUnknownCalendar), errors.Is(err, calendar.ErrInvalid),
			errors.Is(err, store.ErrInvalid), errors.Is(err, workflow.ErrInvalid),
			errors.Is(err, alerts.ErrInvalid), errors.Is(err, alerts.ErrUnknownChannel):
			writeJSON(w, http.StatusBadRequest, apiv1.Error{Error: strings.TrimPrefix(err.Error(), errInvalid.Error()+": ")})
		case errors.Is(err, store.ErrNotFound), errors.Is(err, wfengine.ErrNotFound), errors.Is(err, alerts.ErrNotFound):
			writeJSON(w, http.StatusNotFound, apiv1.Error{Error: err.Error()})
		case errors.Is(err, store.ErrConflict), errors.Is(err, store.ErrRunEnded), errors.Is(err, store.ErrGroupPaused), errors.Is(err, store.ErrKeyReused),
			errors.Is(err, wfengine.ErrNotAllowed), errors.Is(err, alerts.ErrConflict), errors.Is(err, alerts.ErrManaged):
			writeJSON(w, http.StatusConflict, apiv1.Error{Error: err.Error()})
		default:
			s.log.Error("request failed", zap.String("method", r.Method), zap.String("path", r.URL.Path), zap.Error(err))
			writeJSON(w, http.StatusInternalServerError, apiv1.Error{Error: "internal error: " + err.Error()})
		}
	})
}

// docs maps records to their API documents: never nil, so that an empty
// list is [] in JSON, not null.
func docs[T, D any](xs []T, doc func(T) D) []D {
	out := make([]D, 0, len(xs))
	for _, x := range xs {
		out = append(out, doc(x))
	}
	return out
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// decode reads a JSON body strictly: unknown fields are an error, so a
// misspelt option is reported instead of silently ignored. Text that
// PostgreSQL cannot store (a NUL byte, invalid UTF-8, which encoding/json
// would silently turn into U+FFFD) is refused here, naming its field, rather
// than failing the INSERT with a 500 or being stored changed.
func decode(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		return bodyError(err)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return invalidf("request body is empty: want a JSON document")
	}
	if !utf8.Valid(body) {
		return invalidf("%s", badText(body, "is not valid UTF-8", func(raw json.RawMessage) bool { return !utf8.Valid(raw) }))
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return invalidf("malformed JSON body: %v", fieldOf(body, v, err))
	}
	if dec.More() {
		return invalidf("request body holds more than one JSON document")
	}
	// A NUL can only come in escaped; look closer only when one may be there.
	if bytes.Contains(body, []byte(`\u0000`)) {
		if msg := badText(body, "contains a NUL byte (\\u0000), which cannot be stored", hasNUL); msg != "" {
			return invalidf("%s", msg)
		}
	}
	return nil
}

// decodeOptional is decode for a body that may be left out: without one,
// v stays as it is.
func decodeOptional(w http.ResponseWriter, r *http.Request, v any) error {
	if r.ContentLength == 0 {
		return nil
	}
	return decode(w, r, v)
}

// badText names the top-level field of a JSON object whose raw value bad
// reports, as "field \"name\" <what>"; "" when none does. A body that is
// not an object is reported as a whole.
func badText(body []byte, what string, bad func(json.RawMessage) bool) string {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		if bad(body) {
			return "request body " + what
		}
		return ""
	}
	var names []string
	for k, raw := range fields {
		if bad(raw) {
			names = append(names, fmt.Sprintf("field %q %s", k, what))
		}
	}
	if len(names) == 0 && bad(body) {
		return "a field name " + what
	}
	slices.Sort(names)
	return strings.Join(names, "; ")
}

// hasNUL reports whether any string (or object key) in a JSON value holds a
// NUL byte once decoded.
func hasNUL(raw json.RawMessage) bool {
	var x any
	if err := json.Unmarshal(raw, &x); err != nil {
		return false
	}
	var walk func(any) bool
	walk = func(x any) bool {
		switch x := x.(type) {
		case string:
			return strings.ContainsRune(x, 0)
		case []any:
			return slices.ContainsFunc(x, walk)
		case map[string]any:
			for k, e := range x {
				if strings.ContainsRune(k, 0) || walk(e) {
					return true
				}
			}
		}
		return false
	}
	return walk(x)
}

// fieldOf adds the field's name to a decoding error that lacks it: errors
// from a type's own UnmarshalJSON (a bad duration) come without one. It
// decodes each top-level field alone into a fresh v to find the culprit.
func fieldOf(body []byte, v any, err error) error {
	var ute *json.UnmarshalTypeError
	var se *json.SyntaxError
	if errors.As(err, &ute) && ute.Field != "" || errors.As(err, &se) || strings.Contains(err.Error(), "unknown field") {
		return err
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) != nil {
		return err
	}
	t := reflect.TypeOf(v)
	if t.Kind() != reflect.Pointer {
		return err
	}
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		one, _ := json.Marshal(map[string]json.RawMessage{k: fields[k]})
		if ferr := json.Unmarshal(one, reflect.New(t.Elem()).Interface()); ferr != nil {
			return fmt.Errorf("field %q: %w", k, ferr)
		}
	}
	return err
}

func pathID(r *http.Request) (int64, error) {
	v := r.PathValue("id")
	id, ok := decimal(v)
	if !ok || id <= 0 {
		return 0, invalidf("id %q: want a positive integer", v)
	}
	return id, nil
}

// pathIDBody reads what a write to one record starts with: the record's
// id from the path, then the request's JSON body (decode's checks), in
// that order so a bad id is reported before the body is read.
func pathIDBody[T any](w http.ResponseWriter, r *http.Request) (int64, T, error) {
	var body T
	id, err := pathID(r)
	if err != nil {
		return 0, body, err
	}
	if err := decode(w, r, &body); err != nil {
		return 0, body, err
	}
	return id, body, nil
}

// byID answers a GET of one record: the record get finds under the
// path's id, as its document.
func byID[T, D any](get func(context.Context, int64) (T, error), doc func(T) D) func(http.ResponseWriter, *http.Request) error {
	return byIDWith(get, func(_ context.Context, v T) D { return doc(v) })
}

// byIDWith is byID for a document that reads more than the record (a
// workflow's names its nodes' jobs).
func byIDWith[T, D any](get func(context.Context, int64) (T, error), doc func(context.Context, T) D) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, err := pathID(r)
		if err != nil {
			return err
		}
		v, err := get(r.Context(), id)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, doc(r.Context(), v))
		return nil
	}
}

// queryTimes reads the optional RFC 3339 query parameters from and to
// into *from and *to, telling add of each malformed one.
func queryTimes(q url.Values, from, to *time.Time, add func(format string, args ...any)) {
	for _, p := range []struct {
		name string
		dst  *time.Time
	}{{"from", from}, {"to", to}} {
		if v := q.Get(p.name); v != "" {
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				add("%s=%q: want an RFC 3339 time such as 2026-11-22T00:00:00Z", p.name, v)
				continue
			}
			*p.dst = t
		}
	}
}

// pageParams reads the paging of a listing from the query: the position
// named cursor (0, the default: from the start) and the limit, 1 to most
// (def when not given).
func pageParams(r *http.Request, cursor string, def, most int64) (from int64, limit int, err error) {
	if from, err = queryInt(r, cursor, 0, 0, 1<<62); err != nil {
		return 0, 0, err
	}
	n, err := queryInt(r, "limit", def, 1, most)
	if err != nil {
		return 0, 0, err
	}
	return from, int(n), nil
}

// queryInt reads an optional integer query parameter within [lo, hi]
// (lo >= 0: every such parameter is a count, a cursor or an id).
func queryInt(r *http.Request, name string, def, lo, hi int64) (int64, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, ok := decimal(v)
	if !ok || n < lo || n > hi {
		return 0, invalidf("query parameter %s=%q: want an integer from %d to %d", name, v, lo, hi)
	}
	return n, nil
}
