package backlog

import "github.com/prometheus/client_golang/prometheus"

var (
	pendingDesc = prometheus.NewDesc("jetjob_group_pending_triggers",
		"Triggers stored in JETJOB_TRIGGERS that no worker has taken yet, per group (the backlog), one per run: a trigger batch counts as its runs.", []string{"group"}, nil)
	oldestDesc = prometheus.NewDesc("jetjob_group_oldest_pending_seconds",
		"How long the group's oldest pending trigger has waited in JETJOB_TRIGGERS (0 when none waits).", []string{"group"}, nil)
	inFlightDesc = prometheus.NewDesc("jetjob_group_inflight_triggers",
		"Triggers delivered to the group's workers and not yet acknowledged: running, held by a block strategy, or on a dead worker awaiting redelivery.", []string{"group"}, nil)
	redeliveredDesc = prometheus.NewDesc("jetjob_group_redelivered_triggers",
		"Unacknowledged triggers of the group delivered more than once (a worker died with them or handed them back).", []string{"group"}, nil)
	unappliedDesc = prometheus.NewDesc("jetjob_events_unapplied",
		"Run event messages stored in JETJOB_EVENTS and not yet applied to PostgreSQL.", nil, nil)
	oldestUnappliedDesc = prometheus.NewDesc("jetjob_events_oldest_unapplied_seconds",
		"Age of the oldest run event message not yet applied (0 when none): how stale run records are.", nil, nil)
	sampledDesc = prometheus.NewDesc("jetjob_backlog_sampled_timestamp_seconds",
		"When the group backlog figures were last read from JetStream (Unix time): they are stale if this stops moving.", nil, nil)
)

// Collector exposes the latest sample. Groups the sample no longer sees
// disappear instead of keeping a stale value.
func (s *Sampler) Collector() prometheus.Collector { return collector{s} }

type collector struct{ s *Sampler }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- pendingDesc
	ch <- oldestDesc
	ch <- inFlightDesc
	ch <- redeliveredDesc
	ch <- unappliedDesc
	ch <- oldestUnappliedDesc
	ch <- sampledDesc
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	snap := c.s.Latest()
	if snap.At.IsZero() {
		return
	}
	ch <- prometheus.MustNewConstMetric(sampledDesc, prometheus.GaugeValue, float64(snap.At.UnixNano())/1e9)
	ch <- prometheus.MustNewConstMetric(unappliedDesc, prometheus.GaugeValue, float64(snap.Events.Unapplied))
	ch <- prometheus.MustNewConstMetric(oldestUnappliedDesc, prometheus.GaugeValue, snap.Events.OldestUnapplied.Seconds())
	for _, g := range snap.Groups {
		ch <- prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, float64(g.Pending), g.Group)
		ch <- prometheus.MustNewConstMetric(oldestDesc, prometheus.GaugeValue, g.OldestPending.Seconds(), g.Group)
		ch <- prometheus.MustNewConstMetric(inFlightDesc, prometheus.GaugeValue, float64(g.InFlight), g.Group)
		ch <- prometheus.MustNewConstMetric(redeliveredDesc, prometheus.GaugeValue, float64(g.Redelivered), g.Group)
	}
}
