package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/jetjob/jetjob/internal/policy"
	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// jobFlags are the flags that describe a job, shared by `jobs create`
// (which requires --group, --name and --handler and starts from an empty
// spec) and `jobs update` (which starts from the job as it is): each
// command validates them, then applies only the flags given, so that an
// update changes nothing the user did not name.
type jobFlags struct {
	group, name, handler, description  string
	params, paramsFile                 string
	scriptLanguage, scriptFile         string
	script                             *string // read from scriptFile by validate
	cron, quartz, every, delay, at     string
	tz, misfire, route, block          string
	timeout                            time.Duration
	maxRetries, maxConcurrency, shards int
	disabled                           bool
	ops                                schedOpsFlags
	more                               moreFlags
	flow                               flowFlags

	// Set by validate: the schedule a schedule flag gave, and the params
	// read from --params-file.
	schedType, schedExpr string
	paramsSet            bool
}

// scheduleFlags are the flags that set the schedule; at most one may be
// given. no-schedule exists only on `jobs update` (a new job without a
// schedule flag has none).
var scheduleFlags = []string{"cron", "quartz", "every", "delay", "at", "no-schedule"}

// register adds the job flags to fl.
func (f *jobFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&f.group, "group", "", "group whose workers run the job")
	fl.StringVar(&f.name, "name", "", "job name")
	fl.StringVar(&f.handler, "handler", "", "handler name the workers registered")
	fl.StringVar(&f.description, "description", "", "free-form description")
	fl.StringVar(&f.params, "params", "", "params passed to the handler")
	fl.StringVar(&f.paramsFile, "params-file", "", "read the params from a file (- for stdin)")
	fl.StringVar(&f.scriptLanguage, "script-language", "", "with --handler script: bash, python3, python2, nodejs, php or powershell")
	fl.StringVar(&f.scriptFile, "script-file", "", "with --handler script: the script's source, from a file (- for stdin); a new version on update")
	fl.StringVar(&f.cron, "cron", "", "schedule: cron expression")
	fl.StringVar(&f.quartz, "quartz", "", "schedule: Quartz cron expression as xxl-job writes it, e.g. '0 15 10 ? * 6L' (day-of-week 1 = Sunday)")
	fl.StringVar(&f.every, "every", "", "schedule: fixed rate, a duration like 30s")
	fl.StringVar(&f.delay, "delay", "", "schedule: fixed delay after the previous run, a duration")
	fl.StringVar(&f.at, "at", "", "schedule: once, at an RFC 3339 time")
	fl.StringVar(&f.tz, "tz", "", "IANA time zone of the cron or quartz expression (default UTC)")
	fl.StringVar(&f.misfire, "misfire", "", "misfire policy: skip, fire_once or fire_all (server default when empty)")
	fl.StringVar(&f.route, "route", "", "route strategy, e.g. any, round, consistent_hash, sharding_broadcast")
	fl.StringVar(&f.block, "block", "", "block strategy: serial, discard_later, cover_early, buffer_one or concurrent")
	fl.IntVar(&f.maxConcurrency, "max-concurrency", 0, "with --block concurrent: at most this many runs at once (0: no cap)")
	fl.IntVar(&f.shards, "shards", 0, "fixed shard count: run each fire as this many parts (2-1000) on any of the group's workers (0 or 1: not sharded)")
	fl.DurationVar(&f.timeout, "timeout", 0, "run timeout, e.g. 5m (0: none)")
	fl.IntVar(&f.maxRetries, "max-retries", 0, "retries after a failed run")
	fl.BoolVar(&f.disabled, "disabled", false, "the job is disabled (--disabled=false: enabled)")
	f.ops.register(fl)
	f.more.register(fl)
	f.flow.register(fl)
}

