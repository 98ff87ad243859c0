package wire

import (
	"encoding/json"
	"fmt"
	"regexp"
	"time"
)

// Control requests travel as NATS request/reply, outside any stream: a
// scheduler asks one worker (on stream.Control(workerID)) before routing a
// trigger to it, and a worker asks the schedulers (on stream.Supersede and
// stream.StartCheck) about a late trigger or one that may have started. Both sides treat a missing or malformed answer as
// "no answer" and fall back to a safe default.

// ControlOp is what a control request asks of a worker.
type ControlOp string

const (
	// OpPing asks whether the worker is there (routing strategy failover).
	OpPing ControlOp = "ping"
	// OpIdleBeat asks whether the worker runs a run of JobID (routing
	// strategy busyover), xxl-job's idleBeat.
	OpIdleBeat ControlOp = "idle_beat"
	// OpRunActive asks whether run RunID executes (or waits) on the worker,
	// or a run of job JobID holds the job lock there under RunID's name:
	// a run of another worker asks it before taking over the job lock that
	// run left when it ended (worker/internal/joblock).
	OpRunActive ControlOp = "run_active"
)

// ControlRequest is sent by a scheduler to one worker.
type ControlRequest struct {
	V     int       `json:"v"`
	Op    ControlOp `json:"op"`
	JobID int64     `json:"job_id,omitempty"`
	RunID int64     `json:"run_id,omitempty"`
	// Lock is the JETJOB_LOCKS key run_active asks about when it is not
	// the job's own lock job.<job_id>: a sharding-broadcast part's lock,
	// job.<job_id>_part<i> (worker/internal/joblock). Empty from older workers.
	Lock string `json:"lock,omitempty"`
}

// lockRE is the shape of a job lock's key that run_active may name.
var lockRE = regexp.MustCompile(`^job\.[1-9][0-9]{0,18}(_part[0-9]{1,9})?$`)

// Validate checks a control request.
func (c *ControlRequest) Validate() error {
	if c.V != Version {
		return fmt.Errorf("control request: %w %d (this build speaks %d)", ErrVersion, c.V, Version)
	}
	switch c.Op {
	case OpPing:
	case OpIdleBeat:
		if c.JobID <= 0 {
			return fmt.Errorf("control request: idle_beat needs a positive job_id, got %d", c.JobID)
		}
	case OpRunActive:
		if c.RunID <= 0 {
			return fmt.Errorf("control request: run_active needs a positive run_id, got %d", c.RunID)
		}
		if c.Lock != "" && !lockRE.MatchString(c.Lock) {
			return fmt.Errorf("control request: lock %q is not a job lock key (want job.<job_id> or job.<job_id>_part<index>)", c.Lock)
		}
	default:
		return fmt.Errorf("control request: unknown op %q (want ping, idle_beat or run_active)", c.Op)
	}
	return nil
}

// ControlReply is a worker's answer.
type ControlReply struct {
	V int `json:"v"`
	// WorkerID is who answered.
	WorkerID string `json:"worker_id"`
	// Busy answers idle_beat (a run of the job executes on the worker) and
	// run_active (that run does).
	Busy bool `json:"busy,omitempty"`
	// Error is set when the request was refused (malformed, unknown op).
	Error string `json:"error,omitempty"`
}

// SupersedeQuery asks whether a late trigger of a fire_once job is
// superseded by a newer missed fire of the same job that runs (one that
// ran, or the catch-up the schedulers chose; see scheduler/internal/supersede):
// then only the newer one runs. A missed fire is one scheduled
// before Cutoff (the asking worker's now minus the misfire threshold);
// fires after it are on time and run as usual, so a catch-up is not
// cancelled by the first on-time fire that follows it.
type SupersedeQuery struct {
	RunID       int64     `json:"run_id"`
	JobID       int64     `json:"job_id"`
	ScheduledAt time.Time `json:"scheduled_at"`
	Cutoff      time.Time `json:"cutoff"`
}

// MaxSupersedeQueries bounds the queries of one request.
const MaxSupersedeQueries = 256

