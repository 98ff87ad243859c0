package scheduler

import (
	"net"
	"slices"

	"github.com/jetjob/jetjob/shared/egress"
)

// egressPolicy is the one policy for every connection the scheduler makes
// to a target a user chose (alarm webhooks today): Config.Egress, with the
// scheduler's own API listener added to the listeners never reached.
func (s *Scheduler) egressPolicy() (*egress.Policy, error) {
	cfg := s.cfg.Egress
	if s.deps.Listener != nil {
		if a, ok := s.deps.Listener.Addr().(*net.TCPAddr); ok {
			cfg.Self = append(slices.Clone(cfg.Self), a.AddrPort())
		}
	}
	return egress.New(cfg)
}
