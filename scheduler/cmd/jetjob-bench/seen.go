package main

import (
	"fmt"
	"sync"
	"time"
)

// seenSet counts handler invocations per (job, fire time) in a worker
// process without letting the bookkeeping dominate the worker's memory:
// no benchmark job fires twice within one second (its fires are whole
// seconds, or whole seconds plus its fixed phase, see --phases), so each job
// gets a bitset over seconds since Base (a few words per job), a fire going
// to the second it falls in, and only repeats and out-of-range fire times go
// into maps.
type seenSet struct {
	mu   sync.Mutex
	snap Seen
}

// Seen is what a worker writes at exit (gob).
type Seen struct {
	// Base is the Unix second of bit 0 in Bits.
	Base int64
	// Bits[job] has bit (t - Base) set for each fire time t (in whole
	// seconds, rounded down) that reached a handler at least once.
	Bits map[int64][]uint64
	// Odd counts fire times before Base or too far after it, and those
	// off their job's phase.
	Odd map[FireKey]int
	// Phase is, per job, the microsecond within its second of the first
	// fire seen: a job's fires share it (whole seconds, or whole seconds
	// plus a fixed phase) unless they are a workflow's node runs, due when
	// their upstream ended, two of which may fall in one second: a fire
	// off its job's phase is counted exactly, in Odd.
	Phase map[int64]int64
	// Repeats counts invocations after the first of a (job, fire time)
	// recorded in Bits.
	Repeats map[FireKey]int
	// ByHandler counts invocations per handler.
	ByHandler map[string]int64
	// Total is every invocation.
	Total int64
}

// FireKey is one fire of one job (µs since the epoch, PostgreSQL's
// resolution).
type FireKey struct {
	Job int64
	At  int64
}

func (k FireKey) String() string {
	return fmt.Sprintf("job %d at %s", k.Job, time.UnixMicro(k.At).UTC().Format(time.RFC3339Nano))
}

func newSeenSet(base time.Time) *seenSet {
	return &seenSet{snap: Seen{
		Base: base.Unix(), Bits: map[int64][]uint64{}, Odd: map[FireKey]int{}, Phase: map[int64]int64{},
		Repeats: map[FireKey]int{}, ByHandler: map[string]int64{},
	}}
}

func (s *seenSet) add(job int64, at time.Time, handler string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.snap.Total++
	s.snap.ByHandler[handler]++
	if _, ok := s.snap.Phase[job]; !ok {
		s.snap.Phase[job] = phase(at)
	}
	sec := at.Unix()
	if s.snap.odd(job, at) {
		s.snap.Odd[FireKey{job, at.UnixMicro()}]++
		return
	}
	i := sec - s.snap.Base
	w := s.snap.Bits[job]
	for int64(len(w)) <= i/64 {
		w = append(w, 0)
	}
	bit := uint64(1) << (i % 64)
	if w[i/64]&bit != 0 {
		s.snap.Repeats[FireKey{job, at.UnixMicro()}]++
	}
	w[i/64] |= bit
	s.snap.Bits[job] = w
}

func (s *seenSet) snapshot() Seen {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.snap
}

// union merges the workers' sets: invoked(job, t) reports whether any
// worker ran the fire, and dup counts repeats within and across workers.
type union struct {
	sets []Seen
}

func (u *union) invoked(job int64, at time.Time) bool {
	for i := range u.sets {
		if u.sets[i].has(job, at) {
			return true
		}
	}
	return false
}

// phase is the microsecond of at within its second.
func phase(at time.Time) int64 { return at.UnixMicro() % 1e6 }

// odd reports whether the fire of job at at is counted in Odd: out of the
// bitset's range, or off the job's phase.
func (s *Seen) odd(job int64, at time.Time) bool {
	sec := at.Unix()
	if p, ok := s.Phase[job]; ok && p != phase(at) {
		return true
	}
	return sec < s.Base || sec-s.Base > 1<<24
}

func (s *Seen) has(job int64, at time.Time) bool {
	sec := at.Unix()
	if s.odd(job, at) {
		return s.Odd[FireKey{job, at.UnixMicro()}] > 0
	}
	i := sec - s.Base
	w := s.Bits[job]
	return int64(len(w)) > i/64 && w[i/64]&(uint64(1)<<(i%64)) != 0
}

// duplicates counts extra invocations of a fire over all workers and
// returns up to 10 examples.
func (u *union) duplicates() (int64, []string) {
	var n int64
	var ex []string
	note := func(k FireKey, extra int) {
		n += int64(extra)
		if len(ex) < 10 {
			ex = append(ex, fmt.Sprintf("%s: %d extra", k, extra))
		}
	}
	odd := map[FireKey]int{}
	for i := range u.sets {
		for k, c := range u.sets[i].Repeats {
			note(k, c)
		}
		for k, c := range u.sets[i].Odd {
			odd[k] += c
		}
	}
	for k, c := range odd {
		if c > 1 {
			note(k, c-1)
		}
	}
	// The same fire in two workers' bitsets.
	for i := range u.sets {
		for j := i + 1; j < len(u.sets); j++ {
			a, b := &u.sets[i], &u.sets[j]
			for job, wa := range a.Bits {
				wb := b.Bits[job]
				if len(wb) == 0 {
					continue
				}
				for x := range wa {
					// Align b's words onto a's seconds.
					sec0 := a.Base + int64(x)*64
					for bit := range 64 {
						if wa[x]&(uint64(1)<<bit) == 0 {
							continue
						}
						if b.has(job, time.Unix(sec0+int64(bit), 0)) {
							note(FireKey{job, (sec0 + int64(bit)) * 1e6}, 1)
						}
					}
				}
			}
		}
	}
	return n, ex
}

func (u *union) total() int64 {
	var n int64
	for i := range u.sets {
		n += u.sets[i].Total
	}
	return n
}
