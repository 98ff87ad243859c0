package api

import (
	"context"
	"errors"
	"fmt"
	"net/mail"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jetjob/jetjob/internal/policy"
	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/auth"
	"github.com/jetjob/jetjob/scheduler/internal/paramtmpl"
	"github.com/jetjob/jetjob/scheduler/internal/store"
	"github.com/jetjob/jetjob/scheduler/internal/timing"
	"github.com/jetjob/jetjob/shared/schedule"
	"github.com/jetjob/jetjob/shared/wire"
)

// errInvalid marks input errors: they answer 400 with their message.
var errInvalid = errors.New("invalid input")

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errInvalid, fmt.Sprintf(format, args...))
}

const (
	maxNameLen        = 200
	maxDescriptionLen = 2000
	maxHandlerLen     = 255
	maxTimeout        = 7 * 24 * time.Hour
	maxRetries        = 100
)

// jobFromSpec validates a user's job spec and returns the job to store.
// Every problem is reported at once, so a user fixes them in one go.
func (s *Server) jobFromSpec(ctx context.Context, spec apiv1.JobSpec, now time.Time) (store.Job, error) {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	if err := wire.CheckName("group", spec.Group); err != nil {
		add("%v", err)
	} else if ok, err := s.store.GroupExists(ctx, spec.Group); err != nil {
		return store.Job{}, err
	} else if !ok {
		add("unknown group %q: create it first (POST /api/v1/groups)", spec.Group)
	}
	name := strings.TrimSpace(spec.Name)
	switch {
	case name == "":
		add("name is required")
	case utf8.RuneCountInString(name) > maxNameLen:
		add("name is longer than %d characters", maxNameLen)
	case nameProblem(name) != "":
		add("name %s", nameProblem(name))
	}
	if utf8.RuneCountInString(spec.Description) > maxDescriptionLen {
		add("description is longer than %d characters", maxDescriptionLen)
	}
	if spec.Handler == "" {
		add("handler is required")
	} else if err := wire.CheckHandler(spec.Handler); err != nil {
		add("%v", err)
	}
	if len(spec.Params) > wire.MaxParamsBytes {
		add("params are %d bytes, more than the limit of %d (64 KiB)", len(spec.Params), wire.MaxParamsBytes)
	}
	extra := splitSchedules(&spec, add)
	tz := spec.Timezone
	if tz == "" {
		tz = "UTC"
	}
	if sched, err := timing.Schedules(spec.ScheduleType, spec.ScheduleExpr, tz, extra); err != nil {
		add("%v", err)
	} else if at, ok := sched.At(); ok && !at.After(now) {
		add("once time %s is in the past", at.Format(time.RFC3339))
	} else if sched.Type() == schedule.Quartz {
		if err := schedule.CheckQuartz(spec.ScheduleExpr); err != nil {
			add("%v", err)
		} else if _, ok := sched.Next(now); !ok {
			add("quartz expression %q never fires again: its years are past", spec.ScheduleExpr)
		}
	}
	misfire, err := policy.ParseMisfire(spec.MisfirePolicy)
	if err != nil {
		add("%v", err)
	}
	route, err := policy.ParseRoute(spec.RouteStrategy)
	if err != nil {
		add("%v", err)
	}
	block, err := policy.ParseBlock(spec.BlockStrategy)
	if err != nil {
		add("%v", err)
	}
	var shards int
	if spec.Sharding != nil {
		if shards, err = policy.Shards(spec.Sharding.Total, route); err != nil {
			add("%v", err)
		}
	}
	switch {
	case spec.MaxConcurrency < 0 || spec.MaxConcurrency > wire.MaxConcurrencyLimit:
		add("max_concurrency %d: want 0 (no cap) to %d", spec.MaxConcurrency, wire.MaxConcurrencyLimit)
	case spec.MaxConcurrency > 0 && err == nil && block != policy.BlockConcurrent:
		add("max_concurrency is only allowed with block_strategy concurrent (got %s)", block)
	}
	timeout := time.Duration(spec.Timeout)
	if timeout < 0 || timeout > maxTimeout {
		add("timeout %s: want 0 (none) up to %s", timeout, maxTimeout)
	}
	if spec.MaxRetries < 0 || spec.MaxRetries > maxRetries {
		add("max_retries %d: want 0 to %d", spec.MaxRetries, maxRetries)
	}
	backoff := spec.RetryBackoff
	switch backoff {
	case "":
		backoff = policy.DefaultRetryBackoff
	case "fixed", "exponential":
	default:
		add("unknown retry_backoff %q (want fixed or exponential)", spec.RetryBackoff)
	}
	initial, maxDelay := time.Duration(spec.RetryInitial), time.Duration(spec.RetryMax)
	if initial == 0 {
		initial = policy.DefaultRetryInitial
	}
	if maxDelay == 0 {
		maxDelay = max(policy.DefaultRetryMax, initial)
	}
	if initial < 0 || initial > 24*time.Hour {
		add("retry_initial %s: want up to 24h", initial)
	}
	if maxDelay < initial || maxDelay > 7*24*time.Hour {
		add("retry_max %s: want at least retry_initial (%s) and at most 168h", maxDelay, initial)
	}
	seen := map[int64]bool{}
	for _, c := range spec.ChildJobIDs {
		if c <= 0 || seen[c] {
			add("child_job_ids: %d is not a positive, distinct job id", c)
		}
		seen[c] = true
	}
	if len(spec.ChildJobIDs) > 100 {
		add("child_job_ids: at most 100 children")
	}
	if spec.AlarmWebhook != "" {
		if u, err := url.Parse(spec.AlarmWebhook); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			add("alarm_webhook %q: want an http:// or https:// URL", spec.AlarmWebhook)
		} else if err := s.cfg.Egress.CheckURL(u); err != nil {
			add("alarm_webhook %q: %v (an administrator may allow internal targets with --egress-allow / JETJOB_EGRESS_ALLOW)",
				u.Redacted(), err)
		}
	}
	for _, e := range spec.AlarmEmails {
		if a, err := mail.ParseAddress(e); err != nil || a.Address != e {
			add("alarm_emails: %q is not a plain email address", e)
		}
	}
	if len(spec.Source) > 200 || strings.ContainsFunc(spec.Source, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		add("source: at most 200 characters, no control characters")
	}
	if err := wire.CheckSecretEnv(spec.SecretEnv); err != nil {
		add("%v", err)
	}
	script := checkScript(spec, add)
	checkSchedOps(spec, tz, extra, now, add)
	checkJobCalendars(spec, add)
	checkLabels(spec, add)
	flow := checkJobFlow(spec, add)
	if spec.ParamsTemplate {
		if _, err := paramtmpl.Parse(spec.Params, tz); err != nil {
			add("params: %v", err)
		}
	}
	if len(problems) > 0 {
		return store.Job{}, invalidf("%s", strings.Join(problems, "; "))
	}
	enabled := true
	if spec.Enabled != nil {
		enabled = *spec.Enabled
	}
	j := store.Job{
		Group: spec.Group, Name: name, Description: spec.Description, Handler: spec.Handler,
		Params: spec.Params, ScheduleType: spec.ScheduleType, ScheduleExpr: spec.ScheduleExpr,
		Timezone: tz, MisfirePolicy: string(misfire), RouteStrategy: string(route),
		BlockStrategy: string(block), MaxConcurrency: spec.MaxConcurrency, Shards: shards, Timeout: timeout, MaxRetries: spec.MaxRetries, Enabled: enabled,
		RetryBackoff: backoff, RetryInitial: initial, RetryMax: maxDelay, ChildJobIDs: spec.ChildJobIDs,
		AlarmWebhook: spec.AlarmWebhook, AlarmEmails: spec.AlarmEmails, Source: spec.Source,
		Script: script, ScriptSourceGiven: spec.Script != nil, ScriptRemark: spec.ScriptRemark,
		ExtraSchedules: extra, ExcludeCalendars: spec.ExcludeCalendars, IncludeCalendars: spec.IncludeCalendars,
		Labels: spec.Labels, Owner: strings.TrimSpace(spec.Owner), ParamsTemplate: spec.ParamsTemplate,
		SecretEnv: spec.SecretEnv, Flow: flow,
	}
	setSchedOps(&j, spec)
	return j, nil
}

