package alarm

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Webhooks are signed the Standard Webhooks way
// (https://www.standardwebhooks.com): the HMAC-SHA256 covers the message id
// and the send time as well as the body, so a receiver that checks the
// timestamp refuses a captured alarm replayed later, and one that remembers
// ids refuses a replay within the tolerance too.
const (
	// IDHeader names one alarm: the same on every retry of it, so a
	// receiver can drop a delivery it has already handled.
	IDHeader = "webhook-id"
	// TimestampHeader is the send time in Unix seconds.
	TimestampHeader = "webhook-timestamp"
	// SignatureHeader is "v1,<base64 HMAC-SHA256 of id.timestamp.body>";
	// it may hold several space-separated signatures (secret rotation).
	SignatureHeader = "webhook-signature"
	// secretPrefix marks a Standard Webhooks secret: base64 of the key.
	secretPrefix = "whsec_"
	// groupSecretLabel prefixes the group name in GroupSecret's HMAC.
	groupSecretLabel = "jetjob-webhook:"
)

// Errors VerifyWebhook returns, for errors.Is.
var (
	ErrNoSignature       = errors.New("webhook: missing webhook-id, webhook-timestamp or webhook-signature header")
	ErrBadTimestamp      = errors.New("webhook: timestamp outside the tolerance (replayed or clock skew)")
	ErrSignatureMismatch = errors.New("webhook: no signature matches")
)

// webhookKey returns the HMAC key of a secret: a "whsec_" secret is the
// base64 of the key, as Standard Webhooks libraries expect; any other
// string is the key itself, as JETJOB_WEBHOOK_SECRET always was.
func webhookKey(secret string) ([]byte, error) {
	if rest, ok := strings.CutPrefix(secret, secretPrefix); ok {
		key, err := base64.StdEncoding.DecodeString(rest)
		if err != nil {
			return nil, fmt.Errorf("webhook secret starts with %s but the rest is not base64: %w", secretPrefix, err)
		}
		return key, nil
	}
	return []byte(secret), nil
}

// SignWebhook returns the webhook-signature value for a message.
func SignWebhook(secret, id string, ts time.Time, body []byte) (string, error) {
	key, err := webhookKey(secret)
	if err != nil {
		return "", err
	}
	return "v1," + base64.StdEncoding.EncodeToString(mac(key, id, ts.Unix(), body)), nil
}

func mac(key []byte, id string, ts int64, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "%s.%d.", id, ts)
	m.Write(body)
	return m.Sum(nil)
}

// VerifyWebhook checks a received alarm: its signature over id, timestamp
// and body, and that the timestamp is within tolerance of now (either way,
// so a message signed "in the future" cannot be kept for later). Receivers
// may copy it; it needs only the standard library.
func VerifyWebhook(secret string, headers http.Header, body []byte, tolerance time.Duration) error {
	id, tsText, sigs := headers.Get(IDHeader), headers.Get(TimestampHeader), headers.Get(SignatureHeader)
	if id == "" || tsText == "" || sigs == "" {
		return ErrNoSignature
	}
	ts, err := strconv.ParseInt(tsText, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: %q is not Unix seconds", ErrBadTimestamp, tsText)
	}
	if age := time.Since(time.Unix(ts, 0)); age > tolerance || age < -tolerance {
		return fmt.Errorf("%w: sent %s ago, tolerance %s", ErrBadTimestamp, age.Round(time.Second), tolerance)
	}
	key, err := webhookKey(secret)
	if err != nil {
		return err
	}
	want := mac(key, id, ts, body)
	for _, s := range strings.Fields(sigs) {
		version, sig, ok := strings.Cut(s, ",")
		if !ok || version != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(sig)
		if err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return ErrSignatureMismatch
}

// GroupSecret is the secret a group's alarms are signed with, derived
// from the master secret (JETJOB_WEBHOOK_SECRET):
//
//	"whsec_" + base64(HMAC-SHA256(master key, "jetjob-webhook:" + group))
//
// where the master key is the master secret's bytes, or for a "whsec_"
// master the bytes its base64 encodes. Each group's receivers get their
// group's secret (jetjob-scheduler webhook-secret GROUP prints it) and pass
// it to VerifyWebhook or any Standard Webhooks library: holding one group's
// secret neither verifies nor forges another group's alarms, and reveals
// nothing of the master. Changing the master changes every group's.
func GroupSecret(master, group string) (string, error) {
	key, err := webhookKey(master)
	if err != nil {
		return "", err
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(groupSecretLabel + group))
	return secretPrefix + base64.StdEncoding.EncodeToString(m.Sum(nil)), nil
}

// webhookError is a failed delivery: Error is what the attempt records,
// which every viewer of the alert reads, so it is a status code or a class of
// failure (egress.Summary) and never text the target sent; the full error
// is kept for errors.Is and for the scheduler's log.
type webhookError struct {
	summary string
	err     error
}

func (e *webhookError) Error() string { return e.summary }
func (e *webhookError) Unwrap() error { return e.err }
