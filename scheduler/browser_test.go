package scheduler_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/jetjob/jetjob/internal/testtier"
	"github.com/jetjob/jetjob/internal/testwait"
)

// tab is a real headless Chromium (Debian's chromium package; `make test`
// installs it through deploy/ensure-chromium.sh) driven through chromedp:
// the console's browser tests click what a user clicks and read what a
// user reads, scripts included.
type tab struct {
	t    *testing.T
	ctx  context.Context
	base string
}

// browserFailures is where a failed browser test leaves its screenshot and
// page HTML (ignored by git).
const browserFailures = "testdata/browser-failures"

// chromiumPath finds the browser the way deploy/ensure-chromium.sh does.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("JETJOB_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	testtier.Missing(t, "Chromium (none on PATH, JETJOB_CHROMIUM unset)", nil, "make ensure-chromium (or make test)")
	return ""
}

// newTab starts a browser for the test, at a 1280×900 window, opening
// pages of base (the scheduler's URL). When the test fails, the page as it
// was is saved to browserFailures and the files are named in the log. It
// skips t in the short tier.
func newTab(t *testing.T, base string) *tab {
	t.Helper()
	testtier.Needs(t, testtier.Chromium)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromiumPath(t)),
		chromedp.NoSandbox, chromedp.Headless, chromedp.WindowSize(1280, 900),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.Flag("lang", "en-US"))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	// The first action starts the browser; it must not run under a timeout
	// (that would end the browser with it).
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		cancelAlloc()
		t.Fatalf("start chromium: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	b := &tab{t: t, ctx: ctx, base: strings.TrimSuffix(base, "/")}
	t.Cleanup(b.saveOnFailure) // runs before the browser stops
	return b
}

// do runs steps, each group within a generous deadline (a loaded 2-core
// box renders slowly), and fails the test naming what failed.
func (b *tab) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 45*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.t.Fatalf("browser: %s: %v", what, err)
	}
}

// open navigates to a path of the site and waits for the page's body.
func (b *tab) open(path string) {
	b.t.Helper()
	b.do("open "+path, chromedp.Navigate(b.base+path), chromedp.WaitReady(chromedp.CSS("body")))
}

// text is the text content of the first element matching sel, waiting for
// it to be there.
func (b *tab) text(sel string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 45*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("browser: text of %s: %v", sel, err)
	}
	return s
}

// eval evaluates a JavaScript expression in the page.
func evalIn[T any](b *tab, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 45*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("browser: evaluate %s: %v", expr, err)
	}
	return v
}

// location is the page's current URL.
func (b *tab) location() string {
	b.t.Helper()
	return evalIn[string](b, "location.href")
}

// waitText waits until the text of sel contains want (the page updates
// itself) and returns the text.
func (b *tab) waitText(sel, want string, timeout time.Duration) string {
	b.t.Helper()
	var last string
	defer func() {
		if b.t.Failed() {
			b.t.Logf("browser: the last text of %s was %q", sel, last)
		}
	}()
	testwait.Eventually(b.t, timeout, fmt.Sprintf("browser: %s to show %q", sel, want), func() bool {
		last = evalIn[string](b, `(() => { const e = document.querySelector(`+jsString(sel)+`); return e ? e.textContent : ""; })()`)
		return strings.Contains(last, want)
	})
	return last
}

// waitFor waits until the JavaScript condition cond holds in the page.
func (b *tab) waitFor(what, cond string, timeout time.Duration) {
	b.t.Helper()
	testwait.Eventually(b.t, timeout, fmt.Sprintf("browser: %s (%s)", what, cond), func() bool { return evalIn[bool](b, cond) })
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

// screenshot saves a PNG of the page as it is now.
func (b *tab) screenshot(path string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 45*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("browser: screenshot: %v", err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// saveOnFailure keeps the page of a failed test: a screenshot and its HTML.
func (b *tab) saveOnFailure() {
	if !b.t.Failed() {
		return
	}
	if err := os.MkdirAll(browserFailures, 0o755); err != nil {
		b.t.Logf("browser failure files: %v", err)
		return
	}
	stem := filepath.Join(browserFailures, unsafeName.ReplaceAllString(b.t.Name(), "_")+"-"+time.Now().Format("150405"))
	if abs, err := filepath.Abs(stem); err == nil {
		stem = abs
	}
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	if png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)); err == nil {
		if err := os.WriteFile(stem+".png", png, 0o644); err == nil {
			b.t.Logf("browser screenshot at failure: %s", stem+".png")
		}
	}
	if html, err := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("html"))); err == nil {
		url, _ := chromedp.Run(ctx, chromedp.Location())
		if err := os.WriteFile(stem+".html", []byte("<!-- "+url+" -->\n"+html), 0o644); err == nil {
			b.t.Logf("browser page HTML at failure: %s", stem+".html")
		}
	}
}
