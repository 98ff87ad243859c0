package console

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/i18n"
)

// jobField is one field of apiv1.JobSpec as the job form edits it and the
// job page shows it. jobFields is the only place that lists them: the form
// renders, parses and places the API's errors from it, and the job page
// shows the settings from it, so a field added to JobSpec needs one entry
// here (and nothing in the templates).
type jobField struct {
	// Name is the JobSpec JSON key; the form control's name is the same
	// and its id is "f-" + Name.
	Name  string
	Label string
	// Section groups fields in the form and on the job page.
	Section string
	// Kind is how the form edits it: text, textarea, select, number,
	// duration, list (comma-separated), checkbox, or group (a select of
	// the groups the user may operate).
	Kind    string
	Options []string
	Hint    string
	// keys are the phrases that name the field in the API's 400 messages
	// (which join every problem with "; "): the earliest match places the
	// message under this field.
	keys []string
	get  func(*apiv1.JobSpec) string
	// set reads the form's text into the spec; it fails only when the text
	// cannot be put into the JSON document at all (a number that is not
	// one): every rule about values is the API's.
	set func(*apiv1.JobSpec, string) error
}

// Form sections, in order.
const (
	secBasics    = "Basics"
	secSchedule  = "Schedule"
	secExecution = "Execution"
	secRetries   = "Retries"
	secAlarms    = "Alarms and children"
)

var jobSections = []string{secBasics, secSchedule, secExecution, secFlow, secRetries, secAlarms}

// jobFields are the job form's fields, in form order.
var jobFields = slices.Concat(baseJobFields[:basicsEnd], ownerFields, baseJobFields[basicsEnd:scheduleEnd],
	calendarFields, baseJobFields[scheduleEnd:], flowFields)

// basicsEnd and scheduleEnd are where the basics' and the schedule
// section's fields end in baseJobFields.
var (
	basicsEnd   = slices.IndexFunc(baseJobFields, func(f jobField) bool { return f.Name == "params" }) + 1
	scheduleEnd = slices.IndexFunc(baseJobFields, func(f jobField) bool { return f.Name == "end_at" }) + 1
)

