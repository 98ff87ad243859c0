package xxljob

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// bean is a mappable BEAN job of group 1 for the tests to vary.
func bean(id int64, desc string) Job {
	return Job{ID: id, GroupID: 1, Desc: desc, ScheduleType: "NONE", MisfireStrategy: "DO_NOTHING",
		RouteStrategy: "FIRST", BlockStrategy: "SERIAL_EXECUTION", GlueType: "BEAN", Handler: "h"}
}

func mustMap(t *testing.T, jobs []Job, o Options) *Plan {
	t.Helper()
	p, err := Map(&Dump{Database: "xxl_job", Generation: Gen3, Groups: []Group{{ID: 1, AppName: "app", Title: "App"}}, Jobs: jobs}, o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestJobName(t *testing.T) {
	for _, c := range []struct {
		desc string
		id   int64
		want string
	}{
		{"Nightly cleanup", 3, "nightly-cleanup-3"},
		{"  Weekdays 10:15 (prod!) ", 8, "weekdays-10-15-prod-8"},
		{"数据同步", 35, "job-35"},
		{"数据 sync 任务", 36, "sync-36"},
		{"", 7, "job-7"},
		{"测试任务1", 1, "job-1"},
		{strings.Repeat("abcdefghij", 10), 1, strings.Repeat("abcdefghij", 4) + "abcdefgh-1"},
	} {
		if got := JobName(c.desc, c.id); got != c.want {
			t.Errorf("JobName(%q, %d) = %q, want %q", c.desc, c.id, got, c.want)
		}
	}
}

// Every xxl-job strategy name maps to jetjob's; unknown ones make the job
// unmappable instead of guessing.
func TestStrategies(t *testing.T) {
	routesWant := map[string]string{
		"FIRST": "first", "LAST": "last", "ROUND": "round", "RANDOM": "random", "CONSISTENT_HASH": "consistent_hash",
		"LEAST_FREQUENTLY_USED": "lfu", "LEAST_RECENTLY_USED": "lru", "FAILOVER": "failover",
		"BUSYOVER": "busyover", "SHARDING_BROADCAST": "sharding_broadcast",
	}
	for xxl, want := range routesWant {
		j := bean(1, "r")
		j.RouteStrategy = xxl
		jp := mustMap(t, []Job{j}, Options{}).Jobs[0]
		if !jp.OK() || jp.Spec.RouteStrategy != want {
			t.Errorf("route %s → %q (problems %v), want %s", xxl, jp.Spec.RouteStrategy, jp.Problems, want)
		}
	}
	for xxl, want := range map[string]string{"SERIAL_EXECUTION": "serial", "DISCARD_LATER": "discard_later", "COVER_EARLY": "cover_early"} {
		j := bean(1, "b")
		j.BlockStrategy = xxl
		if jp := mustMap(t, []Job{j}, Options{}).Jobs[0]; jp.Spec.BlockStrategy != want {
			t.Errorf("block %s → %q, want %s", xxl, jp.Spec.BlockStrategy, want)
		}
	}
	for xxl, want := range map[string]string{"DO_NOTHING": "skip", "FIRE_ONCE_NOW": "fire_once"} {
		j := bean(1, "m")
		j.MisfireStrategy = xxl
		if jp := mustMap(t, []Job{j}, Options{}).Jobs[0]; jp.Spec.MisfirePolicy != want {
			t.Errorf("misfire %s → %q, want %s", xxl, jp.Spec.MisfirePolicy, want)
		}
	}
	bad := []func(*Job){
		func(j *Job) { j.RouteStrategy = "WEIGHTED" },
		func(j *Job) { j.BlockStrategy = "PARALLEL" },
		func(j *Job) { j.MisfireStrategy = "FIRE_ALL" },
		func(j *Job) { j.ScheduleType = "FIX_DELAY" },
		func(j *Job) { j.ScheduleType, j.ScheduleConf = "FIX_RATE", "0" },
		func(j *Job) { j.ScheduleType, j.ScheduleConf = "CRON", "0 0 25 * * ?" },
		func(j *Job) { j.GlueType = "GLUE_GROOVY" },
		func(j *Job) { j.GlueType = "GLUE_RUBY" },
		func(j *Job) { j.Handler = " " },
		func(j *Job) { j.GroupID = 9 },
	}
	for i, edit := range bad {
		j := bean(1, "x")
		edit(&j)
		if jp := mustMap(t, []Job{j}, Options{}).Jobs[0]; jp.OK() {
			t.Errorf("case %d (%+v) mapped, want a problem", i, j)
		}
	}
}

func TestScheduleAndFields(t *testing.T) {
	j := bean(6, "Third Friday report")
	j.ScheduleType, j.ScheduleConf = "CRON", " 0 30 10 ? * 6#3 "
	j.Timeout, j.FailRetryCount = 90, 3
	j.AlarmEmail = "a@example.com, nope ,b@example.com"
	j.Author, j.TriggerStatus, j.Param = "alice", 1, "p=1"
	p := mustMap(t, []Job{j}, Options{Timezone: "Asia/Shanghai"})
	s := p.Jobs[0].Spec
	want := apiv1.JobSpec{Group: "app", Name: "third-friday-report-6",
		Description: "Third Friday report (imported from xxl-job job 6, author alice)",
		Handler:     "h", Params: "p=1", ScheduleType: "quartz", ScheduleExpr: "0 30 10 ? * 6#3", Timezone: "Asia/Shanghai",
		MisfirePolicy: "skip", RouteStrategy: "first", BlockStrategy: "serial", Timeout: apiv1.Duration(90 * time.Second),
		MaxRetries: 3, RetryBackoff: "fixed", RetryInitial: apiv1.Duration(10 * time.Second),
		AlarmEmails: []string{"a@example.com", "b@example.com"}, Source: "xxl-job xxl_job#6"}
	enabled := s.Enabled
	s.Enabled = nil
	if Diff(apiv1.Job{JobSpec: s}, want, false) != nil || s.Name != want.Name || s.Group != want.Group {
		t.Fatalf("spec\n%+v\nwant\n%+v", s, want)
	}
	if enabled == nil || *enabled {
		t.Errorf("without Enable a running xxl-job job must be created disabled, got %v", enabled)
	}
	notes := strings.Join(p.Jobs[0].Changed, "\n")
	for _, w := range []string{`alarm email "nope"`, `day-of-week "6#3" counts as in Quartz`} {
		if !strings.Contains(notes, w) {
			t.Errorf("changed notes lack %q:\n%s", w, notes)
		}
	}
	if e := mustMap(t, []Job{j}, Options{Enable: true}).Jobs[0].Spec.Enabled; e == nil || !*e {
		t.Errorf("with Enable a running xxl-job job must be enabled")
	}

	j.ScheduleType, j.ScheduleConf = "CRON", "0 0 8 ? * 2-6"
	notes = strings.Join(mustMap(t, []Job{j}, Options{}).Jobs[0].Changed, "\n")
	if !strings.Contains(notes, "(as cron: 0 0 8 * * 1-5)") {
		t.Errorf("numeric weekdays: notes lack the cron equivalent:\n%s", notes)
	}
	j.ScheduleType, j.ScheduleConf = "FIX_RATE", "3600"
	if s := mustMap(t, []Job{j}, Options{}).Jobs[0].Spec; s.ScheduleType != "fix_rate" || s.ScheduleExpr != "3600s" {
		t.Errorf("FIX_RATE 3600 → %s %s", s.ScheduleType, s.ScheduleExpr)
	}
}

// Script glues become script jobs with their language, the source as the
// current version with its remark, and the param as the params.
func TestGlueScripts(t *testing.T) {
	for glue, lang := range map[string]string{"GLUE_SHELL": "bash", "GLUE_PYTHON": "python3", "GLUE_PYTHON2": "python2",
		"GLUE_PHP": "php", "GLUE_NODEJS": "nodejs", "GLUE_POWERSHELL": "powershell", "GLUE_PWSH": "powershell"} {
		j := bean(1, "g")
		j.GlueType, j.GlueSource, j.Param, j.Handler, j.GlueRemark = glue, "echo \"<$1> & done\"\n", "x", "", "fix\tthe path"
		jp := mustMap(t, []Job{j}, Options{}).Jobs[0]
		if !jp.OK() || jp.Spec.Handler != "script" || jp.Spec.ScriptLanguage != lang || jp.Spec.Params != "x" ||
			jp.Spec.Script == nil || *jp.Spec.Script != j.GlueSource || jp.Spec.ScriptRemark != "fix the path" {
			t.Fatalf("%s: %+v", glue, jp)
		}
		if jp.ScriptHistory == nil {
			t.Errorf("%s: no script history to send", glue)
		}
	}
}

// Child links keep the links between imported jobs, drop the others with a
// note, break cycles, and order every job after its children.
func TestChildren(t *testing.T) {
	jobs := []Job{bean(1, "a"), bean(2, "b"), bean(3, "c"), bean(4, "groovy"), bean(5, "x"), bean(6, "y"), bean(7, "self")}
	jobs[0].ChildJobIDs = "2"        // chain 1 → 2 → 3
	jobs[1].ChildJobIDs = " 3 ,"     //
	jobs[2].ChildJobIDs = "4,999,zz" // unmappable, missing, garbage
	jobs[3].GlueType = "GLUE_GROOVY" //
	jobs[4].ChildJobIDs = "6"        // cycle 5 ↔ 6
	jobs[5].ChildJobIDs = "5"        //
	jobs[6].ChildJobIDs = "7,1,1"    // itself, and a duplicate
	p := mustMap(t, jobs, Options{})
	children := map[int64][]int64{}
	pos := map[int64]int{}
	for n, i := range p.Order {
		children[p.Jobs[i].OldID] = p.Jobs[i].Children
		pos[p.Jobs[i].OldID] = n
	}
	if len(p.Order) != 6 {
		t.Fatalf("order %v: want the 6 importable jobs", p.Order)
	}
	if !slices.Equal(children[1], []int64{2}) || !slices.Equal(children[2], []int64{3}) || len(children[3]) != 0 ||
		!slices.Equal(children[7], []int64{1}) {
		t.Errorf("children %v", children)
	}
	if len(children[5])+len(children[6]) != 1 {
		t.Errorf("cycle 5 ↔ 6: children %v, want exactly one link kept", children)
	}
	for parent, cs := range children {
		for _, c := range cs {
			if pos[c] > pos[parent] {
				t.Errorf("job %d is ordered before its child %d", parent, c)
			}
		}
	}
	notes := strings.Join(p.Jobs[2].Changed, "\n")
	for _, w := range []string{"child job 4 is not imported", "child job 999 does not exist", `"zz" is not a number`} {
		if !strings.Contains(notes, w) {
			t.Errorf("job 3 notes lack %q:\n%s", w, notes)
		}
	}
	if n := strings.Join(append(p.Jobs[4].Changed, p.Jobs[5].Changed...), "\n"); !strings.Contains(n, "closes a cycle") {
		t.Errorf("cycle not reported: %s", n)
	}
}

func TestApplyKeepsForeignFields(t *testing.T) {
	on := true
	cur := apiv1.Job{ID: 9, Version: 4, Enabled: true, JobSpec: apiv1.JobSpec{Group: "app", Name: "n-1", Handler: "old",
		AlarmWebhook: "https://hooks.example.com/x", ScheduleType: "none"}}
	want := apiv1.JobSpec{Group: "app", Name: "n-1", Handler: "new", ScheduleType: "none", Enabled: &on}
	if d := Diff(cur, want, false); !slices.Equal(d, []string{"handler"}) {
		t.Errorf("Diff = %v, want [handler]", d)
	}
	s := Apply(cur, want, false)
	if s.Handler != "new" || s.AlarmWebhook != cur.AlarmWebhook || s.Version != 4 || s.Enabled != nil {
		t.Errorf("Apply = %+v", s)
	}
	if _, err := Map(&Dump{}, Options{GroupPrefix: "bad prefix"}); err == nil {
		t.Error("a group prefix with a space was accepted")
	}
	if _, err := Map(&Dump{}, Options{Timezone: "Mars/Olympus"}); err == nil {
		t.Error("an unknown time zone was accepted")
	}
}
