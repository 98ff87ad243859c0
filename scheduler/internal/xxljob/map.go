package xxljob

import (
	"errors"
	"fmt"
	"net/mail"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jetjob/jetjob/internal/policy"
	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/shared/schedule"
	"github.com/jetjob/jetjob/shared/wire"
)

// Options tune the mapping.
type Options struct {
	// GroupPrefix is put before every app_name to make the group name.
	GroupPrefix string
	// Timezone is the IANA zone the Quartz expressions fire in: xxl-job
	// fires them in its admin JVM's zone (PickZone checks it against the
	// next fires xxl-job stored). "" means UTC. A job with its own
	// schedule_timezone (newer 3.x) keeps that.
	Timezone string
	// Database names the xxl-job database in each job's source
	// ("xxl-job <database>#<id>"), which a re-import matches jobs by.
	Database string
	// Generation is the schema generation read (Dump.Generation).
	Generation string
	// Enable makes the jobs xxl-job runs (trigger_status 1) enabled and the
	// others disabled. Without it every job is created disabled and the
	// enabled flag of existing jobs is left alone, so that an import made
	// while xxl-job still runs the jobs does not fire them twice.
	Enable bool
	// Now is when the mapping decides whether a schedule still fires;
	// zero means time.Now().
	Now time.Time
}

// Limits of jetjob's API that the mapping checks up front (scheduler/internal/api
// validate.go), so that a job that cannot be saved is reported as such
// instead of failing the import half-way.
const (
	maxDescription = 2000
	maxTimeout     = 7 * 24 * time.Hour
	maxRetries     = 100
	maxChildren    = 100
	maxSlug        = 48
)

// glueRetryInterval is how long after a failure a retry runs. xxl-job's
// fail monitor scans every 10 s and re-triggers failed runs it finds, so
// its retries come up to 10 s apart: a fixed 10 s backoff is the closest.
const glueRetryInterval = 10 * time.Second

// GroupPlan is what one xxl_job_group row becomes.
type GroupPlan struct {
	OldID   int64
	AppName string
	// Group is the jetjob group to create (or that exists).
	Group apiv1.Group
	Notes []string
	// Problem says why the group cannot be imported; its jobs are not
	// either.
	Problem string
}

// JobPlan is what one xxl_job_info row becomes.
type JobPlan struct {
	OldID      int64
	OldGroupID int64
	// Spec is the job to create; its ChildJobIDs are left empty because
	// the children's new ids are known only when they exist (Children).
	Spec apiv1.JobSpec
	// Children are the old ids of the child jobs kept, all of them jobs
	// that are imported too.
	Children []int64
	// Running is xxl-job's trigger_status.
	Running bool
	// Mapped lists what carried over ("route ROUND → round").
	Mapped []string
	// Changed lists what carried over with another meaning, or was dropped
	// or adjusted.
	Changed []string
	// Problems say why the job cannot be imported; it is not created.
	Problems []string
	// ScriptHistory is a GLUE script's history (xxl_job_logglue) and
	// when its current source was saved, sent after the job is created
	// (POST .../script/import); nil for a job that is not a script job.
	ScriptHistory *apiv1.ScriptImport
}

// OK reports whether the job can be imported.
func (p *JobPlan) OK() bool { return len(p.Problems) == 0 }

// Plan is the whole mapping.
type Plan struct {
	Groups []GroupPlan
	// Jobs are in xxl-job id order.
	Jobs []JobPlan
	// Order lists the indexes in Jobs of the importable jobs, every job
	// after its children, so that a parent's child links can name the
	// children's new ids when it is saved.
	Order []int
}

