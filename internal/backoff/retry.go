package backoff

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Default is the delay of a Policy that sets none: 100 ms, doubling up to
// 5 s, the delays most of jetjob's loops use for PostgreSQL and NATS.
var Default = Backoff{Initial: 100 * time.Millisecond, Max: 5 * time.Second}

// Policy says how Retry waits between attempts, when it gives up and what
// it tells the caller about each failure. The zero Policy retries until
// fn succeeds or ctx ends, waiting Default's delays, silently.
type Policy struct {
	// Backoff gives the delays between attempts; its zero value (no
	// Initial) means Default. Retry works on a copy started afresh, so one
	// Policy serves any number of calls, concurrent ones too.
	Backoff Backoff
	// MaxAttempts bounds how many times fn is called; 0 means no bound
	// (until fn succeeds, fails permanently or ctx ends).
	MaxAttempts int
	// OnRetry, if set, is called after each failure that will be retried,
	// before the wait: attempt is the number of the call that failed (1
	// for the first), delay the wait before the next one. It is where a
	// loop logs and counts its failures. It is not called for the last
	// failure (permanent, the last attempt, or ctx ended), whose error
	// Retry returns instead.
	OnRetry func(attempt int, delay time.Duration, err error)
}

// Retry calls fn until it returns nil, then returns nil. Between failures
// it waits as p says, for as long as ctx lasts. It gives up and returns an
// error:
//   - at once, when fn's error is marked Permanent: that error, without the
//     mark;
//   - after p.MaxAttempts failures: the last error, as fn returned it;
//   - when ctx ends (during an attempt that fails, or during a wait):
//     ctx.Err(), wrapped with the last error's text, so that
//     errors.Is(err, context.Canceled) holds and the log still says what
//     was failing.
//
// The first attempt is made even if ctx has already ended: fn gets ctx and
// decides what an ended one means to it (most fail at once; settling a
// message locally does not need it). A failure once ctx has ended is not
// one to retry: OnRetry is not called for it, so a stopping process logs
// and counts nothing.
func Retry(ctx context.Context, p Policy, fn func(ctx context.Context) error) error {
	b := p.Backoff
	if b.Initial == 0 {
		b = Default
	}
	b.Reset()
	for attempt := 1; ; attempt++ {
		err := fn(ctx)
		if err == nil {
			return nil
		}
		var perm *permanent
		if errors.As(err, &perm) {
			if err == error(perm) {
				return perm.err
			}
			return err // wrapped on its way out of fn: keep that context
		}
		if ctx.Err() != nil {
			return ended(ctx, err)
		}
		if p.MaxAttempts > 0 && attempt >= p.MaxAttempts {
			return err
		}
		d := b.Next()
		if p.OnRetry != nil {
			p.OnRetry(attempt, d, err)
		}
		if Sleep(ctx, d) != nil {
			return ended(ctx, err)
		}
	}
}

// ended is Retry's error when ctx ended after fn failed with last.
func ended(ctx context.Context, last error) error {
	return fmt.Errorf("%w (last error: %v)", ctx.Err(), last)
}

// Permanent marks err as one that no retry can mend (the input is wrong,
// the lease is lost, the connection is closed for good): Retry returns it
// at once. Permanent(nil) is nil. The mark is found through wrapping, and
// it is transparent to errors.Is and errors.As.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanent{err: err}
}

type permanent struct{ err error }

func (p *permanent) Error() string { return p.err.Error() }
func (p *permanent) Unwrap() error { return p.err }
