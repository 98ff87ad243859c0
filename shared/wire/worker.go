package wire

import (
	"fmt"
	"time"
)

// Limits of a WorkerInfo.
const (
	// MaxWorkerHandlers bounds the handlers a heartbeat lists.
	MaxWorkerHandlers = 1024
	// workerMaxHandlerName matches Trigger's limit on handler names.
	workerMaxHandlerName = 255
	// maxWorkerText bounds Host and Version.
	maxWorkerText = 255
)

// WorkerInfo is a worker's heartbeat: the value of its key
// <group>.<workerID> in the KV bucket JETJOB_WORKERS (stream.WorkersBucket),
// put every heartbeat interval while the worker runs and deleted when it
// stops gracefully. The bucket's TTL (three beats by default) removes the
// key of a worker that died. Schedulers watch the bucket for routing and the
// console.
type WorkerInfo struct {
	V     int    `json:"v"`
	ID    string `json:"id"`
	Group string `json:"group"`
	Host  string `json:"host"`
	PID   int    `json:"pid"`
	// Version is the jetjob build of the worker ("(devel)" when built from a
	// source tree without a module version).
	Version string `json:"version"`
	// Handlers are the names the worker runs, sorted.
	Handlers []string `json:"handlers"`
	// Capacity is how many runs the worker executes at once.
	Capacity int `json:"capacity"`
	// Running are the ids of the runs executing on the worker at BeatAt,
	// sorted; never null in JSON.
	Running   []int64   `json:"running"`
	StartedAt time.Time `json:"started_at"`
	BeatAt    time.Time `json:"beat_at"`
	// DirectedBatches says the worker reads trigger batches on its directed
	// subject (stream.BatchHeader): only then do schedulers send it the
	// batches of jobs routed consistent_hash. Older workers leave it out.
	DirectedBatches bool `json:"directed_batches,omitempty"`
}

// Free is how many more runs the worker could start at BeatAt.
func (w *WorkerInfo) Free() int { return max(0, w.Capacity-len(w.Running)) }

// Validate checks a heartbeat.
func (w *WorkerInfo) Validate() error {
	if w.V != Version {
		return fmt.Errorf("worker info: %w %d (this build speaks %d)", ErrVersion, w.V, Version)
	}
	var errs []string
	if !ValidName(w.ID) {
		errs = append(errs, fmt.Sprintf("id %q is not a valid name", w.ID))
	}
	if !ValidName(w.Group) {
		errs = append(errs, fmt.Sprintf("group %q is not a valid name", w.Group))
	}
	if len(w.Host) > maxWorkerText {
		errs = append(errs, fmt.Sprintf("host is %d bytes, more than %d", len(w.Host), maxWorkerText))
	}
	if len(w.Version) > maxWorkerText {
		errs = append(errs, fmt.Sprintf("version is %d bytes, more than %d", len(w.Version), maxWorkerText))
	}
	if w.PID < 0 {
		errs = append(errs, "pid must not be negative")
	}
	if len(w.Handlers) == 0 {
		errs = append(errs, "handlers must not be empty")
	}
	if len(w.Handlers) > MaxWorkerHandlers {
		errs = append(errs, fmt.Sprintf("%d handlers, more than %d", len(w.Handlers), MaxWorkerHandlers))
	}
	seen := make(map[string]bool, len(w.Handlers))
	for _, h := range w.Handlers {
		switch {
		case h == "" || len(h) > workerMaxHandlerName:
			errs = append(errs, fmt.Sprintf("handler name %q must be 1-%d characters", h, workerMaxHandlerName))
		case seen[h]:
			errs = append(errs, fmt.Sprintf("handler %q listed twice", h))
		}
		seen[h] = true
	}
	if w.Capacity <= 0 {
		errs = append(errs, "capacity must be positive")
	}
	for _, id := range w.Running {
		if id <= 0 {
			errs = append(errs, fmt.Sprintf("running run id %d must be positive", id))
			break
		}
	}
	if w.StartedAt.IsZero() {
		errs = append(errs, "started_at is required")
	}
	if w.BeatAt.IsZero() {
		errs = append(errs, "beat_at is required")
	}
	return joinErrs("worker info", errs)
}

// EncodeWorkerInfo validates and marshals w, stamping the version. A nil
// Running is written as [] so that readers always get a list.
func EncodeWorkerInfo(w *WorkerInfo) ([]byte, error) {
	w.V = Version
	if w.Running == nil {
		w.Running = []int64{}
	}
	return encodeValid(w)
}

// DecodeWorkerInfo unmarshals and validates a heartbeat. A reader should
// also check that the key it was stored under is <Group>.<ID>.
func DecodeWorkerInfo(data []byte) (*WorkerInfo, error) {
	return decodeValid[WorkerInfo]("worker info", data)
}
