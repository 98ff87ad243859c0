package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/jetjob/jetjob/internal/policy"
)

// Version is the protocol version this package writes.
const Version = 1

// MaxParamsBytes bounds job and trigger params (64 KiB).
const MaxParamsBytes = 64 << 10

// MaxConcurrencyLimit bounds a job's max_concurrency: the runs holding its
// slots share one lock value in a KV bucket (worker/internal/joblock/slots.go), which must
// stay small.
const MaxConcurrencyLimit = 1000

// MaxMessageBytes bounds the message text of a run result; longer messages
// are cut by TruncateMessage, which says so.
const MaxMessageBytes = 4 << 10

// MaxOutputBytes bounds the JSON output a handler sets for its run (a
// workflow node's output, passed to the nodes after it).
const MaxOutputBytes = 64 << 10

// ErrVersion is returned for a message of a protocol version this build does not know.
var ErrVersion = errors.New("unsupported message version")

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ValidName reports whether s can be a group name or worker id: one NATS
// subject token made of [A-Za-z0-9_-], at most 64 characters.
func ValidName(s string) bool { return nameRE.MatchString(s) }

// CheckName returns a clear error when s is not a valid name of the given kind.
func CheckName(kind, s string) error {
	if !ValidName(s) {
		return fmt.Errorf("invalid %s %q: want 1-64 characters of [A-Za-z0-9_-]", kind, s)
	}
	return nil
}

// TriggerType says why a run exists.
type TriggerType string

const (
	TriggerSchedule TriggerType = "schedule" // the job's schedule came due
	TriggerMisfire  TriggerType = "misfire"  // catch-up of a missed fire
	TriggerManual   TriggerType = "manual"   // API / CLI "trigger now"
	TriggerRetry    TriggerType = "retry"    // retry of a failed run
	TriggerParent   TriggerType = "parent"   // child job after its parent succeeded
	TriggerBackfill TriggerType = "backfill" // a past fire run by a backfill operation
	TriggerWorkflow TriggerType = "workflow" // a node of a workflow run, its inputs settled
	// TriggerImport marks a run brought from another scheduler's history
	// (jetjob import xxl-job --history), written finished: it ran there,
	// never in jetjob, so it is never in a trigger and Valid refuses it.
	TriggerImport TriggerType = "import"
	// TriggerMap and TriggerReduce are the parts of a map/reduce fire
	// and its reduce run (mapreduce.go); their retries are of type retry.
	TriggerMap    TriggerType = "map"
	TriggerReduce TriggerType = "reduce"
)

// Valid reports whether t is a known trigger type.
func (t TriggerType) Valid() bool {
	switch t {
	case TriggerSchedule, TriggerMisfire, TriggerManual, TriggerRetry, TriggerParent, TriggerBackfill, TriggerWorkflow,
		TriggerMap, TriggerReduce:
		return true
	}
	return false
}

// Trigger asks a worker of Group to run Handler once for run RunID.
type Trigger struct {
	V           int         `json:"v"`
	RunID       int64       `json:"run_id"`
	JobID       int64       `json:"job_id"`
	Group       string      `json:"group"`
	Handler     string      `json:"handler"`
	Params      string      `json:"params,omitempty"`
	TriggerType TriggerType `json:"trigger_type"`
	ScheduledAt time.Time   `json:"scheduled_at"`
	Attempt     int         `json:"attempt"`
	ShardIndex  int         `json:"shard_index"`
	ShardTotal  int         `json:"shard_total"`
	// TimeoutMS bounds the handler; 0 means no timeout.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
	// MisfirePolicy and MisfireThresholdMS let a worker decide what to do
	// with a trigger that reaches it late (backlog replay after an outage).
	MisfirePolicy      policy.Misfire `json:"misfire_policy,omitempty"`
	MisfireThresholdMS int64          `json:"misfire_threshold_ms,omitempty"`
	BlockStrategy      policy.Block   `json:"block_strategy,omitempty"`
	// MaxConcurrency bounds the runs of a job with block strategy
	// concurrent that execute at once; 0 (or absent, from an older
	// scheduler) means unbounded.
	MaxConcurrency int `json:"max_concurrency,omitempty"`
	// Script is the stored script a run of handler "script" runs: the
	// job's current version when the run was planned (or recovered),
	// carried in the trigger so that it is signed with it and every
	// delivery of the run runs the same version (docs/protocol.md).
	Script *Script `json:"script,omitempty"`
	// Secrets says that the run's job references secrets: the worker asks
	// the schedulers for them when the run starts (SecretsRequest) and
	// fails the run if it gets none. Never the values: JetStream stores
	// this message.
	Secrets bool `json:"secrets,omitempty"`
	// Flow is the run's flow controls (priority, group cap, concurrency
	// key, rate limits: flow.go); nil when none applies.
	Flow *Flow `json:"flow,omitempty"`
	// Map is the run's place in a map/reduce fire (a part and its item,
	// or the reduce run: mapreduce.go); nil for any other run.
	Map *MapRun `json:"map,omitempty"`
}

