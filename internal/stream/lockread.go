package stream

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetjob/jetjob/internal/flowkv"
)

// ReadFlowKey reads a flow key (a group's slots from JETJOB_LOCKS, its
// rate state from JETJOB_RATES: BucketOf) for the scheduler's queue view:
// nil without an error for a key that does not exist, which means nobody
// holds, waits or started lately. The workers write these keys
// (worker/internal/joblock); the scheduler only reads them.
func ReadFlowKey(ctx context.Context, js jetstream.JetStream, c Config, key string) ([]byte, error) {
	open := Locks
	if BucketOf(key) == RatesBucket {
		open = Rates
	}
	kv, err := open(ctx, js, c)
	if err != nil {
		return nil, err
	}
	e, err := kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", key, err)
	}
	return e.Value(), nil
}

// BucketOf is the bucket of a flow key: a rate limit's state (flowkv's
// rate.* keys) lives in JETJOB_RATES, which keeps it for as long as a
// period lasts; every other key (job locks, slots) in JETJOB_LOCKS.
func BucketOf(key string) string {
	if strings.HasPrefix(key, flowkv.RatePrefix) {
		return RatesBucket
	}
	return LocksBucket
}