func jobDoc(j store.Job) apiv1.Job {
	d := apiv1.Job{
		ID: j.ID,
		JobSpec: apiv1.JobSpec{
			Group: j.Group, Name: j.Name, Description: j.Description, Handler: j.Handler,
			Params: j.Params, ScheduleType: j.ScheduleType, ScheduleExpr: j.ScheduleExpr,
			Timezone: j.Timezone, MisfirePolicy: j.MisfirePolicy, RouteStrategy: j.RouteStrategy,
			BlockStrategy: j.BlockStrategy, MaxConcurrency: j.MaxConcurrency, Timeout: apiv1.Duration(j.Timeout), MaxRetries: j.MaxRetries,
			RetryBackoff: j.RetryBackoff, RetryInitial: apiv1.Duration(j.RetryInitial), RetryMax: apiv1.Duration(j.RetryMax),
			ChildJobIDs: j.ChildJobIDs, AlarmWebhook: j.AlarmWebhook, AlarmEmails: j.AlarmEmails,
			Source: j.Source, SecretEnv: j.SecretEnv, Schedules: schedulesDoc(j),
			ExcludeCalendars: j.ExcludeCalendars, IncludeCalendars: j.IncludeCalendars, Labels: j.Labels, Owner: j.Owner, ParamsTemplate: j.ParamsTemplate,
		},
		Secrets: j.SecretNames,
		Enabled: j.Enabled, Shard: j.Shard, NextFireAt: j.UpcomingFire(), LastFireAt: j.LastFireAt,
		Version: j.Version, CreatedAt: j.CreatedAt, UpdatedAt: j.UpdatedAt,
	}
	schedOpsDoc(&d, j)
	jobFlowDoc(&d, j)
	if j.Shards > 0 {
		d.Sharding = &apiv1.Sharding{Total: j.Shards}
	}
	if j.Script != nil {
		d.ScriptLanguage, d.Script, d.ScriptVersion = j.Script.Language, &j.Script.Source, j.Script.Version
	}
	return d
}

