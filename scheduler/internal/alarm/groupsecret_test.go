package alarm

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"testing"
	"time"
)

// documentedGroupSecret derives a group's webhook secret the way
// docs/jobs.md tells receivers to ("Verifying alarm webhooks"), written
// out here rather than calling the package, so that the test holds the
// package to the documentation.
func documentedGroupSecret(t *testing.T, master, group string) string {
	t.Helper()
	key := []byte(master)
	if rest, ok := cutWhsec(master); ok {
		var err error
		if key, err = base64.StdEncoding.DecodeString(rest); err != nil {
			t.Fatal(err)
		}
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte("jetjob-webhook:" + group))
	return "whsec_" + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

func cutWhsec(s string) (string, bool) {
	if len(s) > 6 && s[:6] == "whsec_" {
		return s[6:], true
	}
	return "", false
}

// Each group's alarms are signed with the group's own secret, derived from
// JETJOB_WEBHOOK_SECRET: a receiver holding one group's secret verifies
// that group's alarms and cannot verify (nor forge) another group's, nor
// does the master secret itself verify. The body-only X-Jetjob-Signature,
// which had no timestamp and one key for every group, is no longer sent.
func TestWebhookSignedPerGroup(t *testing.T) {
	for _, master := range []string{"s3cret", "whsec_" + base64.StdEncoding.EncodeToString([]byte("a 24-byte key of random!"))} {
		t.Run(master, func(t *testing.T) {
			a := testAlarm() // group billing
			billing := documentedGroupSecret(t, master, "billing")
			rc := startReceiver(t, billing, time.Minute)
			s := newSender(t, Config{WebhookSecret: master})
			if err := webhookTo(s, rc.srv.URL, a); err != nil {
				t.Fatalf("delivery to a receiver holding billing's secret: %v (%v)", err, rc.lastError())
			}
			rc.mu.Lock()
			h, body := rc.last, rc.body
			rc.mu.Unlock()
			if v := h.Get("X-Jetjob-Signature"); v != "" {
				t.Errorf("X-Jetjob-Signature %q still sent: a body-only signature can be replayed forever", v)
			}
			for secret, who := range map[string]string{
				master:                                  "the master secret",
				documentedGroupSecret(t, master, "ops"): "group ops's secret",
				documentedGroupSecret(t, master, "billing2"): "group billing2's secret",
			} {
				if err := VerifyWebhook(secret, h, body, time.Minute); !errors.Is(err, ErrSignatureMismatch) {
					t.Errorf("billing's alarm verified with %s: %v, want a signature mismatch", who, err)
				}
			}
		})
	}
}
