// Package groupcommit sends items in batches, the way a database's group
// commit writes the transactions that arrived while the last write was on
// its way: one goroutine forms batches, and what arrives while earlier
// batches are being sent goes out together as the next one. An idle worker
// thus sends each item at once, and a busy one sends one message for many
// runs. The worker uses it three times: for run events (package runevents),
// and for its two questions to the schedulers (package questions).
package groupcommit

import (
	"context"
	"sync"
)

// Batcher forms and sends batches of up to max items (or maxBytes by
// size). Up to inFlight batches are sent at once, so that one send stuck
// in a JetStream leader change does not hold up everything queued behind
// it.
//
// send delivers each item's result itself (typically on a buffered
// channel in the item); fail tells an item that it was never sent (the
// Batcher stopped).
type Batcher[T any] struct {
	queue    chan T
	done     chan struct{} // closed when Run returns
	max      int
	maxBytes int         // 0: no byte bound
	size     func(T) int // with maxBytes
	inFlight int
	send     func(ctx context.Context, batch []T)
	fail     func(T)
}

// New returns a Batcher; its Run must be started for anything to be sent.
func New[T any](max, inFlight int, send func(ctx context.Context, batch []T), fail func(T)) *Batcher[T] {
	return &Batcher[T]{queue: make(chan T, max), done: make(chan struct{}), max: max, inFlight: inFlight,
		send: send, fail: fail}
}

// LimitBytes also ends a batch once the sizes of its items reach maxBytes.
// Call it before Run.
func (b *Batcher[T]) LimitBytes(maxBytes int, size func(T) int) {
	b.maxBytes, b.size = maxBytes, size
}

// Done is closed once Run has returned: every item was sent or failed.
func (b *Batcher[T]) Done() <-chan struct{} { return b.done }

// submit queues v; false if the Batcher has stopped.
func (b *Batcher[T]) submit(v T) bool {
	select {
	case b.queue <- v:
		return true
	case <-b.done:
		return false
	}
}

// Run forms and sends batches until ctx ends; items still queued then
// fail. ctx is also the context of every send. Run returns once every
// started send has returned.
func (b *Batcher[T]) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer func() {
		wg.Wait()
		close(b.done)
	}()
	slots := make(chan struct{}, b.inFlight)
	for {
		var batch []T
		select {
		case v := <-b.queue:
			batch = append(make([]T, 0, b.max), v)
		case <-ctx.Done():
			b.failQueued()
			return
		}
		// Wait for a free send while more items gather: under load a
		// batch fills while the previous ones are on their way.
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			for _, v := range batch {
				b.fail(v)
			}
			b.failQueued()
			return
		}
		size := 0
		if b.maxBytes > 0 {
			size = b.size(batch[0])
		}
	more:
		for len(batch) < b.max {
			select {
			case v := <-b.queue:
				batch = append(batch, v)
				if b.maxBytes > 0 {
					if size += b.size(v); size >= b.maxBytes {
						break more
					}
				}
			default:
				break more
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			b.send(ctx, batch)
			<-slots
		}()
	}
}

func (b *Batcher[T]) failQueued() {
	for {
		select {
		case v := <-b.queue:
			b.fail(v)
		default:
			return
		}
	}
}

// Await submits v to b and waits for its result on res, which b's send
// or fail delivers. ok is false when v was never sent: b had stopped (an
// item queued just as it stopped is recognised once Run has returned, as
// every send delivers its results before that).
func Await[T, R any](b *Batcher[T], v T, res <-chan R) (r R, ok bool) {
	if !b.submit(v) {
		return r, false
	}
	select {
	case r = <-res:
		return r, true
	case <-b.done:
		select {
		case r = <-res:
			return r, true
		default:
			return r, false
		}
	}
}