// Map maps the dump to jetjob. Its only error is an invalid option; each
// group or job that cannot map says so in its plan.
func Map(d *Dump, o Options) (*Plan, error) {
	if err := CheckGroupPrefix(o.GroupPrefix); err != nil {
		return nil, fmt.Errorf("group prefix: %w", err)
	}
	if o.Timezone == "" {
		o.Timezone = "UTC"
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	if o.Database == "" {
		o.Database = d.Database
	}
	if o.Generation == "" {
		o.Generation = d.Generation
	}
	loc, err := time.LoadLocation(o.Timezone)
	if err != nil {
		return nil, fmt.Errorf("time zone %q: unknown (want an IANA name like Asia/Shanghai)", o.Timezone)
	}
	p := &Plan{}
	groups := map[int64]*GroupPlan{}
	for _, g := range d.Groups {
		p.Groups = append(p.Groups, mapGroup(g, o))
	}
	for i := range p.Groups {
		groups[p.Groups[i].OldID] = &p.Groups[i]
	}
	for _, j := range d.Jobs {
		jp := mapJob(j, groups, o)
		if jp.Spec.Handler == scriptHandler {
			h := scriptHistory(j, d.GlueHistory[j.ID], loc)
			jp.ScriptHistory = &h
			if n := len(h.Versions); n > 0 {
				jp.Mapped = append(jp.Mapped, fmt.Sprintf("%d older versions of the script (xxl_job_logglue)", n))
			}
		}
		p.Jobs = append(p.Jobs, jp)
	}
	p.linkChildren(d.Jobs)
	return p, nil
}

// CheckGroupPrefix says why p cannot start group names; "" is fine.
func CheckGroupPrefix(p string) error {
	if p != "" && (!wire.ValidName(p) || len(p) >= 64) {
		return fmt.Errorf("%q: want 1-63 characters of [A-Za-z0-9_-] (a group name is at most 64)", p)
	}
	return nil
}

func mapGroup(g Group, o Options) GroupPlan {
	gp := GroupPlan{OldID: g.ID, AppName: g.AppName}
	name := o.GroupPrefix + strings.TrimSpace(g.AppName)
	gp.Group = apiv1.Group{Name: name, Title: strings.TrimSpace(g.Title)}
	if err := wire.CheckName("group", name); err != nil {
		gp.Problem = fmt.Sprintf("app_name %q: %v", g.AppName, err)
		return gp
	}
	if utf8.RuneCountInString(gp.Group.Title) > 200 {
		gp.Group.Title = string([]rune(gp.Group.Title)[:200])
	}
	if g.AddressType == 1 {
		gp.Notes = append(gp.Notes, fmt.Sprintf("manual address list %q not used: jetjob workers register themselves; "+
			"run jetjob-worker with --group %s on those hosts", strings.TrimSpace(g.AddressList), name))
	}
	return gp
}

// JobName derives a job's jetjob name from its xxl-job description and id:
// the description as a lower-case ASCII slug (at most 48 characters, "job"
// when no letter is left of it, e.g. a Chinese description), then "-" and the
// old id. It is deterministic and unique per xxl-job database, which is
// what lets a second import find the jobs the first one made.
func JobName(desc string, id int64) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(desc) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
			if b.Len() >= maxSlug {
				break
			}
			continue
		}
		dash = true
	}
	slug := strings.TrimRight(b.String(), "-")
	if strings.Trim(slug, "0123456789-") == "" {
		slug = "job" // nothing but digits is no name ("测试任务1")
	}
	return slug + "-" + strconv.FormatInt(id, 10)
}

func mapJob(j Job, groups map[int64]*GroupPlan, o Options) JobPlan {
	jp := JobPlan{OldID: j.ID, OldGroupID: j.GroupID, Running: j.TriggerStatus == 1}
	mapped := func(format string, args ...any) { jp.Mapped = append(jp.Mapped, fmt.Sprintf(format, args...)) }
	changed := func(format string, args ...any) { jp.Changed = append(jp.Changed, fmt.Sprintf(format, args...)) }
	problem := func(format string, args ...any) { jp.Problems = append(jp.Problems, fmt.Sprintf(format, args...)) }

	spec := &jp.Spec
	g := groups[j.GroupID]
	switch {
	case g == nil:
		problem("executor group %d does not exist", j.GroupID)
	case g.Problem != "":
		problem("executor group %d cannot be imported", j.GroupID)
	default:
		spec.Group = g.Group.Name
	}
	spec.Name = JobName(j.Desc, j.ID)
	spec.Description = description(j)
	spec.Source = Source(o.Database, j.ID)

	mapSchedule(j, o, spec, mapped, changed, problem)
	mapStrategies(j, spec, mapped, changed, problem)
	mapHandler(j, o, spec, mapped, changed, problem)

	switch {
	case j.Timeout <= 0:
	case time.Duration(j.Timeout)*time.Second > maxTimeout:
		spec.Timeout = apiv1.Duration(maxTimeout)
		changed("timeout %ds cut to jetjob's maximum, %s", j.Timeout, maxTimeout)
	default:
		spec.Timeout = apiv1.Duration(time.Duration(j.Timeout) * time.Second)
		mapped("timeout %ds", j.Timeout)
	}
	if j.FailRetryCount > 0 {
		n := min(j.FailRetryCount, maxRetries)
		if n < j.FailRetryCount {
			changed("%d retries cut to jetjob's maximum, %d", j.FailRetryCount, maxRetries)
		}
		spec.MaxRetries = n
		spec.RetryBackoff = "fixed"
		spec.RetryInitial = apiv1.Duration(glueRetryInterval)
		mapped("%d retries, %s apart", n, glueRetryInterval)
	}
	for _, e := range strings.Split(j.AlarmEmail, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		if a, err := mail.ParseAddress(e); err != nil || a.Address != e {
			changed("alarm email %q is not a plain address: dropped", e)
			continue
		}
		spec.AlarmEmails = append(spec.AlarmEmails, e)
	}
	if len(spec.AlarmEmails) > 0 {
		mapped("alarm emails %s", strings.Join(spec.AlarmEmails, ", "))
	}
	enabled := o.Enable && jp.Running
	spec.Enabled = &enabled
	return jp
}

