package planner

import (
	"sync"

	"github.com/jetjob/jetjob/scheduler/internal/timing"
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
	typ, expr, tz, extra string
	s                    *schedule.Schedule
}

// maxCached bounds the cache: past it, the cache starts over. Re-parsing is
// cheap; unbounded memory on a million jobs is not.
const maxCached = 200_000

func newScheduleCache() *scheduleCache {
	return &scheduleCache{m: make(map[int64]cachedSchedule)}
}

// get returns the job's schedule: typ, expr and tz, in union with extra
// (the jobs.extra_schedules JSON, "" for none).
func (c *scheduleCache) get(jobID int64, typ, expr, tz, extra string) (*schedule.Schedule, error) {
	c.mu.Lock()
	e, ok := c.m[jobID]
	c.mu.Unlock()
	if ok && e.typ == typ && e.expr == expr && e.tz == tz && e.extra == extra {
		return e.s, nil
	}
	parts, err := timing.ParseParts([]byte(extra))
	if err != nil {
		return nil, err
	}
	s, err := timing.Schedules(typ, expr, tz, parts)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if len(c.m) >= maxCached {
		c.m = make(map[int64]cachedSchedule)
	}
	c.m[jobID] = cachedSchedule{typ: typ, expr: expr, tz: tz, extra: extra, s: s}
	c.mu.Unlock()
	return s, nil
}
