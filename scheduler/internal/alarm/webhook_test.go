package alarm

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"
)

// receiver is a webhook endpoint written the way the README tells users to:
// it verifies every request with VerifyWebhook and answers 401 otherwise.
type receiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	last   http.Header // headers of the last accepted request
	body   []byte
	errors []error // why requests were refused
}

func startReceiver(t *testing.T, secret string, tolerance time.Duration) *receiver {
	rc := &receiver{}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rc.mu.Lock()
		defer rc.mu.Unlock()
		if err := VerifyWebhook(secret, r.Header, body, tolerance); err != nil {
			rc.errors = append(rc.errors, err)
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		rc.last, rc.body = r.Header.Clone(), body
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

// post sends body with headers to the receiver and returns the status code.
func (rc *receiver) post(t *testing.T, h http.Header, body []byte) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, rc.srv.URL, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = h.Clone()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func (rc *receiver) lastError() error {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.errors) == 0 {
		return nil
	}
	return rc.errors[len(rc.errors)-1]
}

// testAlarm is the notice of a job's alarm fields (the managed rule's
// event, retries_exhausted), of group billing.
func testAlarm() *Notice {
	at := time.Date(2026, 11, 22, 2, 30, 4, 0, time.UTC)
	return &Notice{V: 1, Event: EventRetriesExhausted, JobID: 7, JobName: "nightly-report", Group: "billing", RunID: 1234,
		Status: "FAILED", Message: "exit status 1: disk full", Attempt: 3, Count: 1, FirstAt: at, At: at}
}

// webhookID is the delivery id tests send a webhook notice with.
const webhookID = "jetjob-alert-delivery-1234"

// webhookTo sends n to a generic webhook channel of n's group at url
// without a secret of its own (signed with the group's secret, as a
// job's alarm_webhook is), and returns the attempt's error.
func webhookTo(s *Sender, url string, n *Notice) error {
	ch := Channel{ID: 1, Name: "job-7-alarm-webhook", Kind: KindWebhook, Group: n.Group, Target: url}
	return s.Notify(context.Background(), ch, n, webhookID).Err
}

// A delivered alarm verifies at a real receiver holding its group's
// secret, derived from a plain master secret (as JETJOB_WEBHOOK_SECRET
// always was) and from a Standard Webhooks "whsec_" one; the same capture
// cannot be replayed with an old timestamp, nor with its timestamp moved
// forward, nor with a changed body.
func TestWebhookSignatureRefusesReplayAndTampering(t *testing.T) {
	const tolerance = 5 * time.Minute
	for _, master := range []string{"s3cret", "whsec_" + base64.StdEncoding.EncodeToString([]byte("a 24-byte key of random!"))} {
		t.Run(master, func(t *testing.T) {
			secret, err := GroupSecret(master, testAlarm().Group)
			if err != nil {
				t.Fatal(err)
			}
			rc := startReceiver(t, secret, tolerance)
			s := newSender(t, Config{WebhookSecret: master})
			a := testAlarm()
			if err := webhookTo(s, rc.srv.URL, a); err != nil {
				t.Fatalf("delivery to a verifying receiver: %v", err)
			}
			rc.mu.Lock()
			captured, body := rc.last, rc.body
			rc.mu.Unlock()
			var got Notice
			if err := json.Unmarshal(body, &got); err != nil || got.RunID != a.RunID {
				t.Fatalf("delivered body %s (%v)", body, err)
			}
			if id := captured.Get(IDHeader); id != webhookID {
				t.Errorf("webhook-id %q, want the delivery's id %q, the same on every retry", id, webhookID)
			}

			// An attacker who captured the request ten minutes ago.
			old := time.Now().Add(-10 * time.Minute)
			replay := captured.Clone()
			sig, err := SignWebhook(secret, captured.Get(IDHeader), old, body)
			if err != nil {
				t.Fatal(err)
			}
			replay.Set(TimestampHeader, strconv.FormatInt(old.Unix(), 10))
			replay.Set(SignatureHeader, sig)
			if code := rc.post(t, replay, body); code != http.StatusUnauthorized || !errors.Is(rc.lastError(), ErrBadTimestamp) {
				t.Errorf("replay signed 10 minutes ago: HTTP %d (%v), want 401 for an old timestamp", code, rc.lastError())
			}
			// ... who sets a fresh timestamp but cannot re-sign.
			fresh := captured.Clone()
			fresh.Set(TimestampHeader, strconv.FormatInt(time.Now().Unix()+1, 10))
			if code := rc.post(t, fresh, body); code != http.StatusUnauthorized || !errors.Is(rc.lastError(), ErrSignatureMismatch) {
				t.Errorf("replay with a new timestamp: HTTP %d (%v), want 401 for a signature mismatch", code, rc.lastError())
			}
			// ... or changes the body.
			tampered := bytes.Replace(body, []byte(`"FAILED"`), []byte(`"SUCCEEDED"`), 1)
			if code := rc.post(t, captured, tampered); code != http.StatusUnauthorized || !errors.Is(rc.lastError(), ErrSignatureMismatch) {
				t.Errorf("tampered body: HTTP %d (%v), want 401 for a signature mismatch", code, rc.lastError())
			}
			// Without any signature.
			if code := rc.post(t, http.Header{}, body); code != http.StatusUnauthorized || !errors.Is(rc.lastError(), ErrNoSignature) {
				t.Errorf("unsigned: HTTP %d (%v), want 401", code, rc.lastError())
			}
		})
	}
}

// A "whsec_" secret whose key is not base64 fails the delivery with a
// message naming the setting, rather than signing with a key the receiver
// does not have.
func TestWebhookBadSecret(t *testing.T) {
	rc := startReceiver(t, "whsec_!!", time.Minute)
	// New refuses such a secret (TestConfigValidate); the delivery checks
	// it again, as SignWebhook does for anyone calling it.
	s := newSender(t, Config{})
	s.cfg.WebhookSecret = "whsec_!!"
	err := webhookTo(s, rc.srv.URL, testAlarm())
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("JETJOB_WEBHOOK_SECRET")) {
		t.Errorf("delivery with a broken whsec_ secret: %v, want an error naming JETJOB_WEBHOOK_SECRET", err)
	}
}

// The signature is the one the Standard Webhooks spec's own example gives,
// so receivers using its libraries verify jetjob's alarms.
func TestSignWebhookMatchesSpecExample(t *testing.T) {
	// From the reference implementations' test vectors.
	const (
		secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
		id     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
		ts     = 1614265330
		body   = `{"test": 2432232314}`
		want   = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
	)
	got, err := SignWebhook(secret, id, time.Unix(ts, 0), []byte(body))
	if err != nil || got != want {
		t.Errorf("SignWebhook = %q, %v; want %q", got, err, want)
	}
}
