package timing

import (
	"encoding/json"
	"fmt"

	"github.com/jetjob/jetjob/shared/schedule"
)

// Part is one schedule of a job with several: cron or quartz, in its own
// zone (jobs.extra_schedules holds the parts after the first).
type Part struct {
	Type     string `json:"type"`
	Expr     string `json:"expr"`
	Timezone string `json:"timezone,omitempty"`
}

// Schedules parses a job's first schedule and its extra ones into one, the
// union of all (schedule.Union): the planner's, the store's and the API's
// one reading of a job's schedules.
func Schedules(typ, expr, tz string, extra []Part) (*schedule.Schedule, error) {
	first, err := schedule.Parse(typ, expr, tz)
	if err != nil || len(extra) == 0 {
		return first, err
	}
	parts := []*schedule.Schedule{first}
	for i, e := range extra {
		s, err := schedule.Parse(e.Type, e.Expr, e.Timezone)
		if err != nil {
			return nil, fmt.Errorf("schedules[%d]: %w", i+1, err)
		}
		parts = append(parts, s)
	}
	return schedule.Union(parts...)
}

// ParseParts reads jobs.extra_schedules ("" or NULL: none).
func ParseParts(js []byte) ([]Part, error) {
	if len(js) == 0 {
		return nil, nil
	}
	var parts []Part
	if err := json.Unmarshal(js, &parts); err != nil {
		return nil, fmt.Errorf("extra_schedules: %w", err)
	}
	return parts, nil
}
