package trigsign

import (
	"bytes"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetjob/jetjob/shared/wire"
)

func newSigner(t testing.TB) *Signer {
	t.Helper()
	s, _, err := GeneratePair()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// trigger is a realistic trigger message of group g.
func trigger(t testing.TB, run int64) []byte {
	t.Helper()
	data, err := wire.EncodeTrigger(&wire.Trigger{RunID: run, JobID: 7, Group: "g", Handler: "shell",
		Params: `echo "hello from jetjob" && date`, TriggerType: wire.TriggerSchedule,
		ScheduledAt: time.Date(2026, 11, 22, 2, 30, 0, 0, time.UTC), TimeoutMS: 300000,
		MisfirePolicy: "fire_once", MisfireThresholdMS: 5000, BlockStrategy: "serial"})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// signedTrigger is a trigger of group g signed by s, with its headers,
// checked to be accepted by v.
func signedTrigger(t *testing.T, s *Signer, v *Verifier) ([]byte, nats.Header) {
	t.Helper()
	data := trigger(t, 1)
	h := nats.Header{}
	s.Sign(h, "g", false, data)
	if err := v.Verify(h, "g", false, data); err != nil {
		t.Fatalf("the signer's own verifier: %v", err)
	}
	return data, h
}

// A pair's verifier accepts what its signer signs, and another pair's does
// not: the two halves belong to one key.
func TestPairIsOneKey(t *testing.T) {
	s, v, err := GeneratePair()
	if err != nil {
		t.Fatal(err)
	}
	_, other, err := GeneratePair()
	if err != nil {
		t.Fatal(err)
	}
	data, h := signedTrigger(t, s, v)
	if err := other.Verify(h, "g", false, data); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("another pair's verifier: %v, want ErrUnknownKey", err)
	}
	if got, want := v.KeyIDs(), []string{s.KeyID()}; len(got) != 1 || got[0] != want[0] {
		t.Fatalf("verifier keys %v, want %v", got, want)
	}
}

// A signature holds for exactly the message it was made for: its body, its
// group and its kind. Anything else — another group's subjects, a lone
// trigger read as a batch, one changed byte, no signature, a key the
// worker does not accept, a mangled header — is refused, each for its
// reason.
func TestVerifyAcceptsOnlyWhatWasSigned(t *testing.T) {
	s := newSigner(t)
	v, err := NewVerifier(s.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	data, h := signedTrigger(t, s, v)
	if h.Get(HeaderKey) != s.KeyID() || len(h.Get(HeaderSig)) != 86 {
		t.Errorf("headers %v, want the key id %s and an 86-character signature", h, s.KeyID())
	}
	tampered := bytes.Replace(data, []byte("hello"), []byte("hellO"), 1)
	other := newSigner(t)
	oh := nats.Header{}
	other.Sign(oh, "g", false, data)
	mangled := nats.Header{}
	mangled.Set(HeaderKey, s.KeyID())
	mangled.Set(HeaderSig, "!!!")
	onlyKey := nats.Header{}
	onlyKey.Set(HeaderKey, s.KeyID())
	for _, c := range []struct {
		what   string
		h      nats.Header
		group  string
		batch  bool
		data   []byte
		want   error
		reason string
	}{
		{"replayed on another group's subject", h, "h", false, data, ErrBadSignature, "bad_signature"},
		{"a lone trigger read as a batch", h, "g", true, data, ErrBadSignature, "bad_signature"},
		{"one byte changed", h, "g", false, tampered, ErrBadSignature, "bad_signature"},
		{"no signature", nats.Header{}, "g", false, data, ErrUnsigned, "unsigned"},
		{"no headers at all", nil, "g", false, data, ErrUnsigned, "unsigned"},
		{"signed by a key not accepted", oh, "g", false, data, ErrUnknownKey, "unknown_key"},
		{"signature not base64", mangled, "g", false, data, ErrBadSignature, "bad_signature"},
		{"key id without a signature", onlyKey, "g", false, data, ErrBadSignature, "bad_signature"},
	} {
		err := v.Verify(c.h, c.group, c.batch, c.data)
		if !errors.Is(err, c.want) || Reason(err) != c.reason {
			t.Errorf("%s: %v (reason %q), want %v (%q)", c.what, err, Reason(err), c.want, c.reason)
		}
	}
}

// During a rotation workers accept the old key and the new one, so
// triggers signed by either verify while the schedulers switch; a key
// given twice (from two places) counts once.
func TestVerifierAcceptsTwoKeysForRotation(t *testing.T) {
	old, cur := newSigner(t), newSigner(t)
	v, err := NewVerifier(old.PublicKey(), cur.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	data := trigger(t, 2)
	for _, s := range []*Signer{old, cur} {
		h := nats.Header{}
		s.Sign(h, "g", true, data)
		if err := v.Verify(h, "g", true, data); err != nil {
			t.Errorf("signed by key %s: %v", s.KeyID(), err)
		}
	}
	if got := v.KeyIDs(); len(got) != 2 || got[0] != old.KeyID() || got[1] != cur.KeyID() {
		t.Errorf("key ids %v", got)
	}
	if twice, err := NewVerifier(cur.PublicKey(), cur.PublicKey()); err != nil || len(twice.KeyIDs()) != 1 {
		t.Errorf("the same key twice: %v, %v", twice, err)
	}
	if _, err := NewVerifier(); err == nil {
		t.Error("a verifier of no key was made")
	}
}

// Keys are read as the usual tools write them: PKCS #8 and PKIX PEM
// (GenerateKey's file, openssl's), base64 of the raw bytes in either
// alphabet with or without padding, base64 of the DER. A public key where
// a private one is wanted (and the reverse) is refused, naming the form.
func TestKeyForms(t *testing.T) {
	priv, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	pub := priv.Public().(ed25519.PublicKey)
	privPEM, err := EncodePrivateKeyPEM(priv)
	if err != nil {
		t.Fatal(err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
	privDER, _ := pem.Decode(privPEM)
	for _, form := range [][]byte{
		privPEM,
		append([]byte("\n  "), append(privPEM, '\n')...),
		[]byte(base64.StdEncoding.EncodeToString(priv.Seed())),
		[]byte(base64.RawURLEncoding.EncodeToString(priv.Seed())),
		[]byte(base64.StdEncoding.EncodeToString(priv)),
		[]byte(base64.StdEncoding.EncodeToString(privDER.Bytes)),
	} {
		got, err := ParsePrivateKey(form)
		if err != nil || !got.Equal(priv) {
			t.Errorf("private key %.40q…: %v", form, err)
		}
	}
	for _, form := range [][]byte{
		pubPEM,
		[]byte(EncodePublicKey(pub)),
		[]byte(base64.RawURLEncoding.EncodeToString(pub)),
		[]byte(base64.StdEncoding.EncodeToString(pubDER)),
	} {
		got, err := ParsePublicKey(form)
		if err != nil || !got.Equal(pub) {
			t.Errorf("public key %.40q…: %v", form, err)
		}
	}
	list, err := ParsePublicKeys(" " + EncodePublicKey(pub) + ", ," + base64.StdEncoding.EncodeToString(pubDER))
	if err != nil || len(list) != 2 {
		t.Errorf("list: %d keys, %v", len(list), err)
	}
	bad := append([]byte(nil), priv...)
	bad[40] ^= 1
	for _, c := range []struct {
		what string
		err  error
		want string
	}{
		{"a public key as the signing key", func() error { _, err := ParsePrivateKey(pubPEM); return err }(), `"PUBLIC KEY" block, want "PRIVATE KEY"`},
		{"a private key as a public key", func() error { _, err := ParsePublicKey(privPEM); return err }(), `"PRIVATE KEY" block, want "PUBLIC KEY"`},
		{"64 bytes whose halves do not match", func() error { _, err := ParsePrivateKey([]byte(base64.StdEncoding.EncodeToString(bad))); return err }(), "does not match"},
		{"not a key", func() error { _, err := ParsePublicKey([]byte("hello world!")); return err }(), "neither PEM nor base64"},
		{"empty", func() error { _, err := ParsePrivateKey([]byte(" \n")); return err }(), "empty"},
		{"a bad list entry", func() error { _, err := ParsePublicKeys(EncodePublicKey(pub) + ",AAAA"); return err }(), "key 2 of the list"},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.what, c.err, c.want)
		}
	}
}

// The cost of signing and verifying one message: a lone trigger, and a
// trigger batch of 16 (the schedulers' default), which is signed once.
// go test -run - -bench . ./shared/trigsign/
func BenchmarkSign(b *testing.B) {
	s := newSigner(b)
	for _, c := range benchMessages(b) {
		b.Run(c.name, func(b *testing.B) {
			h := nats.Header{}
			b.SetBytes(int64(len(c.data)))
			b.ReportAllocs()
			for b.Loop() {
				s.Sign(h, "g", c.batch, c.data)
			}
		})
	}
}

func BenchmarkVerify(b *testing.B) {
	s := newSigner(b)
	v, err := NewVerifier(s.PublicKey())
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range benchMessages(b) {
		b.Run(c.name, func(b *testing.B) {
			h := nats.Header{}
			s.Sign(h, "g", c.batch, c.data)
			b.SetBytes(int64(len(c.data)))
			b.ReportAllocs()
			for b.Loop() {
				if err := v.Verify(h, "g", c.batch, c.data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

type benchMessage struct {
	name  string
	batch bool
	data  []byte
}

func benchMessages(b *testing.B) []benchMessage {
	one := trigger(b, 1)
	ts := make([]*wire.Trigger, 16)
	for i := range ts {
		tr, err := wire.DecodeTrigger(trigger(b, int64(i+1)))
		if err != nil {
			b.Fatal(err)
		}
		ts[i] = tr
	}
	batch, err := wire.EncodeTriggerBatch(ts)
	if err != nil {
		b.Fatal(err)
	}
	return []benchMessage{{"trigger", false, one}, {"batch16", true, batch}}
}