// SupersedeRequest carries the queries a worker gathered: one request for
// a whole replayed backlog, not one per trigger.
type SupersedeRequest struct {
	V       int              `json:"v"`
	Queries []SupersedeQuery `json:"queries"`
}

// Validate checks a supersede request.
func (s *SupersedeRequest) Validate() error {
	if err := checkQueries("supersede request", s.V, len(s.Queries), MaxSupersedeQueries); err != nil {
		return err
	}
	for i, q := range s.Queries {
		if q.RunID <= 0 || q.JobID <= 0 {
			return fmt.Errorf("supersede request: query %d: run_id and job_id must be positive, got %d and %d", i, q.RunID, q.JobID)
		}
		if q.ScheduledAt.IsZero() || q.Cutoff.IsZero() {
			return fmt.Errorf("supersede request: query %d: scheduled_at and cutoff are required", i)
		}
	}
	return nil
}

// SupersedeReply answers a SupersedeRequest: By[i] is the run that runs in
// place of query i (a newer missed fire, or an older catch-up published
// after it was due), 0 if none.
type SupersedeReply struct {
	V     int     `json:"v"`
	By    []int64 `json:"by,omitempty"`
	Error string  `json:"error,omitempty"`
}

// StartQuery asks the schedulers whether a run had started before: a worker
// asks it before the handler of a trigger that may have reached a worker
// already (a redelivery, or a trigger moved off a dead worker's queue).
// A run that started must not start again under the same attempt
// (docs/architecture.md, invariant 2): it ends LOST instead, and the job's retry
// policy decides whether a new attempt runs.
type StartQuery struct {
	RunID       int64     `json:"run_id"`
	ScheduledAt time.Time `json:"scheduled_at"`
}

// MaxStartQueries bounds the queries of one request.
const MaxStartQueries = 256

// StartRequest carries the start queries a worker gathered.
type StartRequest struct {
	V       int          `json:"v"`
	Queries []StartQuery `json:"queries"`
}

// Validate checks a start request.
func (s *StartRequest) Validate() error {
	if err := checkQueries("start request", s.V, len(s.Queries), MaxStartQueries); err != nil {
		return err
	}
	for i, q := range s.Queries {
		if q.RunID <= 0 {
			return fmt.Errorf("start request: query %d: run_id must be positive, got %d", i, q.RunID)
		}
		if q.ScheduledAt.IsZero() {
			return fmt.Errorf("start request: query %d: scheduled_at is required", i)
		}
	}
	return nil
}

// RunStart is what the schedulers know of one run's start, once every
// event published before the question has been applied. Status is the
// run's status (empty when no such run exists); WorkerID and StartedAt are
// set once a worker started it.
type RunStart struct {
	Status    Status    `json:"status,omitempty"`
	WorkerID  string    `json:"worker_id,omitempty"`
	StartedAt time.Time `json:"started_at,omitzero"`
}

// Started reports whether a handler of the run may have started: a
// worker recorded its start, or the run ended as only a started run can.
func (r RunStart) Started() bool {
	return !r.StartedAt.IsZero() || r.Status == StatusRunning
}

// StartReply answers a StartRequest: Runs[i] answers query i. Error is set
// (and Runs empty) when the schedulers cannot answer with certainty yet:
// PostgreSQL is unreachable, or run events published before the question
// are still being applied. The worker asks again.
type StartReply struct {
	V     int        `json:"v"`
	Runs  []RunStart `json:"runs,omitempty"`
	Error string     `json:"error,omitempty"`
}

// checkQueries checks what every batched question to the schedulers must
// be: of this protocol version, with 1 to max queries.
func checkQueries(what string, v, n, max int) error {
	if v != Version {
		return fmt.Errorf("%s: %w %d (this build speaks %d)", what, ErrVersion, v, Version)
	}
	if n == 0 || n > max {
		return fmt.Errorf("%s: %d queries, want 1-%d", what, n, max)
	}
	return nil
}