// Source is what a job imported from xxl-job records as its origin, and
// what a re-import finds it by: "xxl-job <database>#<id>". It survives a
// change of --group-prefix or of the job's description, which change the
// group and the name.
func Source(database string, id int64) string {
	return "xxl-job " + database + "#" + strconv.FormatInt(id, 10)
}

// description keeps the original job_desc (the name is only a slug of
// it), the author, and where the job came from.
func description(j Job) string {
	origin := "imported from xxl-job job " + strconv.FormatInt(j.ID, 10)
	if a := strings.TrimSpace(j.Author); a != "" {
		origin += ", author " + a
	}
	desc := strings.TrimSpace(j.Desc)
	room := maxDescription - utf8.RuneCountInString(origin) - 3
	if utf8.RuneCountInString(desc) > room {
		desc = string([]rune(desc)[:room-1]) + "…"
	}
	if desc == "" {
		return origin
	}
	return desc + " (" + origin + ")"
}

type noteFunc func(format string, args ...any)

func mapSchedule(j Job, o Options, spec *apiv1.JobSpec, mapped, changed, problem noteFunc) {
	conf := strings.TrimSpace(j.ScheduleConf)
	switch j.ScheduleType {
	case "CRON":
		tz := o.Timezone
		if own := strings.TrimSpace(j.ScheduleTimezone); own != "" {
			if _, err := time.LoadLocation(own); err != nil {
				problem("schedule_timezone %q is not an IANA time zone jetjob knows", own)
				return
			}
			tz = own
		}
		spec.ScheduleType, spec.ScheduleExpr, spec.Timezone = "quartz", conf, tz
		s, err := schedule.Parse(spec.ScheduleType, conf, tz)
		if err != nil {
			problem("Quartz expression %q: %v", conf, err)
			return
		}
		if err := schedule.CheckQuartz(conf); err != nil {
			problem("%v", err) // names the expression, with Quartz's reason
			return
		}
		if _, ok := s.Next(o.Now); !ok {
			problem("Quartz expression %q never fires again (its years are past): xxl-job never fires it either", conf)
			return
		}
		mapped("CRON %s → quartz (%s)", conf, tz)
		fields := strings.Fields(conf)
		if len(fields) >= 6 && strings.ContainsAny(fields[5], "0123456789") {
			note := fmt.Sprintf("day-of-week %q counts as in Quartz, 1 = Sunday … 7 = Saturday: schedule type quartz keeps that, jetjob's cron counts 0 = Sunday", fields[5])
			if cron, ok := schedule.QuartzToCron(conf); ok {
				note += fmt.Sprintf(" (as cron: %s)", cron)
			}
			changed("%s", note)
		}
	case "FIX_RATE":
		secs, err := strconv.Atoi(conf)
		if err != nil || secs <= 0 {
			problem("FIX_RATE schedule_conf %q: want a positive number of seconds", j.ScheduleConf)
			return
		}
		expr := strconv.Itoa(secs) + "s"
		if _, err := schedule.Parse("fix_rate", expr, ""); err != nil {
			problem("FIX_RATE %ds: %v", secs, err)
			return
		}
		spec.ScheduleType, spec.ScheduleExpr = "fix_rate", expr
		mapped("FIX_RATE %ds → fix_rate", secs)
	case "NONE", "":
		spec.ScheduleType = "none"
		mapped("no schedule (NONE)")
	default:
		problem("schedule type %q is unknown to jetjob (want CRON, FIX_RATE or NONE)", j.ScheduleType)
	}
}

