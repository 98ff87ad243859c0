// Package secrets keeps the named secrets of groups (docs/jobs.md,
// "Secrets"): values encrypted at rest under the schedulers' keyring
// (keyring.go), written and listed through the API without ever being
// answered (store.go), and given to a worker only for a run that is
// running and whose job references them (serve.go), each such use
// audited. That a job may reference a secret is decided where the
// reference is made, in package refs (refs.CheckSecrets).
package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// Key is one AES-256 key of a keyring, named by its id (stored with each
// row it encrypted, so that an older key still opens its rows).
type Key struct {
	ID  string
	key []byte
}

// Keyring holds the keys secrets are encrypted with: the first is the
// primary, which encrypts every new value; the others only decrypt rows
// not yet re-encrypted (`jetjob-scheduler secrets rotate-key`). The zero
// Keyring has no key: secrets cannot be written or read (ErrNoKey).
type Keyring struct {
	keys []Key
}

// ErrNoKey says that the scheduler has no secrets key configured.
var ErrNoKey = errors.New("secrets are not configured on this scheduler: give every scheduler the same key with --secrets-key-file or JETJOB_SECRETS_KEY (base64 of 32 random bytes, e.g. `openssl rand -base64 32`; several as id:base64,... with the primary first)")

// ErrWrongKey says that a value could not be opened with the key it names:
// another key under the same id, or a damaged row.
var ErrWrongKey = errors.New("secret does not decrypt with the scheduler's key of its key id (a different key under the same id, or a damaged row)")

var keyIDRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

// DefaultKeyID names a key given without an id.
const DefaultKeyID = "k1"

// ParseKeyring reads a keyring: "" for none, one base64 key (id
// DefaultKeyID), or "id:base64,id:base64,..." with the primary first.
func ParseKeyring(spec string) (Keyring, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return Keyring{}, nil
	}
	var kr Keyring
	for i, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		id, b64, ok := strings.Cut(part, ":")
		if !ok {
			id, b64 = DefaultKeyID, part
		}
		if !keyIDRE.MatchString(id) {
			return Keyring{}, fmt.Errorf("secrets key %d: key id %q: want 1-32 characters of [A-Za-z0-9_-]", i+1, id)
		}
		raw, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			return Keyring{}, fmt.Errorf("secrets key %s: not base64: %w", id, err)
		}
		if len(raw) != 32 {
			return Keyring{}, fmt.Errorf("secrets key %s: %d bytes, want 32 (AES-256; `openssl rand -base64 32`)", id, len(raw))
		}
		for _, k := range kr.keys {
			if k.ID == id {
				return Keyring{}, fmt.Errorf("secrets key id %s given twice", id)
			}
		}
		kr.keys = append(kr.keys, Key{ID: id, key: raw})
	}
	return kr, nil
}

// LoadKeyring reads the keyring from the value of a flag or variable, or
// else from a file (both set is an error: which one holds is unclear).
func LoadKeyring(value, file string) (Keyring, error) {
	if value != "" && file != "" {
		return Keyring{}, errors.New("secrets key given both as a value (--secrets-key / JETJOB_SECRETS_KEY) and a file (--secrets-key-file): give one")
	}
	if file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return Keyring{}, fmt.Errorf("secrets key file: %w", err)
		}
		return ParseKeyring(string(data))
	}
	return ParseKeyring(value)
}

// GenerateKey returns a new random key as ParseKeyring reads it.
func GenerateKey() string {
	raw := make([]byte, 32)
	_, _ = rand.Read(raw) // crypto/rand.Read never fails (Go 1.24)
	return base64.StdEncoding.EncodeToString(raw)
}

// Configured reports whether the keyring has a key.
func (kr Keyring) Configured() bool { return len(kr.keys) > 0 }

// Primary is the id of the key new values are encrypted with.
func (kr Keyring) Primary() string {
	if len(kr.keys) == 0 {
		return ""
	}
	return kr.keys[0].ID
}

// Sealed is a value as stored.
type Sealed struct {
	KeyID      string
	Nonce      []byte
	Ciphertext []byte
}

// aad binds a ciphertext to its row: a value copied onto another group's
// or name's row does not open.
func aad(group, name string) []byte { return []byte("jetjob-secret\x00" + group + "\x00" + name) }

// Seal encrypts value of group's secret name under the primary key.
func (kr Keyring) Seal(group, name string, value []byte) (Sealed, error) {
	if !kr.Configured() {
		return Sealed{}, ErrNoKey
	}
	k := kr.keys[0]
	gcm, err := newGCM(k.key)
	if err != nil {
		return Sealed{}, err
	}
	nonce := make([]byte, gcm.NonceSize())
	_, _ = rand.Read(nonce)
	return Sealed{KeyID: k.ID, Nonce: nonce, Ciphertext: gcm.Seal(nil, nonce, value, aad(group, name))}, nil
}

// Open decrypts s, a value of group's secret name.
func (kr Keyring) Open(group, name string, s Sealed) ([]byte, error) {
	if !kr.Configured() {
		return nil, ErrNoKey
	}
	for _, k := range kr.keys {
		if k.ID != s.KeyID {
			continue
		}
		gcm, err := newGCM(k.key)
		if err != nil {
			return nil, err
		}
		out, err := gcm.Open(nil, s.Nonce, s.Ciphertext, aad(group, name))
		if err != nil {
			return nil, fmt.Errorf("secret %s/%s: %w", group, name, ErrWrongKey)
		}
		return out, nil
	}
	return nil, fmt.Errorf("secret %s/%s is encrypted with key %q, which this scheduler's keyring lacks (keep the old key after the primary until `jetjob-scheduler secrets rotate-key` has run)", group, name, s.KeyID)
}

func newGCM(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("secrets key: %w", err)
	}
	return cipher.NewGCM(block)
}