// baseJobFields are the fields of jobFields before issue #34's owner,
// labels and calendars.
var baseJobFields = []jobField{
	{Name: "group", Label: "Group", Section: secBasics, Kind: "group",
		Hint: "The executor group whose workers run the job.", keys: []string{"group"},
		get: func(s *apiv1.JobSpec) string { return s.Group }, set: setString(func(s *apiv1.JobSpec) *string { return &s.Group })},
	{Name: "name", Label: "Name", Section: secBasics, Kind: "text", keys: []string{"name is", "job \""},
		get: func(s *apiv1.JobSpec) string { return s.Name }, set: setString(func(s *apiv1.JobSpec) *string { return &s.Name })},
	{Name: "description", Label: "Description", Section: secBasics, Kind: "text", keys: []string{"description"},
		get: func(s *apiv1.JobSpec) string { return s.Description }, set: setRaw(func(s *apiv1.JobSpec) *string { return &s.Description })},
	{Name: "handler", Label: "Handler", Section: secBasics, Kind: "text", keys: []string{"handler"},
		Hint: "The handler name a worker of the group registered (e.g. shell, http): the list suggests those the group's live workers run.",
		get:  func(s *apiv1.JobSpec) string { return s.Handler }, set: setString(func(s *apiv1.JobSpec) *string { return &s.Handler })},
	{Name: "script_language", Label: "Script language", Section: secBasics, Kind: "select",
		Options: []string{"", "bash", "python3", "python2", "nodejs", "php", "powershell"}, keys: []string{"script_language"},
		Hint: "With handler script only: the language of the script the scheduler stores (write it on the job's Script page).",
		get:  func(s *apiv1.JobSpec) string { return s.ScriptLanguage }, set: setString(func(s *apiv1.JobSpec) *string { return &s.ScriptLanguage })},
	{Name: "params", Label: "Params", Section: secBasics, Kind: "textarea", keys: []string{"params"},
		Hint: "Passed to the handler on every run (at most 64 KiB).",
		get:  func(s *apiv1.JobSpec) string { return s.Params }, set: setRaw(func(s *apiv1.JobSpec) *string { return &s.Params })},
	{Name: "secret_env", Label: "Secrets in the environment", Section: secBasics, Kind: "list", keys: []string{"secret_env", "secrets "},
		Hint: "Comma-separated VARIABLE=secret-name: the group's secrets the command gets (docs/jobs.md, \"Secrets\"); never their values.",
		get:  func(s *apiv1.JobSpec) string { return secretEnvText(s.SecretEnv) },
		set: func(s *apiv1.JobSpec, v string) error {
			s.SecretEnv = nil
			for _, kv := range splitList(v) {
				k, name, ok := strings.Cut(kv, "=")
				if !ok {
					return msgf("%q: want VARIABLE=secret-name", kv)
				}
				if s.SecretEnv == nil {
					s.SecretEnv = map[string]string{}
				}
				s.SecretEnv[strings.TrimSpace(k)] = strings.TrimSpace(name)
			}
			return nil
		}},

	{Name: "schedule_type", Label: "Schedule type", Section: secSchedule, Kind: "select",
		Options: []string{"cron", "quartz", "fix_rate", "fix_delay", "once", "none"}, keys: []string{"schedule type"},
		Hint: "cron: an expression; quartz: a Quartz (xxl-job) expression; fix_rate / fix_delay: an interval; once: a time; none: only manual triggers.",
		get:  func(s *apiv1.JobSpec) string { return s.ScheduleType }, set: setString(func(s *apiv1.JobSpec) *string { return &s.ScheduleType })},
	{Name: "schedule_expr", Label: "Schedule expression", Section: secSchedule, Kind: "text",
		keys: []string{"cron expression", "quartz", "interval", "once time", "schedule type none"},
		Hint: `cron "0 */5 * * * *" (seconds optional) or "@every 10s"; quartz "0 15 10 ? * 6L"; an interval "30s"; an RFC 3339 time for once.`,
		get:  func(s *apiv1.JobSpec) string { return s.ScheduleExpr }, set: setString(func(s *apiv1.JobSpec) *string { return &s.ScheduleExpr })},
	{Name: "timezone", Label: "Time zone", Section: secSchedule, Kind: "text", keys: []string{"time zone"},
		Hint: `An IANA zone such as "Europe/Berlin"; cron fields are read in it.`,
		get:  func(s *apiv1.JobSpec) string { return s.Timezone }, set: setString(func(s *apiv1.JobSpec) *string { return &s.Timezone })},
	moreSchedulesField,
	{Name: "misfire_policy", Label: "Misfire policy", Section: secSchedule, Kind: "select",
		Options: []string{"fire_once", "skip", "fire_all"}, keys: []string{"misfire_policy"},
		Hint: "What a fire found late (scheduler down, job disabled) does: run once now, skip, or run every missed fire.",
		get:  func(s *apiv1.JobSpec) string { return s.MisfirePolicy }, set: setString(func(s *apiv1.JobSpec) *string { return &s.MisfirePolicy })},
	{Name: "misfire_threshold", Label: "Misfire threshold", Section: secSchedule, Kind: "duration", keys: []string{"misfire_threshold"},
		Hint: "How late a fire may be before it counts as missed; empty for the scheduler's default.",
		get:  func(s *apiv1.JobSpec) string { return durText(s.MisfireThreshold) }, set: setDuration(func(s *apiv1.JobSpec) *apiv1.Duration { return &s.MisfireThreshold })},
	{Name: "max_catchup", Label: "Max catch-up fires", Section: secSchedule, Kind: "number", keys: []string{"max_catchup"},
		Hint: "With fire_all, at most this many missed fires run; 0 for the scheduler's default.",
		get:  func(s *apiv1.JobSpec) string { return strconv.Itoa(s.MaxCatchup) }, set: setInt(func(s *apiv1.JobSpec) *int { return &s.MaxCatchup })},
	{Name: "jitter", Label: "Jitter", Section: secSchedule, Kind: "duration", keys: []string{"jitter"},
		Hint: "Each fire is delayed by up to this much, the same for a given fire (spreads jobs due at the same time).",
		get:  func(s *apiv1.JobSpec) string { return durText(s.Jitter) }, set: setDuration(func(s *apiv1.JobSpec) *apiv1.Duration { return &s.Jitter })},
	{Name: "start_at", Label: "Start at", Section: secSchedule, Kind: "text", keys: []string{"start_at"},
		Hint: "No fire before this RFC 3339 time (e.g. 2026-01-02T15:04:05Z); empty for now.",
		get:  func(s *apiv1.JobSpec) string { return timeText(s.StartAt) }, set: setTime(func(s *apiv1.JobSpec) **time.Time { return &s.StartAt })},
	{Name: "end_at", Label: "End at", Section: secSchedule, Kind: "text", keys: []string{"end_at"},
		Hint: "No fire from this RFC 3339 time on; empty for never.",
		get:  func(s *apiv1.JobSpec) string { return timeText(s.EndAt) }, set: setTime(func(s *apiv1.JobSpec) **time.Time { return &s.EndAt })},

	{Name: "route_strategy", Label: "Route strategy", Section: secExecution, Kind: "select",
		Options: []string{"any", "first", "last", "round", "random", "consistent_hash", "lfu", "lru", "failover", "busyover", "sharding_broadcast"},
		keys:    []string{"route_strategy"}, Hint: "Which worker of the group gets a trigger.",
		get: func(s *apiv1.JobSpec) string { return s.RouteStrategy }, set: setString(func(s *apiv1.JobSpec) *string { return &s.RouteStrategy })},
	{Name: "block_strategy", Label: "Block strategy", Section: secExecution, Kind: "select",
		Options: []string{"serial", "discard_later", "cover_early", "buffer_one", "concurrent"}, keys: []string{"block_strategy"},
		Hint: "A trigger arriving while a run is active: wait, be discarded, cancel the active run, wait unless one waits already, or run beside it.",
		get:  func(s *apiv1.JobSpec) string { return s.BlockStrategy }, set: setString(func(s *apiv1.JobSpec) *string { return &s.BlockStrategy })},
	{Name: "max_concurrency", Label: "Max concurrency", Section: secExecution, Kind: "number", keys: []string{"max_concurrency"},
		Hint: "With block strategy concurrent, at most this many runs at once; 0 for no cap.",
		get:  func(s *apiv1.JobSpec) string { return strconv.Itoa(s.MaxConcurrency) }, set: setInt(func(s *apiv1.JobSpec) *int { return &s.MaxConcurrency })},
	{Name: "sharding", Label: "Fixed shard count", Section: secExecution, Kind: "number", keys: []string{"sharding"},
		Hint: "Run each fire as this many parts (2 to 1000) on any of the group's workers; the children fire once, after the last part. Empty for one run per fire.",
		get:  shardsText, set: setShards},
	{Name: "timeout", Label: "Timeout", Section: secExecution, Kind: "duration", keys: []string{"timeout"},
		Hint: `A duration such as "10m"; empty for none.`,
		get:  func(s *apiv1.JobSpec) string { return durText(s.Timeout) }, set: setDuration(func(s *apiv1.JobSpec) *apiv1.Duration { return &s.Timeout })},
	{Name: "enabled", Label: "Enabled", Section: secExecution, Kind: "checkbox",
		Hint: "A disabled job keeps its settings and fires only when triggered by hand.",
		get: func(s *apiv1.JobSpec) string {
			if s.Enabled == nil || *s.Enabled {
				return "true"
			}
			return "false"
		},
		set: func(s *apiv1.JobSpec, v string) error {
			on := v != ""
			s.Enabled = &on
			return nil
		}},

	{Name: "max_retries", Label: "Max retries", Section: secRetries, Kind: "number", keys: []string{"max_retries"},
		Hint: "Retries after a failed or timed-out run (0 to 100).",
		get:  func(s *apiv1.JobSpec) string { return strconv.Itoa(s.MaxRetries) }, set: setInt(func(s *apiv1.JobSpec) *int { return &s.MaxRetries })},
	{Name: "retry_backoff", Label: "Retry backoff", Section: secRetries, Kind: "select",
		Options: []string{"exponential", "fixed"}, keys: []string{"retry_backoff"},
		Hint: "exponential: initial × 2^attempt (with jitter) up to the maximum; fixed: always the initial delay.",
		get:  func(s *apiv1.JobSpec) string { return s.RetryBackoff }, set: setString(func(s *apiv1.JobSpec) *string { return &s.RetryBackoff })},
	{Name: "retry_initial", Label: "Initial retry delay", Section: secRetries, Kind: "duration", keys: []string{"retry_initial"},
		Hint: `Default 1s.`,
		get:  func(s *apiv1.JobSpec) string { return durText(s.RetryInitial) }, set: setDuration(func(s *apiv1.JobSpec) *apiv1.Duration { return &s.RetryInitial })},
	{Name: "retry_max", Label: "Maximum retry delay", Section: secRetries, Kind: "duration", keys: []string{"retry_max"},
		Hint: `Default 5m.`,
		get:  func(s *apiv1.JobSpec) string { return durText(s.RetryMax) }, set: setDuration(func(s *apiv1.JobSpec) *apiv1.Duration { return &s.RetryMax })},

	{Name: "child_job_ids", Label: "Child job ids", Section: secAlarms, Kind: "list", keys: []string{"child"},
		Hint: "Comma-separated job ids triggered when a run of this job succeeds.",
		get: func(s *apiv1.JobSpec) string {
			ids := make([]string, len(s.ChildJobIDs))
			for i, id := range s.ChildJobIDs {
				ids[i] = strconv.FormatInt(id, 10)
			}
			return strings.Join(ids, ", ")
		},
		set: func(s *apiv1.JobSpec, v string) error {
			s.ChildJobIDs = nil
			for _, p := range splitList(v) {
				id, err := strconv.ParseInt(p, 10, 64)
				if err != nil {
					return msgf("child job id %q is not a number", p)
				}
				s.ChildJobIDs = append(s.ChildJobIDs, id)
			}
			return nil
		}},
	{Name: "alarm_webhook", Label: "Alarm webhook", Section: secAlarms, Kind: "text", keys: []string{"alarm_webhook"},
		Hint: "An http(s) URL that gets a POST when a run's last attempt fails.",
		get:  func(s *apiv1.JobSpec) string { return s.AlarmWebhook }, set: setString(func(s *apiv1.JobSpec) *string { return &s.AlarmWebhook })},
	{Name: "alarm_emails", Label: "Alarm emails", Section: secAlarms, Kind: "list", keys: []string{"alarm_emails"},
		Hint: "Comma-separated addresses mailed when a run's last attempt fails.",
		get:  func(s *apiv1.JobSpec) string { return strings.Join(s.AlarmEmails, ", ") },
		set: func(s *apiv1.JobSpec, v string) error {
			s.AlarmEmails = splitList(v)
			return nil
		}},
}

