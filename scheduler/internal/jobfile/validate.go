package jobfile

import (
	"fmt"
	"strings"

	"github.com/jetjob/jetjob/internal/policy"
	"github.com/jetjob/jetjob/shared/schedule"
	"github.com/jetjob/jetjob/shared/wire"
)

// validate checks what can be checked without the cluster, with the
// shared parsers the API uses, so that a bad file fails before anything is
// written rather than half-way through an apply. The API checks again.
func (f *File) validate(p *problems) {
	groups := map[string]int{}
	for i, g := range f.Groups {
		path, line := fmt.Sprintf("groups[%d]", i), f.groupLines[i]
		if err := wire.CheckName("group", g.Name); err != nil {
			p.add(line, path+".name", "%v", err)
			continue
		}
		if first, dup := groups[g.Name]; dup {
			p.add(line, path, "group %s is already declared at line %d", g.Name, first)
			continue
		}
		groups[g.Name] = line
	}

	jobs := map[Key]int{}
	for i := range f.Jobs {
		j := &f.Jobs[i]
		path := fmt.Sprintf("jobs[%d]", i)
		at := func(field string) int {
			if l, ok := j.fieldLines[field]; ok {
				return l
			}
			return j.line
		}
		bad := func(field, format string, args ...any) {
			p.add(at(field), path+"."+field, format, args...)
		}
		s := &j.Spec
		if err := wire.CheckName("group", s.Group); err != nil {
			bad(fieldGroup, "%v", err)
		}
		switch {
		case s.Name == "":
			bad(fieldName, "required")
		case strings.TrimSpace(s.Name) != s.Name:
			bad(fieldName, "%q has spaces around it (the API would trim them)", s.Name)
		}
		if s.Handler == "" {
			bad("handler", "required")
		}
		if first, dup := jobs[j.Key()]; dup && s.Group != "" && s.Name != "" {
			p.add(j.line, path, "job %s is already defined at line %d", j.Key(), first)
		} else {
			jobs[j.Key()] = j.line
		}

		n := Normalize(*s)
		if _, err := schedule.Parse(n.ScheduleType, n.ScheduleExpr, n.Timezone); err != nil {
			field := "schedule_expr"
			switch msg := err.Error(); {
			case strings.Contains(msg, "zone"):
				field = "timezone"
			case strings.Contains(msg, "schedule type"):
				field = "schedule_type"
			}
			bad(field, "%v", err)
		} else if n.ScheduleType == string(schedule.Quartz) {
			if err := schedule.CheckQuartz(n.ScheduleExpr); err != nil {
				bad("schedule_expr", "%v", err)
			}
		}
		if _, err := policy.ParseMisfire(s.MisfirePolicy); err != nil {
			bad("misfire_policy", "%v", err)
		}
		route, err := policy.ParseRoute(s.RouteStrategy)
		if err != nil {
			bad("route_strategy", "%v", err)
		}
		if s.Sharding != nil {
			if _, err := policy.Shards(s.Sharding.Total, route); err != nil {
				bad("sharding", "%v", err)
			}
		}
		if _, err := policy.ParseBlock(s.BlockStrategy); err != nil {
			bad("block_strategy", "%v", err)
		}
		seen := map[Key]bool{}
		for _, c := range j.Children {
			switch {
			case c == j.Key():
				bad(fieldChildren, "%s names the job itself", c)
			case seen[c]:
				bad(fieldChildren, "%s is named twice", c)
			}
			seen[c] = true
		}
	}
}
