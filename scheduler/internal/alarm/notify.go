package alarm

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/egress"
)

// Result is one attempt to deliver a notice on a channel.
type Result struct {
	// Code is the receiver's HTTP status (0: no answer, or email).
	Code int
	// RetryAfter is what a 429 or 503 answer asked to wait (0: nothing).
	RetryAfter time.Duration
	// Err is nil when the notice was delivered. Its text is a status code
	// or a class of failure, never what the receiver answered: it is
	// shown to everyone who may read the alert.
	Err error
}

// notifyAnswerBytes bounds how much of a receiver's answer is read: the
// chat vendors answer HTTP 200 with an error code in a small JSON object.
const notifyAnswerBytes = 64 << 10

// Notify delivers n on ch once, through the egress policy (every URL a
// channel names is a user's choice), without following redirects: a
// vendor's webhook answers where it is, and following one would turn the
// POST into a GET elsewhere. id names the delivery (the generic webhook's
// webhook-id): the same on each of its retries.
func (s *Sender) Notify(ctx context.Context, ch Channel, n *Notice, id string) Result {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	n.V = 1
	res := s.notify(ctx, ch, n, id)
	result := "sent"
	if res.Err != nil {
		result = "failed"
	}
	s.deliveries.WithLabelValues(string(ch.Kind), result).Inc()
	return res
}

func (s *Sender) notify(ctx context.Context, ch Channel, n *Notice, id string) Result {
	if err := ch.Validate(); err != nil {
		return Result{Err: err}
	}
	body, err := Render(ch, n)
	if err != nil {
		return Result{Err: err}
	}
	if ch.Kind == KindEmail {
		return s.notifyEmail(ctx, ch, n, body)
	}
	target, payload, header, err := s.request(ch, n, body, id)
	if err != nil {
		return Result{Err: err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(payload))
	if err != nil {
		return Result{Err: &webhookError{summary: "invalid channel URL", err: err}}
	}
	req.Header = header
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("User-Agent", "jetjob-alarm/1")
	log := s.log.With(zap.Int64("channel", ch.ID), zap.String("kind", string(ch.Kind)))
	resp, err := s.notifyHTTP.Do(req)
	if err != nil {
		log.Warn("channel delivery failed", zap.Error(err))
		return Result{Err: &webhookError{summary: egress.Summary(err), err: err}}
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, notifyAnswerBytes))
	res := Result{Code: resp.StatusCode}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		status := strings.TrimSpace(fmt.Sprintf("HTTP %d %s", resp.StatusCode, http.StatusText(resp.StatusCode)))
		if resp.StatusCode >= 300 && resp.StatusCode < 400 {
			status += " (redirects are not followed)"
		}
		if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
			res.RetryAfter = retryAfter(resp.Header.Get("Retry-After"), s.now())
		}
		log.Warn("channel refused the notice", zap.Int("status", resp.StatusCode))
		res.Err = &webhookError{summary: status, err: errors.New(status)}
		return res
	}
	if err := vendorAnswer(ch.Kind, answer); err != nil {
		log.Warn("channel refused the notice", zap.Error(err))
		res.Err = err
	}
	return res
}

// notifyEmail mails the notice to the channel's addresses.
func (s *Sender) notifyEmail(ctx context.Context, ch Channel, n *Notice, body string) Result {
	if s.cfg.SMTP.Host == "" {
		return Result{Err: errors.New("no SMTP server configured (JETJOB_SMTP_HOST)")}
	}
	to, err := ch.Recipients(n)
	if err != nil {
		return Result{Err: err}
	}
	m, err := message(s.cfg.SMTP.From, to, n.Title(), body+"\n")
	if err != nil {
		return Result{Err: err}
	}
	if err := s.sendMail(ctx, m); err != nil {
		s.log.Warn("channel delivery failed", zap.Int64("channel", ch.ID), zap.Error(err))
		return Result{Err: &webhookError{summary: "SMTP: " + egress.Summary(err), err: err}}
	}
	return Result{}
}