func runDoc(r store.Run) apiv1.Run {
	d := apiv1.Run{
		ID: r.ID, JobID: r.JobID, Group: r.Group, TriggerType: r.TriggerType, Status: string(r.Status),
		ScheduledAt: r.ScheduledAt, TriggeredAt: r.TriggeredAt, StartedAt: r.StartedAt,
		FinishedAt: r.FinishedAt, Attempt: r.Attempt, RetryOf: r.RetryOf, ShardIndex: r.ShardIndex,
		ShardTotal: r.ShardTotal, WorkerID: r.WorkerID, Message: r.Message, ParentRun: r.ParentRun,
		AlarmStatus: r.AlarmStatus, AlarmError: r.AlarmError, Priority: r.Priority, MapFire: r.MapFire,
	}
	if r.Params != nil {
		d.Params = *r.Params
	}
	if r.StreamSeq != nil {
		seq := uint64(*r.StreamSeq)
		d.StreamSeq = &seq
	}
	return d
}

// checkScript checks a spec's script fields against its handler and
// returns the script a job of handler script is written with (its source
// "" when the spec gives none: a create starts empty, an update keeps the
// stored one).
func checkScript(spec apiv1.JobSpec, add func(string, ...any)) *wire.Script {
	if spec.Handler != auth.ScriptHandler {
		if spec.ScriptLanguage != "" || spec.Script != nil || spec.ScriptRemark != "" {
			add("script_language, script and script_remark are for handler %q only (handler is %q)", auth.ScriptHandler, spec.Handler)
		}
		return nil
	}
	if !slices.Contains(wire.ScriptLanguages, spec.ScriptLanguage) {
		add("script_language %q: want one of %s", spec.ScriptLanguage, strings.Join(wire.ScriptLanguages, ", "))
	}
	sc := &wire.Script{Language: spec.ScriptLanguage}
	if spec.Script != nil {
		sc.Source = *spec.Script
		if err := store.CheckScript(sc.Source, spec.ScriptRemark); err != nil {
			add("%v", err)
		}
	}
	return sc
}