// Script is a version of a job's stored script.
type Script struct {
	Language string `json:"language"`
	Version  int    `json:"version"`
	Source   string `json:"source"`
}

// ScriptLanguages are the languages a script job may be written in, as
// xxl-job's GLUE types name them.
var ScriptLanguages = []string{"bash", "python3", "python2", "nodejs", "php", "powershell"}

// MaxScriptBytes bounds a script's source (64 KiB, as params).
const MaxScriptBytes = MaxParamsBytes

// MsgID is the JetStream Nats-Msg-Id of the trigger of run runID. It is derived
// from the run's identity only, so every re-publish of the same run (after a
// crash, by a shard's next owner) is dropped by the stream's duplicate window.
func MsgID(runID int64) string { return fmt.Sprintf("run-%d", runID) }

// Timeout returns the handler timeout, 0 for none.
func (t *Trigger) Timeout() time.Duration { return time.Duration(t.TimeoutMS) * time.Millisecond }

// Validate checks every field a worker relies on.
func (t *Trigger) Validate() error {
	var errs []string
	if t.V != Version {
		return fmt.Errorf("trigger: %w %d (this build speaks %d)", ErrVersion, t.V, Version)
	}
	if t.RunID <= 0 {
		errs = append(errs, "run_id must be positive")
	}
	if t.JobID <= 0 {
		errs = append(errs, "job_id must be positive")
	}
	if !ValidName(t.Group) {
		errs = append(errs, fmt.Sprintf("group %q is not a valid name", t.Group))
	}
	if t.Handler == "" || len(t.Handler) > 255 {
		errs = append(errs, "handler must be 1-255 characters")
	}
	if t.Script != nil {
		switch {
		case !slices.Contains(ScriptLanguages, t.Script.Language):
			errs = append(errs, fmt.Sprintf("script language %q is not one of %s", t.Script.Language, strings.Join(ScriptLanguages, ", ")))
		case t.Script.Version <= 0:
			errs = append(errs, "script version must be positive")
		case len(t.Script.Source) > MaxScriptBytes:
			errs = append(errs, fmt.Sprintf("script source is %d bytes, more than %d", len(t.Script.Source), MaxScriptBytes))
		}
	}
	if len(t.Params) > MaxParamsBytes {
		errs = append(errs, fmt.Sprintf("params are %d bytes, more than %d", len(t.Params), MaxParamsBytes))
	}
	if !t.TriggerType.Valid() {
		errs = append(errs, fmt.Sprintf("unknown trigger_type %q", t.TriggerType))
	}
	if t.ScheduledAt.IsZero() {
		errs = append(errs, "scheduled_at is required")
	}
	if t.Attempt < 0 {
		errs = append(errs, "attempt must not be negative")
	}
	if t.ShardTotal < 0 || t.ShardIndex < 0 || (t.ShardTotal > 0 && t.ShardIndex >= t.ShardTotal) {
		errs = append(errs, fmt.Sprintf("shard %d/%d is out of range", t.ShardIndex, t.ShardTotal))
	}
	if t.TimeoutMS < 0 {
		errs = append(errs, "timeout_ms must not be negative")
	}
	if t.MaxConcurrency < 0 || t.MaxConcurrency > MaxConcurrencyLimit {
		errs = append(errs, fmt.Sprintf("max_concurrency %d is out of range (0-%d)", t.MaxConcurrency, MaxConcurrencyLimit))
	}
	if t.Flow != nil {
		errs = t.Flow.validate(errs)
	}
	if t.Map != nil {
		errs = t.Map.validate(errs, t.ShardTotal)
	}
	return joinErrs("trigger", errs)
}