var (
	routes = map[string]policy.Route{
		"FIRST": policy.RouteFirst, "LAST": policy.RouteLast, "ROUND": policy.RouteRound,
		"RANDOM": policy.RouteRandom, "CONSISTENT_HASH": policy.RouteConsistentHash,
		"LEAST_FREQUENTLY_USED": policy.RouteLFU, "LEAST_RECENTLY_USED": policy.RouteLRU,
		"FAILOVER": policy.RouteFailover, "BUSYOVER": policy.RouteBusyover,
		"SHARDING_BROADCAST": policy.RouteShardingBroadcast,
	}
	blocks = map[string]policy.Block{
		"SERIAL_EXECUTION": policy.BlockSerial, "DISCARD_LATER": policy.BlockDiscardLater,
		"COVER_EARLY": policy.BlockCoverEarly,
	}
	misfires = map[string]policy.Misfire{
		"DO_NOTHING": policy.MisfireSkip, "FIRE_ONCE_NOW": policy.MisfireFireOnce,
	}
	// spreading are the routes that send one job's runs to different
	// executors in turn: there xxl-job's per-executor blocking let runs
	// overlap, and jetjob's group-wide lock does not.
	spreading = map[policy.Route]bool{
		policy.RouteRound: true, policy.RouteRandom: true, policy.RouteLFU: true,
		policy.RouteLRU: true, policy.RouteBusyover: true,
	}
)

func mapStrategies(j Job, spec *apiv1.JobSpec, mapped, changed, problem noteFunc) {
	route, _ := mapStrategy("route", j.RouteStrategy, routes, policy.RouteAny,
		"jetjob's default, any (the group's shared queue)", mapped, changed, problem)
	if route == policy.RouteBusyover {
		changed("busyover: when every worker is busy with the job jetjob sends the run to the first one (xxl-job failed the trigger)")
	}
	spec.RouteStrategy = string(route)

	block, ok := mapStrategy("block", j.BlockStrategy, blocks, policy.BlockSerial,
		"serial, as xxl-job's default", mapped, changed, problem)
	if ok && spreading[route] {
		changed("block %s now holds across the group: runs on different workers no longer overlap (xxl-job blocked per executor)", block)
	}
	spec.BlockStrategy = string(block)

	misfire, _ := mapStrategy("misfire", j.MisfireStrategy, misfires, policy.MisfireSkip,
		"skip, as xxl-job's default DO_NOTHING", mapped, changed, problem)
	spec.MisfirePolicy = string(misfire)
}

// mapStrategy maps one of an xxl-job job's strategies, of kind (route,
// block, misfire), through table: none becomes def (noted with why), an
// unknown one is a problem. ok says whether table knows it.
func mapStrategy[T ~string](kind, from string, table map[string]T, def T, why string, mapped, changed, problem noteFunc) (to T, ok bool) {
	to, ok = table[from]
	switch {
	case from == "":
		to = def
		changed("no %s strategy: %s", kind, why)
	case !ok:
		problem("%s strategy %q is unknown to jetjob", kind, from)
	default:
		mapped("%s %s → %s", kind, from, to)
	}
	return to, ok
}

