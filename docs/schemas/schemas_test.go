package schemas_test

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/jetjob/jetjob/docs/schemas"
	"github.com/jetjob/jetjob/shared/wire"
)

// The schemas say what readers accept: unknown properties are allowed
// ("additionalProperties": true), because every decoder of shared/wire
// ignores them (a newer writer's fields reach an older reader). The strict
// variant, with every "additionalProperties": true turned false, says what
// jetjob's writers send: the encoders must write no property a schema does
// not declare, so a field added to a Go message without its schema fails
// here.
const base = "file:///jetjob/docs/schemas/"

type compiled struct{ lenient, strict map[string]*jsonschema.Schema }

func compile(t *testing.T) compiled {
	t.Helper()
	files, err := fs.Glob(schemas.FS, "*.json")
	if err != nil || len(files) < 2 {
		t.Fatalf("schema files: %v %v", files, err)
	}
	build := func(strict bool) map[string]*jsonschema.Schema {
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020)
		c.AssertFormat()
		for _, f := range files {
			b, err := fs.ReadFile(schemas.FS, f)
			if err != nil {
				t.Fatal(err)
			}
			if strict {
				b = bytes.ReplaceAll(b, []byte(`"additionalProperties": true`), []byte(`"additionalProperties": false`))
			}
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if err := c.AddResource(base+f, doc); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
		}
		out := map[string]*jsonschema.Schema{}
		for _, f := range files {
			s, err := c.Compile(base + f)
			if err != nil {
				t.Fatalf("compile %s: %v", f, err)
			}
			out[strings.TrimSuffix(f, ".json")] = s
		}
		return out
	}
	return compiled{lenient: build(false), strict: build(true)}
}

func validate(s *jsonschema.Schema, data []byte) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return err
	}
	return s.Validate(inst)
}

// decoders are shared/wire's readers of each message, by schema name.
var decoders = map[string]func([]byte) error{
	"trigger":             func(b []byte) error { _, err := wire.DecodeTrigger(b); return err },
	"events":              func(b []byte) error { _, err := wire.DecodeEvents(b); return err },
	"log-line":            func(b []byte) error { _, err := wire.DecodeLogLine(b); return err },
	"worker-info":         func(b []byte) error { _, err := wire.DecodeWorkerInfo(b); return err },
	"control-request":     func(b []byte) error { return wire.DecodeControl(b, &wire.ControlRequest{}) },
	"control-reply":       func(b []byte) error { return wire.DecodeControl(b, &wire.ControlReply{}) },
	"supersede-request":   func(b []byte) error { return wire.DecodeControl(b, &wire.SupersedeRequest{}) },
	"supersede-reply":     func(b []byte) error { return wire.DecodeControl(b, &wire.SupersedeReply{}) },
	"start-request":       func(b []byte) error { return wire.DecodeControl(b, &wire.StartRequest{}) },
	"start-reply":         func(b []byte) error { return wire.DecodeControl(b, &wire.StartReply{}) },
	"recorded-notice":     func(b []byte) error { return wire.DecodeControl(b, &wire.RecordedNotice{}) },
	"secrets-request":     func(b []byte) error { return wire.DecodeControl(b, &wire.SecretsRequest{}) },
	"secrets-reply":       func(b []byte) error { return wire.DecodeControl(b, &wire.SecretsReply{}) },
	"map-outputs-request": func(b []byte) error { return wire.DecodeControl(b, &wire.MapOutputsRequest{}) },
	"map-outputs-reply":   func(b []byte) error { return wire.DecodeControl(b, &wire.MapOutputsReply{}) },
}

type sample struct {
	schema, name string
	data         []byte
}

