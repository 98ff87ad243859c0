package planner

import (
	"sync"

	"github.com/jetjob/jetjob/shared/schedule"
)

// scheduleCache keeps parsed schedules so that a pass over thousands of due
// jobs does not re-parse every cron expression. An entry is keyed by job id
// and valid while the job's schedule fields are unchanged.
type scheduleCache struct {
	mu sync.Mutex
	m  map[int64]cachedSchedule
}

type cachedSchedule struct {
	typ, expr, tz string
	s             *schedule.Schedule
}

// maxCached bounds the cache: past it, the cache starts over. Re-parsing is
// cheap; unbounded memory on a million jobs is not.
const maxCached = 200_000

func newScheduleCache() *scheduleCache {
	return &scheduleCache{m: make(map[int64]cachedSchedule)}
}

func (c *scheduleCache) get(jobID int64, typ, expr, tz string) (*schedule.Schedule, error) {
	c.mu.Lock()
	e, ok := c.m[jobID]
	c.mu.Unlock()
	if ok && e.typ == typ && e.expr == expr && e.tz == tz {
		return e.s, nil
	}
	s, err := schedule.Parse(typ, expr, tz)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if len(c.m) >= maxCached {
		c.m = make(map[int64]cachedSchedule)
	}
	c.m[jobID] = cachedSchedule{typ: typ, expr: expr, tz: tz, s: s}
	c.mu.Unlock()
	return s, nil
}
