package groupcommit

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jetjob/jetjob/internal/testwait"
)

const waitLimit = 30 * time.Second

// recv waits for a value on ch, failing the test after waitLimit.
func recv[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	return testwait.Recv(t, waitLimit, what, ch)
}

type item struct {
	n   int
	res chan int // the size of the batch that carried it
}

func newItem(n int) *item { return &item{n: n, res: make(chan int, 1)} }

// What arrives while a batch is on its way goes out together as the next
// one, up to max items; each item gets its result.
func TestItemsQueuedMeanwhileGoTogether(t *testing.T) {
	sent := make(chan []int, 10)
	gate := make(chan struct{})
	b := New(3, 1, func(_ context.Context, batch []*item) {
		ns := make([]int, len(batch))
		for i, it := range batch {
			ns[i] = it.n
		}
		sent <- ns
		<-gate
		for _, it := range batch {
			it.res <- len(batch)
		}
	}, func(it *item) { it.res <- -1 })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go b.Run(ctx)

	first := newItem(1)
	got := make(chan int, 8)
	go func() { r, _ := Await(b, first, first.res); got <- r }()
	if ns := recv(t, "the first batch", sent); !slices.Equal(ns, []int{1}) {
		t.Fatalf("first batch %v, want [1]: an idle batcher sends at once", ns)
	}
	// The only send slot is busy: items 2..5 wait. At most 3 go next.
	for n := 2; n <= 5; n++ {
		it := newItem(n)
		if !b.submit(it) {
			t.Fatal("submit refused while running")
		}
		go func() { got <- <-it.res }()
	}
	close(gate)
	if ns := recv(t, "the second batch", sent); !slices.Equal(ns, []int{2, 3, 4}) {
		t.Errorf("second batch %v, want [2 3 4]", ns)
	}
	if ns := recv(t, "the third batch", sent); !slices.Equal(ns, []int{5}) {
		t.Errorf("third batch %v, want [5]", ns)
	}
	var sizes []int
	for range 5 {
		sizes = append(sizes, recv(t, "a result", got))
	}
	slices.Sort(sizes)
	if !slices.Equal(sizes, []int{1, 1, 3, 3, 3}) {
		t.Errorf("batch sizes seen by the items %v, want [1 1 3 3 3]", sizes)
	}
}

// A byte bound ends a batch early.
func TestByteBound(t *testing.T) {
	sent := make(chan int, 10)
	gate := make(chan struct{})
	b := New(10, 1, func(_ context.Context, batch []*item) {
		sent <- len(batch)
		<-gate
		for _, it := range batch {
			it.res <- 0
		}
	}, func(it *item) { it.res <- -1 })
	b.LimitBytes(100, func(it *item) int { return it.n })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go b.Run(ctx)
	b.submit(newItem(1))
	recv(t, "the first batch", sent)
	for range 4 {
		b.submit(newItem(60))
	}
	close(gate)
	if n := recv(t, "the second batch", sent); n != 2 {
		t.Errorf("second batch of %d items of 60 bytes, want 2 (bound 100)", n)
	}
}

// Items queued when the batcher stops fail; after it stopped Await
// reports them unsent.
func TestStopFailsQueued(t *testing.T) {
	gate := make(chan struct{})
	started := make(chan struct{}, 1)
	b := New(1, 1, func(_ context.Context, batch []*item) {
		started <- struct{}{}
		<-gate
		batch[0].res <- 1
	}, func(it *item) { it.res <- -1 })
	ctx, cancel := context.WithCancel(context.Background())
	go b.Run(ctx)
	b.submit(newItem(1))
	recv(t, "the first send", started)
	queued := newItem(2)
	b.submit(queued)
	cancel()
	// The only send slot stays busy until the gate opens: the queued item
	// can only fail.
	if r := recv(t, "the queued item's result", queued.res); r != -1 {
		t.Errorf("queued item got %d, want it failed", r)
	}
	select {
	case <-b.Done():
		t.Fatal("Run returned while a send was under way")
	default:
	}
	close(gate)
	recv(t, "Run to return", b.Done())
	late := newItem(3)
	if _, ok := Await(b, late, late.res); ok {
		t.Error("Await after the stop reported the item sent")
	}
}