// samples encodes realistic messages with the encoders jetjob sends them
// with: optional fields present and absent, the fast encoders' plain
// shapes and the encoding/json fallback (escapes, non-ASCII, a zoned time).
func samples(t *testing.T) []sample {
	t.Helper()
	at := time.Date(2026, 11, 22, 2, 30, 0, 125_000_000, time.UTC)
	zoned := at.In(time.FixedZone("CET", 3600))
	var out []sample
	add := func(schema, name string, data []byte, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s %s: encode: %v", schema, name, err)
		}
		out = append(out, sample{schema, name, data})
	}

	for _, tc := range []struct {
		name string
		t    wire.Trigger
	}{
		{"minimal", wire.Trigger{RunID: 1, JobID: 7, Group: "billing", Handler: "invoice", TriggerType: wire.TriggerSchedule, ScheduledAt: at}},
		{"every field", wire.Trigger{RunID: 9_000_000_001, JobID: 7, Group: "billing", Handler: "invoice",
			Params: `{"region":"eu","note":"<b>\"ü\"</b>"}`, TriggerType: wire.TriggerRetry, ScheduledAt: at, Attempt: 2,
			TimeoutMS: 30_000, MisfirePolicy: "fire_once", MisfireThresholdMS: 5000, BlockStrategy: "concurrent", MaxConcurrency: 3, Secrets: true}},
		{"broadcast part", wire.Trigger{RunID: 44, JobID: 8, Group: "etl_2", Handler: "shell", Params: "echo $JETJOB_SHARD_INDEX",
			TriggerType: wire.TriggerManual, ScheduledAt: at, ShardIndex: 2, ShardTotal: 4, BlockStrategy: "serial", MisfirePolicy: "skip", MisfireThresholdMS: 5000}},
		{"script job", wire.Trigger{RunID: 46, JobID: 10, Group: "ops", Handler: "script", Params: "14", TriggerType: wire.TriggerManual,
			ScheduledAt: at, Script: &wire.Script{Language: "bash", Version: 3, Source: "#!/bin/bash\necho \"keep $1 days\" <&- \u00e9\n"}}},
		{"zoned time", wire.Trigger{RunID: 45, JobID: 9, Group: "billing", Handler: "invoice", TriggerType: wire.TriggerBackfill, ScheduledAt: zoned}},
		{"map part", wire.Trigger{RunID: 47, JobID: 11, Group: "etl", Handler: "resize", TriggerType: wire.TriggerMap, ScheduledAt: at,
			ShardIndex: 3, ShardTotal: 1000, Map: &wire.MapRun{Fire: 46, Item: json.RawMessage(`{"file":"a/ü.png"}`)}}},
		{"reduce run", wire.Trigger{RunID: 1048, JobID: 11, Group: "etl", Handler: "resize", TriggerType: wire.TriggerReduce, ScheduledAt: at,
			Map: &wire.MapRun{Fire: 46, Reduce: true}}},
	} {
		data, err := wire.EncodeTrigger(&tc.t)
		add("trigger", tc.name, data, err)
	}

	started := wire.Event{Kind: wire.EventStarted, RunID: 1, JobID: 7, WorkerID: "w-1", Status: wire.StatusRunning, At: at,
		ScheduledAt: at, TriggerSeq: 1234, TriggeredAt: at}
	data, err := wire.EncodeEvents(started)
	add("events", "one started event", data, err)
	data, err = wire.EncodeEvents(started,
		wire.Event{Kind: wire.EventFinished, RunID: 1, JobID: 7, WorkerID: "w-1", Status: wire.StatusSucceeded, At: at, ScheduledAt: at, TriggerSeq: 1234, TriggeredAt: at},
		wire.Event{Kind: wire.EventFinished, RunID: 2, JobID: 7, WorkerID: "w-1", Status: wire.StatusFailed, Message: "exit status 1: \"disk\" full ✗", At: at},
		// As the lost-run monitor writes it: no worker, a local time.
		wire.Event{Kind: wire.EventFinished, RunID: 3, JobID: 8, Status: wire.StatusLost, Message: "lost: delivered 5 times", At: zoned, ScheduledAt: at})
	add("events", "batch", data, err)
	data, err = wire.EncodeEvents(wire.Event{Kind: wire.EventFinished, RunID: 46, JobID: 11, WorkerID: "w-1", Status: wire.StatusSucceeded, At: at,
		ScheduledAt: at, Map: json.RawMessage(`[{"file":"a.png"},{"file":"b.png"}]`), Reduce: true})
	add("events", "map", data, err)

	data, err = wire.EncodeLogLine(&wire.LogLine{RunID: 1, JobID: 7, Seq: 1, At: at, Level: "info", Msg: `sending invoices {"n":3}`})
	add("log-line", "with fields", data, err)
	data, err = wire.EncodeLogLine(&wire.LogLine{RunID: 1, JobID: 7, Seq: 2, At: zoned, Level: "error", Msg: "smtp: 550 ✉ refused\n\tat main.go:12"})
	add("log-line", "multi-line", data, err)

	for _, tc := range []struct {
		schema, name string
		m            any
	}{
		{"control-request", "ping", &wire.ControlRequest{Op: wire.OpPing}},
		{"control-request", "idle_beat", &wire.ControlRequest{Op: wire.OpIdleBeat, JobID: 7}},
		{"control-request", "run_active", &wire.ControlRequest{Op: wire.OpRunActive, JobID: 7, RunID: 1}},
		{"control-request", "run_active part lock", &wire.ControlRequest{Op: wire.OpRunActive, JobID: 8, RunID: 44, Lock: "job.8_part2"}},
		{"control-reply", "idle", &wire.ControlReply{WorkerID: "w-1"}},
		{"control-reply", "busy", &wire.ControlReply{WorkerID: "w-1", Busy: true}},
		{"control-reply", "refused", &wire.ControlReply{WorkerID: "w-1", Error: "control request: unknown op \"x\""}},
		{"supersede-request", "two", &wire.SupersedeRequest{Queries: []wire.SupersedeQuery{
			{RunID: 10, JobID: 7, ScheduledAt: at, Cutoff: at.Add(time.Minute)}, {RunID: 11, JobID: 8, ScheduledAt: at, Cutoff: at}}}},
		{"supersede-reply", "answers", &wire.SupersedeReply{By: []int64{0, 12}}},
		{"supersede-reply", "error", &wire.SupersedeReply{Error: "database unreachable"}},
		{"start-request", "one", &wire.StartRequest{Queries: []wire.StartQuery{{RunID: 10, ScheduledAt: at}}}},
		{"start-reply", "answers", &wire.StartReply{Runs: []wire.RunStart{{}, {Status: wire.StatusRunning, WorkerID: "w-2", StartedAt: at}, {Status: wire.StatusSucceeded}}}},
		{"start-reply", "not yet", &wire.StartReply{Error: "run events are still being applied"}},
		{"recorded-notice", "two", &wire.RecordedNotice{Scheduler: "sched-1", Runs: []int64{10, 9_000_000_001}}},
		{"secrets-request", "one", &wire.SecretsRequest{RunID: 10, WorkerID: "w-1", ScheduledAt: at}},
		{"secrets-reply", "values", &wire.SecretsReply{Env: map[string]string{"DB_PW": "x"}, Values: map[string]string{"db-password": "x"}}},
		{"secrets-reply", "refused", &wire.SecretsReply{Error: "refused: no run of this group with that id that has not ended"}},
		{"map-outputs-request", "first page", &wire.MapOutputsRequest{RunID: 1048, ScheduledAt: at, WorkerID: "w-1"}},
		{"map-outputs-reply", "page", &wire.MapOutputsReply{Total: 3, Outputs: []json.RawMessage{json.RawMessage(`{"px":12}`), json.RawMessage(`null`)}}},
		{"map-outputs-reply", "refused", &wire.MapOutputsReply{Error: "refused: no reduce run of this group with that id that has not ended"}},
	} {
		data, err := wire.EncodeControl(tc.m)
		add(tc.schema, tc.name, data, err)
	}

	data, err = wire.EncodeWorkerInfo(&wire.WorkerInfo{ID: "w-1", Group: "billing", Host: "node-a", PID: 4242, Version: "v1.2.0",
		Handlers: []string{"invoice", "report"}, Capacity: 10, StartedAt: at, BeatAt: at, DirectedBatches: true})
	add("worker-info", "idle", data, err)
	data, err = wire.EncodeWorkerInfo(&wire.WorkerInfo{ID: "w-2", Group: "billing", Version: "(devel)",
		Handlers: []string{"invoice"}, Capacity: 1, Running: []int64{1, 9_000_000_001}, StartedAt: zoned, BeatAt: at})
	add("worker-info", "busy", data, err)
	return out
}

