package scheduler

// Crash stops the scheduler as if its process had died: its leases are not
// released (they expire after the TTL), in-flight publishes are not
// drained. Run returns once everything stopped.
func (s *Scheduler) Crash() {
	s.mu.Lock()
	lm, cancel := s.leases, s.cancel
	s.mu.Unlock()
	s.crashed.Store(true)
	if lm != nil {
		lm.Abandon()
	}
	if cancel != nil {
		cancel()
	}
}

// OwnedShards is the number of shards this scheduler holds a valid lease on.
func (s *Scheduler) OwnedShards() int {
	s.mu.Lock()
	lm := s.leases
	s.mu.Unlock()
	if lm == nil {
		return 0
	}
	return len(lm.Held())
}