// request builds the vendor's request for a notice: its URL (DingTalk's
// carries the signature), body and headers (the generic webhook's
// signature).
func (s *Sender) request(ch Channel, n *Notice, body, id string) (string, []byte, http.Header, error) {
	h := http.Header{}
	title := n.Title()
	var v any
	target := ch.Target
	switch ch.Kind {
	case KindWebhook:
		raw, err := json.Marshal(n)
		if err != nil {
			return "", nil, nil, fmt.Errorf("encode notice: %w", err)
		}
		if err := s.signWebhook(h, ch, n, id, raw); err != nil {
			return "", nil, nil, err
		}
		return target, raw, h, nil
	case KindSlack:
		v = slackMessage(title, body, n.ConsoleLink)
	case KindTeams:
		v = teamsMessage(title, body, n.ConsoleLink)
	case KindDingTalk:
		v = map[string]any{"msgtype": "markdown", "markdown": map[string]string{"title": title, "text": "### " + title + "\n\n" + body}}
		if ch.Secret != "" {
			u, err := url.Parse(target)
			if err != nil {
				return "", nil, nil, &webhookError{summary: "invalid channel URL", err: err}
			}
			ts := strconv.FormatInt(s.now().UnixMilli(), 10)
			q := u.Query()
			q.Set("timestamp", ts)
			q.Set("sign", DingTalkSign(ch.Secret, ts))
			u.RawQuery = q.Encode()
			target = u.String()
		}
	case KindFeishu:
		m := feishuMessage(title, body, n)
		if ch.Secret != "" {
			ts := strconv.FormatInt(s.now().Unix(), 10)
			m["timestamp"], m["sign"] = ts, FeishuSign(ch.Secret, ts)
		}
		v = m
	case KindWeCom:
		v = map[string]any{"msgtype": "markdown", "markdown": map[string]string{"content": "### " + title + "\n" + body}}
	default:
		return "", nil, nil, fmt.Errorf("channel kind %q cannot be sent", ch.Kind)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return "", nil, nil, fmt.Errorf("encode %s message: %w", ch.Kind, err)
	}
	return target, raw, h, nil
}

// signWebhook signs a generic webhook's body the Standard Webhooks way:
// with the channel's own secret, else (as the per-job webhooks are) with
// the notice's group's secret derived from JETJOB_WEBHOOK_SECRET; unsigned
// when neither is set.
func (s *Sender) signWebhook(h http.Header, ch Channel, n *Notice, id string, body []byte) error {
	secret := ch.Secret
	if secret == "" && s.cfg.WebhookSecret != "" {
		var err error
		if secret, err = GroupSecret(s.cfg.WebhookSecret, n.Group); err != nil {
			return fmt.Errorf("sign (JETJOB_WEBHOOK_SECRET): %w", err)
		}
	}
	if secret == "" {
		return nil
	}
	now := s.now()
	sig, err := SignWebhook(secret, id, now, body)
	if err != nil {
		return fmt.Errorf("sign: %w", err)
	}
	h.Set(IDHeader, id)
	h.Set(TimestampHeader, strconv.FormatInt(now.Unix(), 10))
	h.Set(SignatureHeader, sig)
	return nil
}