// setString sets a trimmed string field.
func setString(field func(*apiv1.JobSpec) *string) func(*apiv1.JobSpec, string) error {
	return func(s *apiv1.JobSpec, v string) error {
		*field(s) = strings.TrimSpace(v)
		return nil
	}
}

// setRaw sets a string field as typed (params keep their white space).
func setRaw(field func(*apiv1.JobSpec) *string) func(*apiv1.JobSpec, string) error {
	return func(s *apiv1.JobSpec, v string) error {
		*field(s) = v
		return nil
	}
}

// setDuration sets a duration field from "30s" (empty is zero: the API's
// default).
func setDuration(field func(*apiv1.JobSpec) *apiv1.Duration) func(*apiv1.JobSpec, string) error {
	return setParsed(field, func(v string) (apiv1.Duration, error) {
		d, err := time.ParseDuration(v)
		return apiv1.Duration(d), err
	}, msgf("a duration such as 30s, 5m or 1h30m"))
}

// setInt sets a whole-number field (empty is zero: the API's default).
func setInt(field func(*apiv1.JobSpec) *int) func(*apiv1.JobSpec, string) error {
	return setParsed(field, strconv.Atoi, msgf("a whole number"))
}

// setTime sets an optional instant from RFC 3339 (empty is none).
func setTime(field func(*apiv1.JobSpec) **time.Time) func(*apiv1.JobSpec, string) error {
	return setParsed(field, func(v string) (*time.Time, error) {
		t, err := time.Parse(time.RFC3339, v)
		return &t, err
	}, msgf("an RFC 3339 time such as 2026-01-02T15:04:05Z"))
}