func mapHandler(j Job, o Options, spec *apiv1.JobSpec, mapped, changed, problem noteFunc) {
	handler := strings.TrimSpace(j.Handler)
	switch g, script := glueScripts[j.GlueType]; {
	case j.GlueType == "BEAN":
		if handler != j.Handler && handler != "" {
			changed("executor handler %q trimmed to %q (a jetjob handler name has no spaces): register it under the trimmed name", j.Handler, handler)
		}
		switch {
		case handler == "":
			problem("BEAN job without an executor handler")
		case !wire.ValidHandler(handler):
			problem("executor handler: %v (register it under such a name in the worker)", wire.CheckHandler(handler))
		default:
			spec.Handler, spec.Params = handler, j.Param
			mapped("BEAN handler %s", handler)
		}
	case script:
		if strings.ContainsRune(j.GlueSource, 0) || strings.ContainsRune(j.Param, 0) {
			problem("%s source or param holds a NUL byte, which no process argument can carry", j.GlueType)
			return
		}
		lang := glueLanguages[j.GlueType]
		src := j.GlueSource
		spec.Handler, spec.Params, spec.ScriptLanguage, spec.Script = scriptHandler, j.Param, lang, &src
		spec.ScriptRemark = strings.TrimSpace(strings.Map(func(r rune) rune {
			if r < ' ' || r == 0x7f {
				return ' '
			}
			return r
		}, j.GlueRemark))
		mapped("%s → script job, language %s, run as %s script%s <param> <shard index> <shard total>", j.GlueType, lang, g.Interpreter, g.Suffix)
		changed("the script is stored by the scheduler with its versions (jetjob scripts versions); the workers need the script handler (--handlers script) and %s on PATH", g.Interpreter)
		if j.GlueType == "GLUE_PWSH" {
			changed("GLUE_PWSH is language powershell: run its workers with --script-interpreters powershell=pwsh")
		}
		if handler != "" {
			changed("executor handler %q ignored: a script glue does not use it", handler)
		}
		if j.GlueType == "GLUE_PYTHON" && o.Generation != Gen3 {
			changed("GLUE_PYTHON runs python3, as xxl-job's GLUE(Python3) does; releases before GLUE_PYTHON2 ran GLUE_PYTHON with python, and this is a %s database: check the script under Python 3", o.Generation)
		}
		if len(src) > wire.MaxScriptBytes {
			problem("the script is %d bytes, more than jetjob's limit of %d", len(src), wire.MaxScriptBytes)
		}
	case j.GlueType == "GLUE_GROOVY":
		problem("GLUE(Java) runs Groovy inside xxl-job's Java executor, which jetjob has not: port it to a worker handler")
	default:
		problem("glue type %q is unknown to jetjob", j.GlueType)
	}
	if len(spec.Params) > wire.MaxParamsBytes {
		problem("params would be %d bytes, more than jetjob's limit of %d", len(spec.Params), wire.MaxParamsBytes)
	}
}

// errCycle marks a child link that would close a cycle.
var errCycle = errors.New("cycle")

// linkChildren keeps each importable job's links to importable children,
// drops (and says so) the others and the links that would close a cycle
// (jetjob refuses cycles; xxl-job did not check), and orders the jobs
// children first.
func (p *Plan) linkChildren(jobs []Job) {
	index := map[int64]int{}
	for i := range p.Jobs {
		index[p.Jobs[i].OldID] = i
	}
	for i := range p.Jobs {
		jp := &p.Jobs[i]
		seen := map[int64]bool{}
		for _, s := range strings.Split(jobs[i].ChildJobIDs, ",") {
			s = strings.TrimSpace(s)
			if s == "" {
				continue
			}
			id, err := strconv.ParseInt(s, 10, 64)
			k, exists := index[id]
			switch {
			case err != nil:
				jp.Changed = append(jp.Changed, fmt.Sprintf("child job id %q is not a number: dropped", s))
			case seen[id]:
			case id == jp.OldID:
				jp.Changed = append(jp.Changed, "child link to the job itself dropped: jetjob refuses cycles")
			case !exists:
				jp.Changed = append(jp.Changed, fmt.Sprintf("child job %d does not exist: dropped", id))
			case !p.Jobs[k].OK():
				jp.Changed = append(jp.Changed, fmt.Sprintf("child job %d is not imported: link dropped", id))
			case len(jp.Children) == maxChildren:
				jp.Changed = append(jp.Changed, fmt.Sprintf("child job %d dropped: jetjob allows %d children", id, maxChildren))
			default:
				jp.Children = append(jp.Children, id)
			}
			seen[id] = true
		}
	}
	// Depth first, children before parents; a link to a job still on the
	// path closes a cycle and is dropped.
	const (
		unvisited = iota
		onPath
		done
	)
	state := make([]int, len(p.Jobs))
	var visit func(i int) error
	visit = func(i int) error {
		switch state[i] {
		case onPath:
			return errCycle
		case done:
			return nil
		}
		state[i] = onPath
		jp := &p.Jobs[i]
		kept := jp.Children[:0]
		for _, c := range jp.Children {
			if err := visit(index[c]); err != nil {
				jp.Changed = append(jp.Changed, fmt.Sprintf("child job %d dropped: the link closes a cycle, which jetjob refuses", c))
				continue
			}
			kept = append(kept, c)
		}
		jp.Children = kept
		if len(kept) > 0 {
			jp.Mapped = append(jp.Mapped, "children "+joinIDs(kept))
		}
		state[i] = done
		p.Order = append(p.Order, i)
		return nil
	}
	for i := range p.Jobs {
		if p.Jobs[i].OK() {
			_ = visit(i)
		}
	}
}

func joinIDs(ids []int64) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.FormatInt(id, 10)
	}
	return strings.Join(s, ",")
}