// EventKind distinguishes worker events.
type EventKind string

const (
	EventStarted  EventKind = "started"  // a handler began running
	EventFinished EventKind = "finished" // a run reached a terminal status on the worker
)

// Event is one worker-side fact about a run. Applying an event twice, or
// after a later one, changes nothing: see Status.Rank.
type Event struct {
	Kind     EventKind `json:"kind"`
	RunID    int64     `json:"run_id"`
	JobID    int64     `json:"job_id"`
	WorkerID string    `json:"worker_id,omitempty"`
	// Status is RUNNING for started events and a terminal status for finished ones.
	Status  Status    `json:"status"`
	Message string    `json:"message,omitempty"`
	At      time.Time `json:"at"`
	// ScheduledAt is the run's scheduled time, copied from its trigger.
	// job_runs is partitioned by it: with it the scheduler updates the run
	// in its one partition. Optional, for workers older than it; an event
	// without it is applied all the same, after a by-id lookup.
	ScheduledAt time.Time `json:"scheduled_at,omitzero"`
	// TriggerSeq and TriggeredAt are the JETJOB_TRIGGERS sequence and
	// stored time of the trigger the worker received (from its JetStream
	// metadata). With them the event alone records the run as triggered,
	// so a run that ends before its dispatcher records the publish costs
	// one row update instead of two. Optional, like ScheduledAt.
	TriggerSeq  uint64    `json:"trigger_seq,omitempty"`
	TriggeredAt time.Time `json:"triggered_at,omitzero"`
	// Output is the JSON value the handler set (finished events only; at
	// most MaxOutputBytes): a workflow node's output, stored with the run.
	Output json.RawMessage `json:"output,omitempty"`
	// Map is the items the handler mapped (finished SUCCEEDED events
	// only): a JSON array of 1 to MaxMapItems items, at most MaxMapBytes;
	// the scheduler writes one part per item (mapreduce.go). Reduce asks
	// for a reduce run once every part has succeeded.
	Map    json.RawMessage `json:"map,omitempty"`
	Reduce bool            `json:"reduce,omitempty"`
}

// Validate checks one event.
func (e *Event) Validate() error {
	var errs []string
	if e.RunID <= 0 {
		errs = append(errs, "run_id must be positive")
	}
	if e.JobID <= 0 {
		errs = append(errs, "job_id must be positive")
	}
	if e.At.IsZero() {
		errs = append(errs, "at is required")
	}
	switch e.Kind {
	case EventStarted:
		if e.Status != StatusRunning {
			errs = append(errs, fmt.Sprintf("started event with status %q, want RUNNING", e.Status))
		}
	case EventFinished:
		if !e.Status.Terminal() {
			errs = append(errs, fmt.Sprintf("finished event with non-terminal status %q", e.Status))
		}
	default:
		errs = append(errs, fmt.Sprintf("unknown event kind %q", e.Kind))
	}
	if len(e.Message) > MaxMessageBytes {
		errs = append(errs, fmt.Sprintf("message is %d bytes, more than %d", len(e.Message), MaxMessageBytes))
	}
	if len(e.Output) > 0 {
		switch {
		case e.Kind != EventFinished:
			errs = append(errs, "output on a started event")
		case len(e.Output) > MaxOutputBytes:
			errs = append(errs, fmt.Sprintf("output is %d bytes, more than %d", len(e.Output), MaxOutputBytes))
		case !json.Valid(e.Output):
			errs = append(errs, "output is not JSON")
		}
	}
	errs = e.validateMap(errs)
	return joinErrs("event", errs)
}

// Events is the payload of a message on a jetjob.event subject: one or more
// events, so that a worker may batch them.
type Events struct {
	V      int     `json:"v"`
	Events []Event `json:"events"`
}

