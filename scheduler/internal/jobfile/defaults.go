package jobfile

import (
	"reflect"
	"time"

	"github.com/jetjob/jetjob/internal/policy"
	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/shared/wire"
)

// Normalize returns spec with what the API stores for each field a spec
// leaves out filled in, so that a file that omits a default and the job the
// API returns compare equal. Fields the API stores as sent (their zero is
// their default) need no entry here; a new field whose default is not its
// zero value does.
func Normalize(spec apiv1.JobSpec) apiv1.JobSpec {
	spec = normalizeSchedules(spec)
	if spec.ScheduleType == "" {
		spec.ScheduleType = "none"
	}
	if spec.Timezone == "" {
		spec.Timezone = "UTC"
	}
	if spec.MisfirePolicy == "" {
		spec.MisfirePolicy = string(policy.DefaultMisfire)
	}
	if spec.RouteStrategy == "" {
		spec.RouteStrategy = string(policy.DefaultRoute)
	}
	if spec.BlockStrategy == "" {
		spec.BlockStrategy = string(policy.DefaultBlock)
	}
	if spec.RetryBackoff == "" {
		spec.RetryBackoff = policy.DefaultRetryBackoff
	}
	if spec.RetryInitial == 0 {
		spec.RetryInitial = apiv1.Duration(policy.DefaultRetryInitial)
	}
	if spec.RetryMax == 0 {
		spec.RetryMax = apiv1.Duration(max(policy.DefaultRetryMax, time.Duration(spec.RetryInitial)))
	}
	if spec.Enabled == nil {
		enabled := true
		spec.Enabled = &enabled
	}
	if spec.Sharding != nil && spec.Sharding.Total <= 1 {
		spec.Sharding = nil // 0 and 1 are stored as "not sharded"
	}
	if len(spec.AlarmEmails) == 0 {
		spec.AlarmEmails = nil
	}
	if len(spec.ChildJobIDs) == 0 {
		spec.ChildJobIDs = nil
	}
	if len(spec.ExcludeCalendars) == 0 {
		spec.ExcludeCalendars = nil
	}
	if len(spec.IncludeCalendars) == 0 {
		spec.IncludeCalendars = nil
	}
	if len(spec.Labels) == 0 {
		spec.Labels = nil
	}
	// A rate reads back in its short form (100/60s is 100/1m).
	spec.RateLimit, spec.KeyRateLimit = wire.CanonicalRate(spec.RateLimit), wire.CanonicalRate(spec.KeyRateLimit)
	if len(spec.SecretEnv) == 0 {
		// A file carries secrets' names only, never values
		// (docs/jobs.md, "Secrets").
		spec.SecretEnv = nil
	}
	return spec
}

// normalizeSchedules makes a spec's schedules list what the API returns:
// its first entry also in the single schedule fields, every zone named,
// and no list for one schedule.
func normalizeSchedules(spec apiv1.JobSpec) apiv1.JobSpec {
	if len(spec.Schedules) == 0 {
		spec.Schedules = nil
		return spec
	}
	list := make([]apiv1.Schedule, len(spec.Schedules))
	for i, s := range spec.Schedules {
		if s.Timezone == "" {
			s.Timezone = "UTC"
		}
		list[i] = s
	}
	if spec.ScheduleType == "" {
		spec.ScheduleType, spec.ScheduleExpr, spec.Timezone = list[0].Type, list[0].Expr, list[0].Timezone
	}
	spec.Schedules = list
	if len(list) == 1 {
		spec.Schedules = nil
	}
	return spec
}

// Minimize returns spec without the fields that hold their default, so a
// file stays short and says only what was chosen. A field is left out when
// leaving it out changes nothing once normalized, which also covers
// defaults that depend on another field (retry_max on retry_initial).
func Minimize(spec apiv1.JobSpec) apiv1.JobSpec {
	want := Normalize(spec)
	out := spec
	v := reflect.ValueOf(&out).Elem()
	for _, f := range jobFields {
		if f.name == fieldGroup || f.name == fieldName {
			continue
		}
		fv := v.Field(f.index)
		if fv.IsZero() {
			continue
		}
		saved := reflect.New(f.typ).Elem()
		saved.Set(fv)
		fv.SetZero()
		if !reflect.DeepEqual(Normalize(out), want) {
			fv.Set(saved)
		}
	}
	return out
}
