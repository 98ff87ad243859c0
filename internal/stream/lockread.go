package stream

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// ReadLock reads a key of the locks bucket (a group's slots or rate cell,
// for the scheduler's queue view): nil without an error for a key that
// does not exist, which means nobody holds or waits. The workers write
// these keys (worker/internal/joblock); the scheduler only reads them.
func ReadLock(ctx context.Context, js jetstream.JetStream, c Config, key string) ([]byte, error) {
	kv, err := Locks(ctx, js, c)
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
