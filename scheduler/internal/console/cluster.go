package console

import (
	"fmt"
	"net/http"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// clusterPage is the cluster page's data: GET /api/v1/cluster.
type clusterPage struct {
	C apiv1.Cluster
	// Orphaned counts the shards no live scheduler holds, Lagging those
	// whose planning is more than a few seconds behind.
	Orphaned, Lagging int
	// Ranges are the shards as the page lists them: a run of consecutive
	// shards of one owner is one row (64 shards of one scheduler, one row).
	Ranges []shardRange
}

// shardRange is consecutive shards with the same owner ("" for none).
type shardRange struct {
	First, Last int
	Owner       string
	// MinEpoch and MaxEpoch bound the shards' lease epochs.
	MinEpoch, MaxEpoch int64
	// Expires is the earliest lease end (zero when a shard has none).
	Expires time.Time
	Jobs    int64
	// Lag is the largest planning lag of the range's shards.
	Lag float64
}

// Shards is the range as text: "7" or "0–31 (32)".
func (r shardRange) Shards() string {
	if r.First == r.Last {
		return fmt.Sprint(r.First)
	}
	return fmt.Sprintf("%d–%d (%d)", r.First, r.Last, r.Last-r.First+1)
}

// Epochs is the range's lease epochs: "7" or "3–7".
func (r shardRange) Epochs() string {
	if r.MinEpoch == r.MaxEpoch {
		return fmt.Sprint(r.MinEpoch)
	}
	return fmt.Sprintf("%d–%d", r.MinEpoch, r.MaxEpoch)
}

// shardRanges collapses shards (in shard order) into ranges per owner.
func shardRanges(shards []apiv1.ShardState) []shardRange {
	var out []shardRange
	for _, s := range shards {
		if n := len(out); n > 0 && out[n-1].Owner == s.Owner && out[n-1].Last+1 == s.Shard {
			r := &out[n-1]
			r.Last, r.Jobs, r.Lag = s.Shard, r.Jobs+s.Jobs, max(r.Lag, s.PlanningLagSeconds)
			r.MinEpoch, r.MaxEpoch = min(r.MinEpoch, s.Epoch), max(r.MaxEpoch, s.Epoch)
			if r.Expires.IsZero() || (!s.ExpiresAt.IsZero() && s.ExpiresAt.Before(r.Expires)) {
				r.Expires = s.ExpiresAt
			}
			continue
		}
		out = append(out, shardRange{First: s.Shard, Last: s.Shard, Owner: s.Owner, MinEpoch: s.Epoch, MaxEpoch: s.Epoch,
			Expires: s.ExpiresAt, Jobs: s.Jobs, Lag: s.PlanningLagSeconds})
	}
	return out
}

// lagWarn is the planning lag the page marks: a healthy shard's planner
// runs about every second.
const lagWarn = 5.0

func (c *Console) cluster(w http.ResponseWriter, r *http.Request) error {
	u, err := c.me(r)
	if err != nil {
		return err
	}
	var data clusterPage
	if _, err := c.call(r, http.MethodGet, "/api/v1/cluster", nil, nil, &data.C); err != nil {
		return err
	}
	for _, s := range data.C.Shards {
		if s.Owner == "" {
			data.Orphaned++
		}
		if s.PlanningLagSeconds > lagWarn {
			data.Lagging++
		}
	}
	data.Ranges = shardRanges(data.C.Shards)
	return c.render(w, r, http.StatusOK, "cluster", page{Title: c.lang(r, u).T("Cluster"), User: u, Data: data})
}