// LogLine is one line a handler logged for a run.
type LogLine struct {
	V     int       `json:"v"`
	RunID int64     `json:"run_id"`
	JobID int64     `json:"job_id"`
	Seq   int64     `json:"seq"`
	At    time.Time `json:"at"`
	Level string    `json:"level"`
	Msg   string    `json:"msg"`
}

// Validate checks a log line.
func (l *LogLine) Validate() error {
	if l.V != Version {
		return fmt.Errorf("log line: %w %d (this build speaks %d)", ErrVersion, l.V, Version)
	}
	var errs []string
	if l.RunID <= 0 {
		errs = append(errs, "run_id must be positive")
	}
	if l.Seq < 0 {
		errs = append(errs, "seq must not be negative")
	}
	if l.At.IsZero() {
		errs = append(errs, "at is required")
	}
	return joinErrs("log line", errs)
}

// EncodeTrigger validates and marshals t, stamping the version.
func EncodeTrigger(t *Trigger) ([]byte, error) {
	t.V = Version
	if err := t.Validate(); err != nil {
		return nil, err
	}
	if data, ok := encodeTriggerFast(t); ok {
		return data, nil
	}
	return json.Marshal(t)
}

// DecodeTrigger unmarshals and validates a trigger message.
func DecodeTrigger(data []byte) (*Trigger, error) {
	var t Trigger
	if !decodeTriggerFast(data, &t) {
		t = Trigger{}
		if err := json.Unmarshal(data, &t); err != nil {
			return nil, fmt.Errorf("trigger: malformed JSON: %w", err)
		}
	}
	if err := t.Validate(); err != nil {
		return &t, err
	}
	return &t, nil
}

// EncodeEvents validates and marshals a batch of events.
func EncodeEvents(evs ...Event) ([]byte, error) {
	for i := range evs {
		if err := evs[i].Validate(); err != nil {
			return nil, err
		}
	}
	if data, ok := encodeEventsFast(evs); ok {
		return data, nil
	}
	return json.Marshal(Events{V: Version, Events: evs})
}

// DecodeEvents unmarshals an events message. Malformed or invalid events are
// an error for the whole message: a batch is written by one worker and a bad
// one means that worker is broken, not that half of it is usable.
func DecodeEvents(data []byte) ([]Event, error) {
	var m Events
	if !decodeEventsFast(data, &m) {
		m = Events{}
		if err := json.Unmarshal(data, &m); err != nil {
			return nil, fmt.Errorf("events: malformed JSON: %w", err)
		}
	}
	if m.V != Version {
		return nil, fmt.Errorf("events: %w %d (this build speaks %d)", ErrVersion, m.V, Version)
	}
	if len(m.Events) == 0 {
		return nil, errors.New("events: empty batch")
	}
	for i := range m.Events {
		if err := m.Events[i].Validate(); err != nil {
			return nil, fmt.Errorf("events[%d]: %w", i, err)
		}
	}
	return m.Events, nil
}

// EncodeLogLine validates and marshals a log line, stamping the version.
func EncodeLogLine(l *LogLine) ([]byte, error) {
	l.V = Version
	return encodeValid(l)
}

// DecodeLogLine unmarshals and validates a log line.
func DecodeLogLine(data []byte) (*LogLine, error) { return decodeValid[LogLine]("log line", data) }

// validator is a message that checks itself.
type validator interface{ Validate() error }

// encodeValid validates a message and marshals it.
func encodeValid(m validator) ([]byte, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

// decodeValid unmarshals data into a new T and validates it; what names
// the message in errors.
func decodeValid[T any, P interface {
	*T
	validator
}](what string, data []byte) (*T, error) {
	m := P(new(T))
	if err := json.Unmarshal(data, m); err != nil {
		return nil, fmt.Errorf("%s: malformed JSON: %w", what, err)
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return m, nil
}

// TruncateMessage bounds a run's result message to MaxMessageBytes, cutting
// on a rune boundary and saying that it was cut.
func TruncateMessage(s string) string {
	if len(s) <= MaxMessageBytes {
		return s
	}
	const note = " …[truncated]"
	cut := MaxMessageBytes - len(note)
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + note
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

func joinErrs(what string, errs []string) error {
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("invalid %s: %s", what, strings.Join(errs, "; "))
}
