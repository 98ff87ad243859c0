package console

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/i18n"
)

//go:embed templates static
var assets embed.FS

// pages are the parsed templates, once per language (each set's "t" is
// its language's catalogue): templates/layout.html and the partials once,
// then one set per page (each page defines "title" and "content").
type pages struct {
	byName map[string]*template.Template
}

// parseAll parses the pages in every language.
func parseAll() (map[i18n.Lang]*pages, error) {
	out := map[i18n.Lang]*pages{}
	for _, l := range i18n.Langs {
		p, err := parsePages(l)
		if err != nil {
			return nil, err
		}
		out[l] = p
	}
	return out, nil
}

func parsePages(l i18n.Lang) (*pages, error) {
	fm := template.FuncMap{"t": l.T}
	for k, f := range funcs {
		fm[k] = f
	}
	fm["ago"] = func(t time.Time) string { return agoIn(l, t) }
	base, err := template.New("layout.html").Funcs(fm).ParseFS(assets, "templates/layout.html", "templates/partials/*.html")
	if err != nil {
		return nil, fmt.Errorf("console: parse layout: %w", err)
	}
	names, err := fs.Glob(assets, "templates/pages/*.html")
	if err != nil {
		return nil, err
	}
	p := &pages{byName: map[string]*template.Template{}}
	for _, n := range names {
		t, err := template.Must(base.Clone()).ParseFS(assets, n)
		if err != nil {
			return nil, fmt.Errorf("console: parse %s: %w", n, err)
		}
		p.byName[strings.TrimSuffix(path.Base(n), ".html")] = t
	}
	return p, nil
}

// page is what every template gets: the layout's needs and the page's own
// Data.
type page struct {
	Title string
	// User is the signed-in user; nil on the login page.
	User *User
	// Path is the request's path, for the navigation's current entry.
	Path string
	// Query is the request's query, for links that keep the filters.
	Query url.Values
	// Notice is a one-line confirmation of a change done (notice.go),
	// Error a failure to show above the content.
	Notice, Error string
	Data          any
	// Lang is the page's language (Console.lang), set by render.
	Lang i18n.Lang
	// Langs are the languages the user menu offers.
	Langs []i18n.Lang
	// Live is how often, in seconds, the page reads itself again (0: it
	// does not): the pages an operator keeps open (livePages).
	Live int
}

// livePages are the pages that refresh by themselves, and how often: the
// script (static/console.js, "live pages") reads the page again and swaps
// its content in, unless the user paused it, is editing a form on it, or
// the tab is hidden. A run's page follows its log instead.
var livePages = map[string]int{"dashboard": 10, "runs": 10, "job": 10, "workers": 10, "backfills": 10, "cluster": 10}

// render writes page name with status code. It renders into a buffer
// first, so that a template error answers 500 instead of half a page.
func (c *Console) render(w http.ResponseWriter, r *http.Request, code int, name string, p page) error {
	p.Lang, p.Langs = c.lang(r, p.User), i18n.Langs
	t, ok := c.pages[p.Lang].byName[name]
	if !ok {
		return fmt.Errorf("console: no page %q", name)
	}
	p.Path, p.Query = r.URL.Path, r.URL.Query()
	if code == http.StatusOK {
		p.Live = livePages[name]
	}
	if p.Notice == "" {
		if n := noticeOf(r); n != "" {
			p.Notice = p.Lang.T(n)
		}
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout.html", p); err != nil {
		return fmt.Errorf("render %s: %w", name, err)
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	// Pages load only their own scripts and styles, and may not be framed
	// (clickjacking of the kill and delete buttons).
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, err := w.Write(buf.Bytes())
	return err
}

// handle turns a page handler's error into an answer: a missing or ended
// session goes to the login page (and back here after it), the API's
// 403 and 404 become error pages with the API's words, anything else 500.
func (c *Console) handle(h func(http.ResponseWriter, *http.Request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := h(w, r)
		if err == nil {
			return
		}
		var ae *APIError
		code := http.StatusInternalServerError
		msg := "internal error: " + err.Error()
		if errors.As(err, &ae) {
			code, msg = ae.Status, ae.Error()
			if code == http.StatusUnauthorized {
				next := r.URL.RequestURI()
				if r.Method != http.MethodGet {
					next = r.Header.Get("Referer")
					if u, perr := url.Parse(next); perr == nil {
						next = u.RequestURI()
					}
				}
				http.Redirect(w, r, "/login?next="+url.QueryEscape(next), http.StatusSeeOther)
				return
			}
		} else {
			c.log.Error("console page failed", zap.String("method", r.Method), zap.String("path", r.URL.Path), zap.Error(err))
		}
		u, _ := c.me(r) // the error page keeps the user menu when it can
		p := page{Title: c.lang(r, u).T(http.StatusText(code)), User: u, Data: errorPage{Code: code, Message: msg}}
		if rerr := c.render(w, r, code, "error", p); rerr != nil {
			c.log.Error("rendering the error page failed", zap.Error(rerr))
			http.Error(w, msg, code)
		}
	})
}

// errorPage is the error template's data.
type errorPage struct {
	Code    int
	Message string
}

func (c *Console) notFound(w http.ResponseWriter, r *http.Request) error {
	if _, err := c.me(r); err != nil {
		return err
	}
	return &APIError{Status: http.StatusNotFound, Doc: apiv1.Error{Error: "no such page: " + r.URL.Path}}
}

// static serves the embedded stylesheet and script.
func (c *Console) static(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Cache-Control", "public, max-age=300")
	http.FileServerFS(assets).ServeHTTP(w, r)
	return nil
}

// favicon answers the browsers' own request for /favicon.ico (made on
// every page, signed in or not) with the console's icon, so that it is
// not a 404 each time.
func (c *Console) favicon(w http.ResponseWriter, r *http.Request) error {
	icon, err := assets.ReadFile("static/favicon.svg")
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", "image/svg+xml")
	h.Set("Cache-Control", "public, max-age=86400")
	_, err = w.Write(icon)
	return err
}
