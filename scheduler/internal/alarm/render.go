package alarm

import (
	"fmt"
	"strings"
	"text/template"
	"time"
	"unicode/utf8"
)

// A channel's message body is a Go text/template over the Notice (fields
// and Title), with a default per kind in the format the vendor renders:
// markdown for DingTalk, WeCom, Feishu and Teams, Slack's mrkdwn, plain
// text for email. A channel's own template replaces the body only: the
// envelope (JSON, blocks, card, headers, signature) is built here, so a
// template can change what a message says but never make a request the
// vendor refuses.

// bodyFuncs are the functions templates may call.
var bodyFuncs = template.FuncMap{
	// time formats a time as RFC 3339 in UTC ("" for the zero time).
	"time": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format(time.RFC3339)
	},
	// trunc cuts a string to n runes, marking the cut.
	"trunc": truncate,
	// oneline replaces line breaks with spaces.
	"oneline": func(s string) string { return strings.NewReplacer("\r\n", " ", "\r", " ", "\n", " ").Replace(s) },
}

const markdownBody = `{{if eq .Event "test"}}This is a test notice from jetjob: the channel works.{{else -}}
**Job:** {{oneline .JobName}} (id {{.JobID}}, group {{.Group}})

{{if .RunID}}**Run:** {{.RunID}}, {{.Status}}, attempt {{.Attempt}}

{{end}}{{if gt .Count 1}}**Count:** {{.Count}} since {{time .FirstAt}}

{{end}}{{if .Message}}**Message:** {{trunc (oneline .Message) 500}}

{{end}}{{if .ConsoleLink}}[Open in the console]({{.ConsoleLink}}){{end}}{{end}}`

const slackBody = `{{if eq .Event "test"}}This is a test notice from jetjob: the channel works.{{else -}}
*Job:* {{oneline .JobName}} (id {{.JobID}}, group {{.Group}})
{{if .RunID}}*Run:* {{.RunID}}, {{.Status}}, attempt {{.Attempt}}
{{end}}{{if gt .Count 1}}*Count:* {{.Count}} since {{time .FirstAt}}
{{end}}{{if .Message}}*Message:* {{trunc (oneline .Message) 500}}
{{end}}{{if .ConsoleLink}}<{{.ConsoleLink}}|Open in the console>{{end}}{{end}}`

const plainBody = `{{if eq .Event "test"}}This is a test notice from jetjob: the channel works.
{{else -}}
Job:        {{oneline .JobName}} (id {{.JobID}}, group {{.Group}})
{{if .RunID}}Run:        {{.RunID}} ({{.Status}}, attempt {{.Attempt}})
{{end}}Event:      {{.Event}}
{{if gt .Count 1}}Count:      {{.Count}} since {{time .FirstAt}}
{{end}}At:         {{time .At}}
{{if .ConsoleLink}}Console:    {{.ConsoleLink}}
{{end}}
Message:
{{.Message}}
{{end}}`

// defaultBodies are the kinds' default templates, parsed once.
var defaultBodies = map[Kind]*template.Template{}

func init() {
	for _, k := range Kinds {
		src := markdownBody
		switch k {
		case KindSlack:
			src = slackBody
		case KindEmail, KindWebhook:
			src = plainBody
		}
		defaultBodies[k] = template.Must(parseBody(src))
	}
}

func parseBody(src string) (*template.Template, error) {
	t, err := template.New("body").Funcs(bodyFuncs).Option("missingkey=error").Parse(src)
	if err != nil {
		return nil, fmt.Errorf("channel template: %w", err)
	}
	return t, nil
}

// maxBody bounds a rendered body: below every vendor's limit (WeCom's
// markdown is 4,096 bytes, DingTalk's 20,000).
const maxBody = 3500

// Render is the body of n on ch: its template, or its kind's default.
func Render(ch Channel, n *Notice) (string, error) {
	t := defaultBodies[ch.Kind]
	if ch.Template != "" {
		var err error
		if t, err = parseBody(ch.Template); err != nil {
			return "", err
		}
	}
	if t == nil {
		return "", fmt.Errorf("channel kind %q has no template", ch.Kind)
	}
	var b strings.Builder
	if err := t.Execute(&b, n); err != nil {
		return "", fmt.Errorf("channel template: %w", err)
	}
	return truncateBytes(strings.TrimSpace(b.String()), maxBody), nil
}

func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}

// truncateBytes cuts s to at most n bytes on a rune boundary.
func truncateBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