// EncodeControl stamps the version on a control message (a request or a
// reply of this file) and marshals it, validating what has a Validate.
func EncodeControl(m any) ([]byte, error) {
	switch c := m.(type) {
	case *ControlRequest:
		c.V = Version
		if err := c.Validate(); err != nil {
			return nil, err
		}
	case *ControlReply:
		c.V = Version
	case *SupersedeRequest:
		c.V = Version
		if err := c.Validate(); err != nil {
			return nil, err
		}
	case *SupersedeReply:
		c.V = Version
	case *StartRequest:
		c.V = Version
		if err := c.Validate(); err != nil {
			return nil, err
		}
	case *StartReply:
		c.V = Version
	case *RecordedNotice:
		c.V = Version
		if err := c.Validate(); err != nil {
			return nil, err
		}
	case *SecretsRequest:
		c.V = Version
		if err := c.Validate(); err != nil {
			return nil, err
		}
	case *SecretsReply:
		c.V = Version
	case *MapOutputsRequest:
		c.V = Version
		if err := c.Validate(); err != nil {
			return nil, err
		}
	case *MapOutputsReply:
		c.V = Version
		if err := c.Validate(); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("encode control: unsupported message %T", m)
	}
	return json.Marshal(m)
}

// DecodeControl unmarshals data into m (a pointer to one of this file's
// messages) and validates it.
func DecodeControl(data []byte, m any) error {
	if err := json.Unmarshal(data, m); err != nil {
		return fmt.Errorf("control message: malformed JSON: %w", err)
	}
	switch c := m.(type) {
	case *ControlRequest:
		return c.Validate()
	case *SupersedeRequest:
		return c.Validate()
	case *SecretsRequest:
		return c.Validate()
	case *SecretsReply:
		if c.V != Version {
			return fmt.Errorf("secrets reply: %w %d", ErrVersion, c.V)
		}
	case *ControlReply:
		if c.V != Version {
			return fmt.Errorf("control reply: %w %d", ErrVersion, c.V)
		}
	case *SupersedeReply:
		if c.V != Version {
			return fmt.Errorf("supersede reply: %w %d", ErrVersion, c.V)
		}
	case *StartRequest:
		return c.Validate()
	case *StartReply:
		if c.V != Version {
			return fmt.Errorf("start reply: %w %d", ErrVersion, c.V)
		}
	case *RecordedNotice:
		return c.Validate()
	case *MapOutputsRequest:
		return c.Validate()
	case *MapOutputsReply:
		return c.Validate()
	default:
		return fmt.Errorf("decode control: unsupported message %T", m)
	}
	return nil
}

// RecordedNotice is what a scheduler's results applier publishes on
// stream.Recorded after a committed batch: the runs it recorded
// triggered (with their trigger's sequence) from their workers' events. A
// scheduler that published one of them holds back its own TRIGGERED write
// for it (package runs, "The deferred TRIGGERED write"), which would now
// find nothing to do: it drops the write. A lost notice costs that write,
// nothing else.
type RecordedNotice struct {
	V         int     `json:"v"`
	Scheduler string  `json:"scheduler"`
	Runs      []int64 `json:"runs"`
}

// MaxRecordedRuns bounds a notice's runs: an applier's batch is at most
// 1000 messages of at most 256 events.
const MaxRecordedRuns = 256_000

// Validate checks a notice.
func (n *RecordedNotice) Validate() error {
	if n.V != Version {
		return fmt.Errorf("recorded notice: %w %d (this build speaks %d)", ErrVersion, n.V, Version)
	}
	if n.Scheduler == "" || len(n.Scheduler) > 255 {
		return fmt.Errorf("recorded notice: scheduler must be 1-255 characters, got %d", len(n.Scheduler))
	}
	if len(n.Runs) == 0 || len(n.Runs) > MaxRecordedRuns {
		return fmt.Errorf("recorded notice: 1-%d runs, got %d", MaxRecordedRuns, len(n.Runs))
	}
	for _, id := range n.Runs {
		if id <= 0 {
			return fmt.Errorf("recorded notice: run id %d must be positive", id)
		}
	}
	return nil
}
