package xxljob

import (
	"slices"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// Apply returns cur (a job as the API holds it) with the fields an import
// owns set from want: everything the mapping sets, and the enabled flag
// only when withEnabled. The other fields (an alarm webhook, or anything
// set in jetjob after the import) stay as they are, so re-importing does
// not undo them. The result carries cur's version, for the PUT.
func Apply(cur apiv1.Job, want apiv1.JobSpec, withEnabled bool) apiv1.JobSpec {
	s := cur.JobSpec
	// The group and name derive from --group-prefix and the description:
	// a re-import matched by source follows their changes (a move, a
	// rename) instead of making the job again.
	s.Group, s.Name, s.Source = want.Group, want.Name, want.Source
	s.Description = want.Description
	s.Handler = want.Handler
	s.Params = want.Params
	s.ScriptLanguage, s.Script, s.ScriptRemark = want.ScriptLanguage, want.Script, want.ScriptRemark
	s.ScheduleType, s.ScheduleExpr, s.Timezone = want.ScheduleType, want.ScheduleExpr, want.Timezone
	s.MisfirePolicy, s.RouteStrategy, s.BlockStrategy = want.MisfirePolicy, want.RouteStrategy, want.BlockStrategy
	s.Timeout, s.MaxRetries = want.Timeout, want.MaxRetries
	if want.MaxRetries > 0 {
		s.RetryBackoff, s.RetryInitial = want.RetryBackoff, want.RetryInitial
	}
	s.ChildJobIDs = want.ChildJobIDs
	s.AlarmEmails = want.AlarmEmails
	s.Enabled = nil // kept as it is
	if withEnabled {
		s.Enabled = want.Enabled
	}
	s.Version = cur.Version
	return s
}

// Diff names the fields an import owns whose value differs between cur
// and want; none means the job is up to date.
func Diff(cur apiv1.Job, want apiv1.JobSpec, withEnabled bool) []string {
	var d []string
	add := func(differs bool, name string) {
		if differs {
			d = append(d, name)
		}
	}
	c := cur.JobSpec
	add(c.Group != want.Group, "group")
	add(c.Name != want.Name, "name")
	add(c.Source != want.Source, "source")
	add(c.Description != want.Description, "description")
	add(c.Handler != want.Handler, "handler")
	add(c.Params != want.Params, "params")
	add(c.ScriptLanguage != want.ScriptLanguage || !sameScript(c.Script, want.Script), "script")
	add(c.ScheduleType != want.ScheduleType || c.ScheduleExpr != want.ScheduleExpr ||
		(want.Timezone != "" && c.Timezone != want.Timezone), "schedule")
	add(c.MisfirePolicy != want.MisfirePolicy, "misfire")
	add(c.RouteStrategy != want.RouteStrategy, "route")
	add(c.BlockStrategy != want.BlockStrategy, "block")
	add(c.Timeout != want.Timeout, "timeout")
	add(c.MaxRetries != want.MaxRetries ||
		(want.MaxRetries > 0 && (c.RetryBackoff != want.RetryBackoff || c.RetryInitial != want.RetryInitial)), "retries")
	add(!sameIDs(c.ChildJobIDs, want.ChildJobIDs), "children")
	add(!slices.Equal(c.AlarmEmails, want.AlarmEmails), "alarm emails")
	add(withEnabled && want.Enabled != nil && cur.Enabled != *want.Enabled, "enabled")
	return d
}

// sameIDs compares child id lists as sets: their order means nothing.
func sameIDs(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// sameScript compares two optional script sources.
func sameScript(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