// DingTalkSign is a DingTalk custom robot's sign for timestamp (Unix
// milliseconds): base64 of HMAC-SHA256 keyed with the secret over
// timestamp + "\n" + secret. It goes, URL-encoded, in the query with the
// timestamp.
func DingTalkSign(secret, timestamp string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(timestamp + "\n" + secret))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// FeishuSign is a Feishu / Lark custom bot's sign for timestamp (Unix
// seconds): base64 of HMAC-SHA256 keyed with timestamp + "\n" + secret
// over an empty message. It goes in the body with the timestamp.
func FeishuSign(secret, timestamp string) string {
	m := hmac.New(sha256.New, []byte(timestamp+"\n"+secret))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

func slackMessage(title, body, link string) map[string]any {
	blocks := []any{
		map[string]any{"type": "header", "text": map[string]any{"type": "plain_text", "text": truncate(title, 145), "emoji": false}},
		map[string]any{"type": "section", "text": map[string]any{"type": "mrkdwn", "text": truncateBytes(body, 2900)}},
	}
	if link != "" {
		blocks = append(blocks, map[string]any{"type": "actions", "elements": []any{map[string]any{
			"type": "button", "text": map[string]any{"type": "plain_text", "text": "Open in the console"}, "url": link}}})
	}
	// text is the fallback notifications show.
	return map[string]any{"text": title, "blocks": blocks}
}

func teamsMessage(title, body, link string) map[string]any {
	card := map[string]any{
		"$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
		"type":    "AdaptiveCard",
		"version": "1.4",
		"body": []any{
			map[string]any{"type": "TextBlock", "text": title, "weight": "Bolder", "size": "Medium", "wrap": true},
			map[string]any{"type": "TextBlock", "text": body, "wrap": true},
		},
	}
	if link != "" {
		card["actions"] = []any{map[string]any{"type": "Action.OpenUrl", "title": "Open in the console", "url": link}}
	}
	return map[string]any{"type": "message", "attachments": []any{
		map[string]any{"contentType": "application/vnd.microsoft.card.adaptive", "contentUrl": nil, "content": card}}}
}

func feishuMessage(title, body string, n *Notice) map[string]any {
	color := "red"
	switch n.Event {
	case EventRecovered, EventSucceeded:
		color = "green"
	case EventTest:
		color = "blue"
	}
	elements := []any{map[string]any{"tag": "markdown", "content": body}}
	if n.ConsoleLink != "" {
		elements = append(elements, map[string]any{"tag": "action", "actions": []any{map[string]any{
			"tag": "button", "type": "primary", "url": n.ConsoleLink,
			"text": map[string]any{"tag": "plain_text", "content": "Open in the console"}}}})
	}
	return map[string]any{"msg_type": "interactive", "card": map[string]any{
		"config":   map[string]any{"wide_screen_mode": true},
		"header":   map[string]any{"template": color, "title": map[string]any{"tag": "plain_text", "content": title}},
		"elements": elements,
	}}
}

// vendorAnswer reads the error code DingTalk, WeCom and Feishu answer with
// HTTP 200: a refused message (bad signature, a keyword missing, rate
// limit) is a failure recorded with the vendor's code alone.
func vendorAnswer(k Kind, answer []byte) error {
	var a struct {
		ErrCode    *int `json:"errcode"`
		Code       *int `json:"code"`
		StatusCode *int `json:"StatusCode"`
	}
	switch k {
	case KindDingTalk, KindWeCom:
		if json.Unmarshal(answer, &a) != nil || a.ErrCode == nil {
			return fmt.Errorf("%s: unreadable answer", k)
		}
		if *a.ErrCode != 0 {
			return fmt.Errorf("%s: errcode %d", k, *a.ErrCode)
		}
	case KindFeishu:
		if json.Unmarshal(answer, &a) != nil {
			return fmt.Errorf("%s: unreadable answer", k)
		}
		code := a.Code
		if code == nil {
			code = a.StatusCode
		}
		if code == nil {
			return fmt.Errorf("%s: unreadable answer", k)
		}
		if *code != 0 {
			return fmt.Errorf("%s: code %d", k, *code)
		}
	}
	return nil
}

// maxRetryAfter bounds what a receiver may ask to wait.
const maxRetryAfter = time.Hour

// retryAfter reads a Retry-After header: seconds or an HTTP date.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if secs, err := strconv.Atoi(v); err == nil {
		d = time.Duration(secs) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return min(max(d, 0), maxRetryAfter)
}

// ConsoleLink is the console's page of a run ("" without ConsoleURL).
func (s *Sender) ConsoleLink(runID int64) string {
	if s.cfg.ConsoleURL == "" || runID == 0 {
		return ""
	}
	return strings.TrimRight(s.cfg.ConsoleURL, "/") + fmt.Sprintf("/runs/%d", runID)
}

// Timeout bounds one delivery: what a claim's lease must outlast.
func (s *Sender) Timeout() time.Duration { return s.cfg.Timeout }

// SendTest sends a channel's test notice ("send test") now, once.
func (s *Sender) SendTest(ctx context.Context, ch Channel) Result {
	now := s.now()
	return s.Notify(ctx, ch, &Notice{Event: EventTest, Group: ch.Group, At: now, FirstAt: now},
		fmt.Sprintf("jetjob-alert-test-%d-%d", ch.ID, now.UnixNano()))
}