// TestEncodersMatchSchemas validates what the Go encoders write against
// the schemas, leniently and strictly, and checks that the Go decoders
// read it back.
func TestEncodersMatchSchemas(t *testing.T) {
	sch := compile(t)
	seen := map[string]bool{}
	for _, s := range samples(t) {
		seen[s.schema] = true
		if err := validate(sch.lenient[s.schema], s.data); err != nil {
			t.Errorf("%s %s: %s\nrefused by its schema: %v", s.schema, s.name, s.data, err)
		}
		if err := validate(sch.strict[s.schema], s.data); err != nil {
			t.Errorf("%s %s: %s\nwrites a property its schema does not declare: %v", s.schema, s.name, s.data, err)
		}
		if err := decoders[s.schema](s.data); err != nil {
			t.Errorf("%s %s: %s\nrefused by its decoder: %v", s.schema, s.name, s.data, err)
		}
	}
	for name := range sch.lenient {
		if name != "common" && !seen[name] {
			t.Errorf("schema %s has no sample: every message schema must be checked against its encoder", name)
		}
	}
}

// TestSchemasRefuseWhatDecodersRefuse mutates valid messages the way a
// broken writer would (a required field missing, a wrong type, a value
// out of range) and expects the schema to refuse each, as the decoder
// does: the schemas are not vacuous. An unknown property is accepted by
// both (the compatibility rule) and refused only by the strict variant.
func TestSchemasRefuseWhatDecodersRefuse(t *testing.T) {
	sch := compile(t)
	valid := map[string][]byte{}
	for _, s := range samples(t) {
		if _, ok := valid[s.schema]; !ok {
			valid[s.schema] = s.data
		}
	}
	batch := samples(t)
	for _, s := range batch {
		if s.schema == "events" && s.name == "batch" {
			valid["events"] = s.data
		}
		if s.schema == "control-request" && s.name == "idle_beat" {
			valid["control-request"] = s.data
		}
	}
	for _, tc := range []struct {
		schema, name string
		mutate       func(m map[string]any)
	}{
		{"trigger", "no run_id", func(m map[string]any) { delete(m, "run_id") }},
		{"trigger", "run_id as a string", func(m map[string]any) { m["run_id"] = "1" }},
		{"trigger", "no scheduled_at", func(m map[string]any) { delete(m, "scheduled_at") }},
		{"trigger", "scheduled_at not a time", func(m map[string]any) { m["scheduled_at"] = "yesterday" }},
		{"trigger", "version 2", func(m map[string]any) { m["v"] = 2 }},
		{"trigger", "group not a subject token", func(m map[string]any) { m["group"] = "a.b" }},
		{"trigger", "unknown trigger_type", func(m map[string]any) { m["trigger_type"] = "cron" }},
		{"trigger", "fractional attempt", func(m map[string]any) { m["attempt"] = 1.5 }},
		{"events", "no events", func(m map[string]any) { m["events"] = []any{} }},
		{"events", "event without at", func(m map[string]any) { delete(ev(m, 1), "at") }},
		{"events", "finished as RUNNING", func(m map[string]any) { ev(m, 1)["status"] = "RUNNING" }},
		{"events", "started as SUCCEEDED", func(m map[string]any) { ev(m, 0)["status"] = "SUCCEEDED" }},
		{"events", "unknown kind", func(m map[string]any) { ev(m, 0)["kind"] = "progress" }},
		{"events", "job_id 0", func(m map[string]any) { ev(m, 2)["job_id"] = 0 }},
		{"log-line", "no at", func(m map[string]any) { delete(m, "at") }},
		{"log-line", "seq as a string", func(m map[string]any) { m["seq"] = "1" }},
		{"control-request", "idle_beat without job_id", func(m map[string]any) { delete(m, "job_id") }},
		{"control-request", "unknown op", func(m map[string]any) { m["op"] = "kill" }},
		{"control-request", "lock not a job lock", func(m map[string]any) { m["op"], m["run_id"], m["lock"] = "run_active", 1, "job.8_slots" }},
		{"control-reply", "busy as a string", func(m map[string]any) { m["busy"] = "yes" }},
		{"supersede-request", "no queries", func(m map[string]any) { m["queries"] = []any{} }},
		{"supersede-request", "query without cutoff", func(m map[string]any) { delete(m["queries"].([]any)[0].(map[string]any), "cutoff") }},
		{"supersede-reply", "version 0", func(m map[string]any) { delete(m, "v") }},
		{"start-request", "query without scheduled_at", func(m map[string]any) { delete(m["queries"].([]any)[0].(map[string]any), "scheduled_at") }},
		{"start-reply", "started_at not a time", func(m map[string]any) { m["runs"].([]any)[1].(map[string]any)["started_at"] = 17 }},
		{"recorded-notice", "no runs", func(m map[string]any) { m["runs"] = []any{} }},
		{"recorded-notice", "run id 0", func(m map[string]any) { m["runs"] = []any{0} }},
		{"map-outputs-request", "from negative", func(m map[string]any) { m["from"] = -1 }},
		{"worker-info", "no handlers", func(m map[string]any) { m["handlers"] = []any{} }},
		{"worker-info", "capacity 0", func(m map[string]any) { m["capacity"] = 0 }},
		{"worker-info", "no beat_at", func(m map[string]any) { delete(m, "beat_at") }},
	} {
		data := mutated(t, valid[tc.schema], tc.mutate)
		if validate(sch.lenient[tc.schema], data) == nil {
			t.Errorf("%s, %s: accepted by the schema: %s", tc.schema, tc.name, data)
		}
		if decoders[tc.schema](data) == nil {
			t.Errorf("%s, %s: accepted by the decoder, so the schema is stricter than the reader: %s", tc.schema, tc.name, data)
		}
	}
	for name, data := range valid {
		extra := mutated(t, data, func(m map[string]any) { m["added_by_a_newer_writer"] = true })
		if err := validate(sch.lenient[name], extra); err != nil {
			t.Errorf("%s with an unknown property: refused by the schema, but readers ignore it: %v", name, err)
		}
		if err := decoders[name](extra); err != nil {
			t.Errorf("%s with an unknown property: refused by the decoder: %v", name, err)
		}
		if validate(sch.strict[name], extra) == nil {
			t.Errorf("%s with an unknown property: accepted by the strict schema", name)
		}
	}
}

// ev is event i of an events message.
func ev(m map[string]any, i int) map[string]any { return m["events"].([]any)[i].(map[string]any) }

func mutated(t *testing.T, data []byte, mutate func(map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	mutate(m)
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
