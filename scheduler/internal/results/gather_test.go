package results

import (
	"context"
	"slices"
	"testing"
	"time"
)

type gathered struct {
	batch []int
	ok    bool
}

func gatherAsync(ctx context.Context, in <-chan int, size int, linger time.Duration) <-chan gathered {
	out := make(chan gathered, 1)
	go func() {
		t := time.NewTimer(time.Hour)
		t.Stop()
		b, ok := gather(ctx, in, []int{0}, size, t, linger)
		out <- gathered{b, ok}
	}()
	return out
}

func await(t *testing.T, c <-chan gathered, what string) gathered {
	t.Helper()
	select {
	case g := <-c:
		return g
	case <-time.After(10 * time.Second):
		t.Fatalf("gather did not return within 10s: want %s", what)
		return gathered{}
	}
}

func send(t *testing.T, in chan<- int, m int) {
	t.Helper()
	select {
	case in <- m:
	case <-time.After(10 * time.Second):
		t.Fatalf("message %d not taken within 10s: gather stopped gathering", m)
	}
}

// A batch that fills up is applied at once, without waiting out the
// linger; what is left waits for the next batch.
func TestGatherFullBatchGoesAtOnce(t *testing.T) {
	in := make(chan int, 10)
	for i := 1; i <= 5; i++ {
		in <- i
	}
	g := await(t, gatherAsync(context.Background(), in, 4, time.Hour), "a full batch before the hour's linger")
	if !g.ok || !slices.Equal(g.batch, []int{0, 1, 2, 3}) {
		t.Errorf("gather = %v, %v; want [0 1 2 3]", g.batch, g.ok)
	}
	if len(in) != 2 {
		t.Errorf("%d messages left, want 2", len(in))
	}
}

// Messages arriving while the batch lingers join it; a batch that does not
// fill up is applied once the linger has passed since its first message.
func TestGatherWaitsTheLingerForMore(t *testing.T) {
	in := make(chan int)
	c := gatherAsync(context.Background(), in, 3, time.Hour)
	send(t, in, 1) // unbuffered: taken by gather while it lingers
	send(t, in, 2)
	if g := await(t, c, "the batch once two more messages filled it"); !g.ok || !slices.Equal(g.batch, []int{0, 1, 2}) {
		t.Errorf("gather = %v, %v; want [0 1 2]", g.batch, g.ok)
	}

	const linger = 50 * time.Millisecond
	begin := time.Now()
	g := await(t, gatherAsync(context.Background(), in, 100, linger), "the batch after its linger")
	if took := time.Since(begin); took < linger {
		t.Errorf("returned after %s, before the linger of %s", took, linger)
	}
	if !g.ok || !slices.Equal(g.batch, []int{0}) {
		t.Errorf("gather = %v, %v; want [0]", g.batch, g.ok)
	}
}

// A stopping applier gets back the batch it was gathering, to hand back
// (NAK) rather than apply half-way.
func TestGatherStopsWithTheContext(t *testing.T) {
	in := make(chan int)
	ctx, cancel := context.WithCancel(context.Background())
	c := gatherAsync(ctx, in, 100, time.Hour)
	send(t, in, 1)
	cancel()
	g := await(t, c, "the batch back after the stop")
	if g.ok || !slices.Equal(g.batch, []int{0, 1}) {
		t.Errorf("gather = %v, %v; want [0 1] and false", g.batch, g.ok)
	}
}