// setParsed sets a field from its text read by parse; empty text sets the
// zero value (the API's default, or none), and text parse refuses is "not
// <what>".
func setParsed[T any](field func(*apiv1.JobSpec) *T, parse func(string) (T, error), what *message) func(*apiv1.JobSpec, string) error {
	return func(s *apiv1.JobSpec, v string) error {
		v = strings.TrimSpace(v)
		if v == "" {
			var zero T
			*field(s) = zero
			return nil
		}
		x, err := parse(v)
		if err != nil {
			return msgf("%q is not %s", v, what)
		}
		*field(s) = x
		return nil
	}
}

// message is a text of the console's own (a form value it cannot read)
// to be shown in the page's language: its catalogue id (format) and
// arguments, of which a *message is itself translated.
type message struct {
	format string
	args   []any
}

// msgf is the message format with args; its Error is the English text.
func msgf(format string, args ...any) *message { return &message{format: format, args: args} }

func (m *message) Error() string { return m.in(i18n.English) }

// in is the message in l.
func (m *message) in(l i18n.Lang) string {
	args := make([]any, len(m.args))
	for i, a := range m.args {
		if sub, ok := a.(*message); ok {
			a = sub.in(l)
		}
		args[i] = a
	}
	return l.T(m.format, args...)
}

