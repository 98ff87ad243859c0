// Package trigsign signs trigger messages on the schedulers and verifies
// them on the workers (Ed25519), so that a worker runs only what a
// scheduler sent: a credential that may publish on a trigger subject (an
// open development NATS, a misconfigured account) can no longer make a
// shell worker run a command of its choosing. It is defence in depth
// beyond NATS permissions (docs/operations.md, "Trigger signing").
//
// What is signed is the message's body exactly as published, with the
// group it is for and whether it is a trigger batch (Signed): a signed
// trigger cannot be replayed on another group's subjects, nor a lone
// trigger read as a batch or a batch as a lone trigger. It does not bind
// the rest of the subject, so a scheduler moving a dead worker's directed
// trigger to its group's shared queue (scheduler/internal/reroute) copies the
// signature as it is, and no scheduler ever signs what it did not create.
// The signature and the signing key's id travel in two headers
// (HeaderSig, HeaderKey); a redelivery is the same message, with the same
// signature.
//
// A Signer holds one private key; a Verifier holds the public keys a
// worker accepts, by id: two during a key rotation (the new one added to
// the workers first, then the schedulers switched, then the old one
// removed).
package trigsign

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go"
)

// Headers of a signed trigger message.
const (
	// HeaderSig is the Ed25519 signature of Signed(...), base64 (standard
	// alphabet, no padding).
	HeaderSig = "Jetjob-Sig"
	// HeaderKey is the id of the key that signed (KeyID).
	HeaderKey = "Jetjob-Key"
)

// Why a trigger is refused; errors.Is tells them apart, Reason names them.
var (
	ErrUnsigned     = errors.New("trigger is not signed")
	ErrUnknownKey   = errors.New("trigger is signed by a key this worker does not accept")
	ErrBadSignature = errors.New("trigger signature does not verify")
)

// Reason is the metric label of a refusal: "unsigned", "unknown_key" or
// "bad_signature".
func Reason(err error) string {
	switch {
	case errors.Is(err, ErrUnsigned):
		return "unsigned"
	case errors.Is(err, ErrUnknownKey):
		return "unknown_key"
	default:
		return "bad_signature"
	}
}

// domain separates jetjob trigger signatures from anything else the same
// key could ever sign, and versions the encoding.
const domain = "jetjob-trigger-sig-v1\n"

// Kinds of trigger message, as Signed encodes them.
const (
	kindTrigger = "trigger"
	kindBatch   = "batch"
)

// Signed is the byte string a signature covers: a domain prefix, the
// group, the kind (a lone trigger or a trigger batch) and the body,
// separated by newlines (a group name holds none, and the body comes
// last, whole).
func Signed(group string, batch bool, data []byte) []byte {
	return appendSigned(make([]byte, 0, len(domain)+len(group)+len(kindTrigger)+2+len(data)), group, batch, data)
}

func appendSigned(b []byte, group string, batch bool, data []byte) []byte {
	kind := kindTrigger
	if batch {
		kind = kindBatch
	}
	b = append(b, domain...)
	b = append(b, group...)
	b = append(b, '\n')
	b = append(b, kind...)
	b = append(b, '\n')
	return append(b, data...)
}

// bufs reuses the buffers Signed is built in: a busy scheduler signs
// thousands of messages a second.
var bufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// withSigned calls fn with Signed(group, batch, data) in a pooled buffer.
func withSigned(group string, batch bool, data []byte, fn func([]byte)) {
	bp := bufs.Get().(*[]byte)
	b := appendSigned((*bp)[:0], group, batch, data)
	fn(b)
	if cap(b) <= 128<<10 { // keep no giant buffer around
		*bp = b[:0]
		bufs.Put(bp)
	}
}

// KeyID names a public key in HeaderKey: the first 8 bytes of its SHA-256,
// in hex. Not secret; it only picks the key to verify with.
func KeyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return hex.EncodeToString(sum[:8])
}

// sigEncoding is how HeaderSig is written.
var sigEncoding = base64.RawStdEncoding

// Signer signs trigger messages with one private key. Safe for concurrent
// use.
type Signer struct {
	priv ed25519.PrivateKey
	id   string
}

