package auth

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/argon2"
)

// Password hashing: argon2id (RFC 9106), stored as a PHC string
// ("$argon2id$v=19$m=19456,t=2,p=1$<salt>$<hash>", unpadded base64) so that
// the parameters travel with each hash and can be raised later without
// invalidating the stored ones.
//
// The parameters are OWASP's recommendation for argon2id (m = 19 MiB,
// t = 2, p = 1) rather than RFC 9106's 64 MiB / 2 GiB profiles, because
// jetjob schedulers run on small boxes (2 cores here, shared with
// PostgreSQL and NATS): one check costs 19 MiB and about 22 ms of one core
// (BenchmarkCheckPassword on this 2-core box), which keeps a login instant
// for a person while each offline guess costs the same. A password is
// checked only at login and on a password change (API calls use keys,
// checked with SHA-256).
//
// Every hash runs in the hash pool: at most hashPoolSize at once (the
// cores, between 2 and 8), so that a burst of logins queues instead of
// taking every core and 19 MiB each. The queue is first come, first served
// (a channel's waiting senders), and the login limiter lets one user or
// address into it only a slot or two at a time, so a wave of one user's
// guesses cannot starve everyone else's logins. A hash waits at most
// maxHashWait for its slot: past that the server is overloaded, and the
// caller answers 503 with Retry-After (ErrHashBusy) rather than queueing
// without end.
const (
	argonMemoryKiB = 19 * 1024
	argonTime      = 2
	argonThreads   = 1
	argonKeyLen    = 32
	argonSaltLen   = 16

	maxHashWait = 5 * time.Second

	// MinPasswordLen is the shortest password accepted: length is what
	// makes a password hard to guess.
	MinPasswordLen = 12
	// maxPasswordLen bounds the work one request can ask of argon2.
	maxPasswordLen = 1024
)

// hashPoolSize is how many hashes run at once.
var hashPoolSize = max(2, min(runtime.GOMAXPROCS(0), 8))

var hashSlots = make(chan struct{}, hashPoolSize)

// ErrBadPassword is returned by CheckPassword for a wrong password.
var ErrBadPassword = errors.New("wrong password")

// ErrHashBusy is returned by CheckPassword and HashPassword when the hash
// pool had no slot within maxHashWait: nothing was hashed.
var ErrHashBusy = errors.New("the server is busy checking passwords: try again in a moment")

// CheckPasswordPolicy says what is wrong with a new password, nil if nothing.
func CheckPasswordPolicy(pw string) error {
	if len([]rune(pw)) < MinPasswordLen {
		return fmt.Errorf("password is shorter than %d characters", MinPasswordLen)
	}
	if len(pw) > maxPasswordLen {
		return fmt.Errorf("password is longer than %d bytes", maxPasswordLen)
	}
	return nil
}

// HashPassword returns the PHC string of pw under the current parameters.
func HashPassword(ctx context.Context, pw string) (string, error) {
	if len(pw) > maxPasswordLen {
		return "", fmt.Errorf("password is longer than %d bytes", maxPasswordLen)
	}
	salt := make([]byte, argonSaltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("password salt: %w", err)
	}
	sum, err := argonKey(ctx, []byte(pw), salt, argonTime, argonMemoryKiB, argonThreads, argonKeyLen)
	if err != nil {
		return "", err
	}
	return phcString(salt, sum), nil
}

// phcString writes a salt and a hash under the current parameters.
func phcString(salt, sum []byte) string {
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemoryKiB, argonTime,
		argonThreads, b64.EncodeToString(salt), b64.EncodeToString(sum))
}

// NoPasswordHash is what a login checks for a user that does not exist or
// has no password, so that the answer takes as long as for a wrong
// password and names cannot be probed by timing. It is made once, outside
// the hash pool: it can neither fail nor wait (a login under load must
// not be the one that finds the pool full while making it).
var NoPasswordHash = sync.OnceValue(func() string {
	salt := []byte("jetjob: no user.")
	return phcString(salt, argon2.IDKey([]byte("jetjob: no such user"), salt, argonTime, argonMemoryKiB, argonThreads, argonKeyLen))
})

// CheckPassword compares pw with a PHC string from HashPassword:
// ErrBadPassword when it does not match.
func CheckPassword(ctx context.Context, phc, pw string) error {
	if len(pw) > maxPasswordLen {
		return ErrBadPassword
	}
	parts := strings.Split(phc, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return errors.New("password hash: not an argon2id PHC string")
	}
	var v int
	var m, t uint32
	var p uint8
	if _, err := fmt.Sscanf(parts[2], "v=%d", &v); err != nil || v != argon2.Version {
		return fmt.Errorf("password hash: argon2 version %q not supported", parts[2])
	}
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &m, &t, &p); err != nil || m == 0 || t == 0 || p == 0 || m > 1<<21 {
		return fmt.Errorf("password hash: bad parameters %q", parts[3])
	}
	b64 := base64.RawStdEncoding
	salt, err1 := b64.DecodeString(parts[4])
	want, err2 := b64.DecodeString(parts[5])
	if err1 != nil || err2 != nil || len(want) == 0 {
		return errors.New("password hash: bad salt or hash encoding")
	}
	got, err := argonKey(ctx, []byte(pw), salt, t, m, p, uint32(len(want)))
	if err != nil {
		return err
	}
	if subtle.ConstantTimeCompare(got, want) != 1 {
		return ErrBadPassword
	}
	return nil
}

// argonKey runs argon2id in one of the hashSlots, waiting for one at most
// maxHashWait.
func argonKey(ctx context.Context, pw, salt []byte, t, m uint32, p uint8, n uint32) ([]byte, error) {
	wait := time.NewTimer(maxHashWait)
	defer wait.Stop()
	select {
	case hashSlots <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting to hash a password: %w", ctx.Err())
	case <-wait.C:
		return nil, ErrHashBusy
	}
	defer func() { <-hashSlots }()
	return argon2.IDKey(pw, salt, t, m, p, n), nil
}