// inLang is err in l when it is a message, else its own text.
func inLang(err error, l i18n.Lang) string {
	var m *message
	if errors.As(err, &m) {
		return m.in(l)
	}
	return err.Error()
}

// timeText writes an optional instant as RFC 3339 in UTC.
func timeText(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// splitList splits a comma-separated list, dropping empty entries.
func splitList(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// durText writes a duration the way a user types it ("5m", not "5m0s");
// zero is empty.
func durText(d apiv1.Duration) string {
	if d == 0 {
		return ""
	}
	s := time.Duration(d).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// fieldOf names the field an API problem is about: the field whose key
// appears earliest in it (the longer key on a tie, so that "schedule type
// none takes no expression" lands under the expression); "" when none does.
func fieldOf(problem string) string {
	p := strings.ToLower(problem)
	best, bestAt, bestLen := "", len(p)+1, 0
	for _, f := range jobFields {
		for _, k := range f.keys {
			at := strings.Index(p, k)
			if at < 0 {
				continue
			}
			if at < bestAt || at == bestAt && len(k) > bestLen {
				best, bestAt, bestLen = f.Name, at, len(k)
			}
		}
	}
	return best
}

// placeProblems puts each of the API's problems (one message, joined by
// "; ") under the field it names; the rest come back as general.
func placeProblems(msg string) (byField map[string]string, general []string) {
	byField = map[string]string{}
	for _, p := range strings.Split(msg, "; ") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		f := fieldOf(p)
		if f == "" {
			general = append(general, p)
			continue
		}
		if byField[f] != "" {
			byField[f] += "; "
		}
		byField[f] += p
	}
	return byField, general
}

// fieldNamed is the jobFields entry of a JobSpec key.
func fieldNamed(name string) jobField {
	for _, f := range jobFields {
		if f.Name == name {
			return f
		}
	}
	panic("console: no job field " + name)
}

// secretEnvText writes a job's secret_env as the form edits it, by
// variable.
func secretEnvText(env map[string]string) string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

// shardsText is a job's fixed shard count as the form shows it, "" for none.
func shardsText(s *apiv1.JobSpec) string {
	if s.Sharding == nil {
		return ""
	}
	return strconv.Itoa(s.Sharding.Total)
}

// setShards sets the fixed shard count (empty: none); the API judges the
// number.
func setShards(s *apiv1.JobSpec, v string) error {
	var n int
	if err := setParsed(func(*apiv1.JobSpec) *int { return &n }, strconv.Atoi, msgf("a whole number"))(s, v); err != nil {
		return err
	}
	s.Sharding = nil
	if n != 0 {
		s.Sharding = &apiv1.Sharding{Total: n}
	}
	return nil
}