// NewSigner returns a signer of priv.
func NewSigner(priv ed25519.PrivateKey) (*Signer, error) {
	if len(priv) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("trigger signing key: want an Ed25519 private key of %d bytes, got %d", ed25519.PrivateKeySize, len(priv))
	}
	return &Signer{priv: priv, id: KeyID(priv.Public().(ed25519.PublicKey))}, nil
}

// KeyID is the id of the signer's key.
func (s *Signer) KeyID() string { return s.id }

// PublicKey is the key workers verify the signer's triggers with.
func (s *Signer) PublicKey() ed25519.PublicKey { return s.priv.Public().(ed25519.PublicKey) }

// Sign sets HeaderSig and HeaderKey in h for the trigger message data of
// group (a trigger batch if batch).
func (s *Signer) Sign(h nats.Header, group string, batch bool, data []byte) {
	var sig []byte
	withSigned(group, batch, data, func(b []byte) { sig = ed25519.Sign(s.priv, b) })
	h.Set(HeaderSig, sigEncoding.EncodeToString(sig))
	h.Set(HeaderKey, s.id)
}

// CopyHeaders copies the signature headers of src, if any, into dst: a
// trigger moved to another subject of its group keeps its signature.
func CopyHeaders(dst, src nats.Header) {
	for _, k := range []string{HeaderSig, HeaderKey} {
		if v := src.Get(k); v != "" {
			dst.Set(k, v)
		}
	}
}

// Verifier checks trigger signatures against the public keys it accepts.
// Safe for concurrent use.
type Verifier struct {
	keys map[string]ed25519.PublicKey
	ids  []string
}

// NewVerifier accepts the signatures of keys (at least one; two while the
// schedulers' key is rotated). A key given twice counts once: during a
// rotation the same key may come from two places (a Secret's file and a
// list of extra keys).
func NewVerifier(keys ...ed25519.PublicKey) (*Verifier, error) {
	if len(keys) == 0 {
		return nil, errors.New("trigger public keys: none given")
	}
	v := &Verifier{keys: make(map[string]ed25519.PublicKey, len(keys))}
	for i, k := range keys {
		if len(k) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("trigger public key %d: want an Ed25519 public key of %d bytes, got %d", i+1, ed25519.PublicKeySize, len(k))
		}
		id := KeyID(k)
		if _, dup := v.keys[id]; dup {
			continue
		}
		v.keys[id] = k
		v.ids = append(v.ids, id)
	}
	return v, nil
}

// Pair is the signer of priv and the verifier that accepts it alone: both
// halves of one key, as a development system signing for its own worker
// (jetjob-scheduler dev) and the tests need them.
func Pair(priv ed25519.PrivateKey) (*Signer, *Verifier, error) {
	s, err := NewSigner(priv)
	if err != nil {
		return nil, nil, err
	}
	v, err := NewVerifier(s.PublicKey())
	if err != nil {
		return nil, nil, err
	}
	return s, v, nil
}

// GeneratePair is Pair of a new key.
func GeneratePair() (*Signer, *Verifier, error) {
	priv, err := GenerateKey()
	if err != nil {
		return nil, nil, err
	}
	return Pair(priv)
}

// KeyIDs are the ids of the accepted keys, in the order given.
func (v *Verifier) KeyIDs() []string { return append([]string(nil), v.ids...) }

// Verify checks the signature in h of the trigger message data of group (a
// batch if batch). The error wraps ErrUnsigned, ErrUnknownKey or
// ErrBadSignature.
func (v *Verifier) Verify(h nats.Header, group string, batch bool, data []byte) error {
	sigText, id := h.Get(HeaderSig), h.Get(HeaderKey)
	if sigText == "" && id == "" {
		return ErrUnsigned
	}
	key, ok := v.keys[id]
	if !ok {
		return fmt.Errorf("%w (key id %q)", ErrUnknownKey, id)
	}
	sig, err := sigEncoding.DecodeString(sigText)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return fmt.Errorf("%w: %s is not a base64 Ed25519 signature", ErrBadSignature, HeaderSig)
	}
	valid := false
	withSigned(group, batch, data, func(b []byte) { valid = ed25519.Verify(key, b, sig) })
	if !valid {
		return fmt.Errorf("%w (key id %s)", ErrBadSignature, id)
	}
	return nil
}