// validate checks the flags given on cmd; every problem is a usage error
// except reading the params file, which it does.
func (f *jobFlags) validate(cmd *cobra.Command, stdin io.Reader) error {
	changed := cmd.Flags().Changed
	for _, r := range []struct{ name, val string }{{"group", f.group}, {"name", f.name}, {"handler", f.handler}} {
		if changed(r.name) && strings.TrimSpace(r.val) == "" {
			return usagef("--%s: must not be empty", r.name)
		}
	}

	var given []string
	for _, name := range scheduleFlags {
		if changed(name) {
			given = append(given, "--"+name)
		}
	}
	if len(given) > 1 {
		return usagef("only one schedule flag may be given, got %s", strings.Join(given, " and "))
	}
	switch {
	case changed("cron"):
		if strings.TrimSpace(f.cron) == "" {
			return usagef("--cron: empty expression")
		}
		f.schedType, f.schedExpr = "cron", strings.TrimSpace(f.cron)
	case changed("quartz"):
		// The server validates the fields and names the bad one.
		if strings.TrimSpace(f.quartz) == "" {
			return usagef("--quartz: empty expression")
		}
		f.schedType, f.schedExpr = "quartz", strings.TrimSpace(f.quartz)
	case changed("every"):
		d, err := positiveDuration("--every", f.every)
		if err != nil {
			return err
		}
		f.schedType, f.schedExpr = "fix_rate", d
	case changed("delay"):
		d, err := positiveDuration("--delay", f.delay)
		if err != nil {
			return err
		}
		f.schedType, f.schedExpr = "fix_delay", d
	case changed("at"):
		at := strings.TrimSpace(f.at)
		if _, err := time.Parse(time.RFC3339, at); err != nil {
			return usagef("--at %q: want an RFC 3339 time like 2026-05-01T09:30:00Z", f.at)
		}
		f.schedType, f.schedExpr = "once", at
	case changed("no-schedule"):
		f.schedType, f.schedExpr = "none", ""
	}

	if f.tz != "" {
		if _, err := time.LoadLocation(f.tz); err != nil {
			return usagef("--tz %q: unknown time zone (want an IANA name like Europe/Paris)", f.tz)
		}
	}
	if f.timeout < 0 {
		return usagef("--timeout %s: must not be negative", f.timeout)
	}
	if f.maxRetries < 0 {
		return usagef("--max-retries %d: must not be negative", f.maxRetries)
	}
	if err := f.ops.validate(changed); err != nil {
		return err
	}
	if err := f.more.validate(changed); err != nil {
		return err
	}
	if err := f.flow.validate(changed); err != nil {
		return err
	}
	if f.maxConcurrency < 0 {
		return usagef("--max-concurrency %d: must not be negative", f.maxConcurrency)
	}
	if changed("shards") && (f.shards < 0 || f.shards > policy.MaxShards) {
		return usagef("--shards %d: want 2 to %d (0 or 1: not sharded)", f.shards, policy.MaxShards)
	}

	if changed("params") && changed("params-file") {
		return usagef("give --params or --params-file, not both")
	}
	f.paramsSet = changed("params")
	if changed("params-file") {
		var b []byte
		var err error
		if f.paramsFile == "-" {
			b, err = io.ReadAll(stdin)
		} else {
			b, err = os.ReadFile(f.paramsFile)
		}
		if err != nil {
			return fmt.Errorf("reading --params-file: %w", err)
		}
		f.params, f.paramsSet = string(b), true
	}
	if changed("script-file") {
		if changed("params-file") && f.paramsFile == "-" && f.scriptFile == "-" {
			return usagef("--params-file and --script-file cannot both read stdin")
		}
		var b []byte
		var err error
		if f.scriptFile == "-" {
			b, err = io.ReadAll(stdin)
		} else {
			b, err = os.ReadFile(f.scriptFile)
		}
		if err != nil {
			return fmt.Errorf("reading --script-file: %w", err)
		}
		src := string(b)
		f.script = &src
	}
	return nil
}

// apply sets on spec the fields whose flags were given on cmd (after
// validate), leaving the others as they are.
func (f *jobFlags) apply(cmd *cobra.Command, spec *apiv1.JobSpec) {
	changed := cmd.Flags().Changed
	for _, s := range []struct {
		flag string
		dst  *string
		val  string
	}{
		{"group", &spec.Group, f.group},
		{"name", &spec.Name, f.name},
		{"handler", &spec.Handler, f.handler},
		{"description", &spec.Description, f.description},
		{"tz", &spec.Timezone, f.tz},
		{"misfire", &spec.MisfirePolicy, f.misfire},
		{"route", &spec.RouteStrategy, f.route},
		{"block", &spec.BlockStrategy, f.block},
		{"script-language", &spec.ScriptLanguage, f.scriptLanguage},
	} {
		if changed(s.flag) {
			*s.dst = s.val
		}
	}
	if f.schedType != "" {
		spec.ScheduleType, spec.ScheduleExpr = f.schedType, f.schedExpr
	}
	if f.paramsSet {
		spec.Params = f.params
	}
	if f.script != nil {
		spec.Script = f.script
	}
	if changed("timeout") {
		spec.Timeout = apiv1.Duration(f.timeout)
	}
	if changed("max-retries") {
		spec.MaxRetries = f.maxRetries
	}
	if changed("shards") {
		spec.Sharding = &apiv1.Sharding{Total: f.shards}
	}
	switch {
	case changed("max-concurrency"):
		spec.MaxConcurrency = f.maxConcurrency
	case changed("block") && f.block != "concurrent":
		spec.MaxConcurrency = 0 // the cap belongs to concurrent: leaving it drops the cap
	}
	if changed("disabled") {
		enabled := !f.disabled
		spec.Enabled = &enabled
	}
	f.ops.apply(changed, spec)
	f.more.apply(changed, spec)
	f.flow.apply(changed, spec)
}

func positiveDuration(flag, s string) (string, error) {
	s = strings.TrimSpace(s)
	d, err := time.ParseDuration(s)
	if err != nil {
		return "", usagef("%s %q: want a duration like 30s, 5m or 1h30m", flag, s)
	}
	if d <= 0 {
		return "", usagef("%s %q: must be positive", flag, s)
	}
	return s, nil
}
