package worker

import (
	"context"
	"sync"
)

// groupCommit sends items in batches: one goroutine forms them, and what
// arrives while earlier batches are on their way goes out together as the
// next one, up to max items (or maxBytes by size). An idle worker thus
// sends each item at once, and a busy one sends one message for many runs.
// Up to inFlight batches are sent at once, so that one send stuck in a
// JetStream leader change does not hold up everything queued behind it.
//
// send delivers each item's result itself; fail tells an item that it was
// never sent (the worker stops).
type groupCommit[T any] struct {
	queue    chan T
	done     chan struct{} // closed when run returns
	max      int
	maxBytes int         // 0: no byte bound
	size     func(T) int // with maxBytes
	inFlight int
	send     func(batch []T)
	fail     func(T)
}

func newGroupCommit[T any](max, inFlight int, send func([]T), fail func(T)) *groupCommit[T] {
	return &groupCommit[T]{queue: make(chan T, max), done: make(chan struct{}), max: max, inFlight: inFlight,
		send: send, fail: fail}
}

// submit queues v; false if the sender has stopped.
func (g *groupCommit[T]) submit(v T) bool {
	select {
	case g.queue <- v:
		return true
	case <-g.done:
		return false
	}
}

// run forms and sends batches until ctx ends; items still queued then
// fail. It returns once every started send has returned.
func (g *groupCommit[T]) run(ctx context.Context) {
	var wg sync.WaitGroup
	defer func() {
		wg.Wait()
		close(g.done)
	}()
	slots := make(chan struct{}, g.inFlight)
	for {
		var batch []T
		select {
		case v := <-g.queue:
			batch = append(make([]T, 0, g.max), v)
		case <-ctx.Done():
			g.failQueued()
			return
		}
		// Wait for a free send while more items gather: under load a
		// batch fills while the previous ones are on their way.
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			for _, v := range batch {
				g.fail(v)
			}
			g.failQueued()
			return
		}
		size := 0
		if g.maxBytes > 0 {
			size = g.size(batch[0])
		}
	more:
		for len(batch) < g.max {
			select {
			case v := <-g.queue:
				batch = append(batch, v)
				if g.maxBytes > 0 {
					if size += g.size(v); size >= g.maxBytes {
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
			g.send(batch)
			<-slots
		}()
	}
}

func (g *groupCommit[T]) failQueued() {
	for {
		select {
		case v := <-g.queue:
			g.fail(v)
		default:
			return
		}
	}
}

// await submits v to g and waits for its result on res, which g's send
// or fail delivers. ok is false when v was never sent: g had stopped (an
// item queued just as it stopped is recognised once run has returned, as
// every send delivers its results before that).
func await[T, R any](g *groupCommit[T], v T, res <-chan R) (r R, ok bool) {
	if !g.submit(v) {
		return r, false
	}
	select {
	case r = <-res:
		return r, true
	case <-g.done:
		select {
		case r = <-res:
			return r, true
		default:
			return r, false
		}
	}
}
