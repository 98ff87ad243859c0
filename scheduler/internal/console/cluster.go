package console

import (
	"net/http"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// clusterPage is the cluster page's data: GET /api/v1/cluster.
type clusterPage struct {
	C apiv1.Cluster
	// Orphaned counts the shards no live scheduler holds, Lagging those
	// whose planning is more than a few seconds behind.
	Orphaned, Lagging int
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
	return c.render(w, r, http.StatusOK, "cluster", page{Title: "Cluster", User: u, Data: data})
}
