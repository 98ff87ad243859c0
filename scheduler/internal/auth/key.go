package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"fmt"
	"strings"
)

// API keys look like "jj_<prefix>_<secret>": prefix is 8 random base32
// characters (lower case), public, unique, stored as is — it finds the key
// and names it in listings and the audit log; secret is 32 random bytes in
// unpadded base64url, of which only the SHA-256 is stored. A fast hash is
// right here, unlike for passwords: 256 random bits cannot be guessed
// however fast each guess is, and every API request checks a key, which an
// argon2 per request would make slow and a denial-of-service lever.
const (
	keyScheme    = "jj"
	keyPrefixLen = 8
	keySecretLen = 32
)

var prefixEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// NewKey returns a new key: the whole token to show once, its prefix and
// the hash of its secret to store.
func NewKey() (token, prefix string, secretHash []byte, err error) {
	pb := make([]byte, 5) // 5 bytes = 8 base32 characters
	sb := make([]byte, keySecretLen)
	if _, err := rand.Read(pb); err != nil {
		return "", "", nil, fmt.Errorf("new API key: %w", err)
	}
	if _, err := rand.Read(sb); err != nil {
		return "", "", nil, fmt.Errorf("new API key: %w", err)
	}
	prefix = prefixEncoding.EncodeToString(pb)
	secret := base64.RawURLEncoding.EncodeToString(sb)
	return keyScheme + "_" + prefix + "_" + secret, prefix, HashSecret(secret), nil
}

// ParseKey splits a bearer token into the key's prefix and the hash of
// its secret; ok is false when the token is not shaped like a key.
func ParseKey(token string) (prefix string, secretHash []byte, ok bool) {
	scheme, rest, ok1 := strings.Cut(token, "_")
	prefix, secret, ok2 := strings.Cut(rest, "_")
	if !ok1 || !ok2 || scheme != keyScheme || len(prefix) != keyPrefixLen || len(secret) != base64.RawURLEncoding.EncodedLen(keySecretLen) {
		return "", nil, false
	}
	if _, err := prefixEncoding.DecodeString(prefix); err != nil {
		return "", nil, false
	}
	return prefix, HashSecret(secret), true
}

// HashSecret is the stored form of a key's secret or a session token.
func HashSecret(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

// NewSessionToken returns a session cookie value (32 random bytes,
// base64url) and the hash stored for it: like keys, a database read does
// not yield live sessions.
func NewSessionToken() (token string, hash []byte, err error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", nil, fmt.Errorf("new session: %w", err)
	}
	token = base64.RawURLEncoding.EncodeToString(b)
	return token, HashSecret(token), nil
}
