package trigsign

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"
)

// Keys are read in the forms the usual tools write:
//
//   - a PEM file: "PRIVATE KEY" (PKCS #8, as `openssl genpkey -algorithm
//     ed25519` and GenerateKey write it) or "PUBLIC KEY" (PKIX, as
//     `openssl pkey -pubout` writes it);
//   - base64 (standard or URL alphabet, padded or not) of the raw key: a
//     32-byte seed or 64-byte private key, a 32-byte public key, or the
//     DER of the PEM forms.
//
// A public key is usually passed as base64 of its 32 bytes
// (EncodePublicKey), which fits an environment variable.

// GenerateKey returns a new private key.
func GenerateKey() (ed25519.PrivateKey, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	return priv, err
}

// EncodePrivateKeyPEM is priv as a PKCS #8 PEM block, what
// LoadPrivateKeyFile reads (and openssl too).
func EncodePrivateKeyPEM(priv ed25519.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// EncodePublicKey is pub as base64 of its 32 bytes, the form of
// JETJOB_TRIGGER_PUBLIC_KEYS.
func EncodePublicKey(pub ed25519.PublicKey) string { return base64.StdEncoding.EncodeToString(pub) }

// ParsePrivateKey reads a private key in one of the forms above.
func ParsePrivateKey(data []byte) (ed25519.PrivateKey, error) {
	der, err := keyBytes(data, "PRIVATE KEY")
	if err != nil {
		return nil, fmt.Errorf("trigger signing key: %w", err)
	}
	switch len(der) {
	case ed25519.SeedSize:
		return ed25519.NewKeyFromSeed(der), nil
	case ed25519.PrivateKeySize:
		priv := ed25519.NewKeyFromSeed(der[:ed25519.SeedSize])
		if !bytes.Equal(priv, der) {
			return nil, errors.New("trigger signing key: 64 bytes that are no Ed25519 private key (the public half does not match the seed)")
		}
		return priv, nil
	}
	k, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, fmt.Errorf("trigger signing key: not an Ed25519 private key (PKCS #8 PEM, or base64 of a 32-byte seed): %w", err)
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("trigger signing key: a %T, want Ed25519", k)
	}
	return priv, nil
}

// ParsePublicKey reads a public key in one of the forms above.
func ParsePublicKey(data []byte) (ed25519.PublicKey, error) {
	der, err := keyBytes(data, "PUBLIC KEY")
	if err != nil {
		return nil, fmt.Errorf("trigger public key: %w", err)
	}
	if len(der) == ed25519.PublicKeySize {
		return ed25519.PublicKey(der), nil
	}
	k, err := x509.ParsePKIXPublicKey(der)
	if err != nil {
		return nil, fmt.Errorf("trigger public key: not an Ed25519 public key (PEM, or base64 of its 32 bytes): %w", err)
	}
	pub, ok := k.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("trigger public key: a %T, want Ed25519", k)
	}
	return pub, nil
}

// ParsePublicKeys reads a comma-separated list of base64 public keys (the
// form of JETJOB_TRIGGER_PUBLIC_KEYS); empty entries are skipped.
func ParsePublicKeys(list string) ([]ed25519.PublicKey, error) {
	var out []ed25519.PublicKey
	for i, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		k, err := ParsePublicKey([]byte(s))
		if err != nil {
			return nil, fmt.Errorf("key %d of the list: %w", i+1, err)
		}
		out = append(out, k)
	}
	return out, nil
}

// LoadPrivateKeyFile reads the private key in file path.
func LoadPrivateKeyFile(path string) (ed25519.PrivateKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("trigger signing key: %w", err)
	}
	return ParsePrivateKey(data)
}

// LoadPublicKeyFile reads the public key in file path.
func LoadPublicKeyFile(path string) (ed25519.PublicKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("trigger public key: %w", err)
	}
	k, err := ParsePublicKey(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return k, nil
}

// keyBytes is the DER or raw bytes of data: the PEM block of type want,
// or base64.
func keyBytes(data []byte, want string) ([]byte, error) {
	text := bytes.TrimSpace(data)
	if len(text) == 0 {
		return nil, errors.New("empty")
	}
	if bytes.HasPrefix(text, []byte("-----BEGIN")) {
		block, _ := pem.Decode(text)
		if block == nil {
			return nil, errors.New("not a valid PEM block")
		}
		if block.Type != want {
			return nil, fmt.Errorf("a PEM %q block, want %q", block.Type, want)
		}
		return block.Bytes, nil
	}
	s := strings.TrimRight(string(text), "=")
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, nil
		}
	}
	return nil, errors.New("neither PEM nor base64")
}
