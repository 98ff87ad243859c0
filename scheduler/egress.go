package scheduler

import (
	"net"
	"slices"

	"github.com/jetjob/jetjob/internal/egress"
)

// egressPolicy is the one policy for every connection the scheduler makes
// to a target a user chose (alarm webhooks today): Config.Egress, with the
// scheduler's own API and metrics listeners added to the listeners never
// reached.
func (s *Scheduler) egressPolicy() (*egress.Policy, error) {
	cfg := s.cfg.Egress
	cfg.Self = slices.Clone(cfg.Self)
	for _, ln := range []net.Listener{s.deps.Listener, s.deps.MetricsListener} {
		if ln == nil {
			continue
		}
		if a, ok := ln.Addr().(*net.TCPAddr); ok {
			cfg.Self = append(cfg.Self, a.AddrPort())
		}
	}
	return egress.New(cfg)
}
