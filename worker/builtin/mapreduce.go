//go:build unix

package builtin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/jetjob/jetjob/worker"
)

// Map/reduce for commands (Shell, Script; docs/worker.md, "Map/reduce"
// and "Drop-in worker"). A command is not linked with the SDK, so its
// share of a fire travels through files and variables:
//
//   - a root run (not a part, not a reduce run, not sharded, not a
//     workflow node) gets JETJOB_MAP, an empty file; a JSON array written
//     there is mapped (worker.Job.Map) once the command exits 0;
//   - a part gets its item's JSON text as JETJOB_ITEM (and its place as
//     JETJOB_SHARD_INDEX of JETJOB_SHARD_TOTAL);
//   - a reduce run (a handler registered with ShellReduce or ScriptReduce)
//     gets JETJOB_OUTPUTS, a file holding the parts' outputs as one JSON
//     array, in part index order.
//
// Every run keeps JETJOB_OUTPUT for its own output.

// mapIO is the map/reduce part of one command's run: the variables it
// adds to the environment, and the map file to read after a success.
type mapIO struct {
	env     []string
	mapPath string // "" when the run may not map
}

// prepareMapIO writes what the run of job needs in dir: the outputs file
// of a reduce run (reduce true), the empty map file of a root run.
func prepareMapIO(job *worker.Job, dir string, reduce bool, outputs []json.RawMessage) (mapIO, error) {
	switch {
	case reduce:
		b, err := json.Marshal(outputs)
		if err != nil {
			return mapIO{}, fmt.Errorf("JETJOB_OUTPUTS: %w", err)
		}
		p := filepath.Join(dir, "outputs.json")
		if err := os.WriteFile(p, b, 0o600); err != nil {
			return mapIO{}, fmt.Errorf("JETJOB_OUTPUTS: %w", err)
		}
		return mapIO{env: []string{"JETJOB_OUTPUTS=" + p}}, nil
	case job.IsMapPart():
		var item json.RawMessage
		if err := job.Item(&item); err != nil {
			return mapIO{}, fmt.Errorf("JETJOB_ITEM: %w", err)
		}
		return mapIO{env: []string{"JETJOB_ITEM=" + string(item)}}, nil
	case mayMap(job):
		p := filepath.Join(dir, "map.json")
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			return mapIO{}, fmt.Errorf("JETJOB_MAP: %w", err)
		}
		return mapIO{env: []string{"JETJOB_MAP=" + p}, mapPath: p}, nil
	}
	return mapIO{}, nil
}

// mayMap reports whether the run of job may map: a root run, neither part
// nor reduce of a fire, nor sharded, nor a workflow node (whose map the
// scheduler would drop).
func mayMap(job *worker.Job) bool {
	return job.MapFire() == 0 && job.ShardTotal <= 1 &&
		job.TriggerType != worker.TriggerWorkflow && job.TriggerType != worker.TriggerMap && job.TriggerType != worker.TriggerReduce
}

// mapFrom maps what the command wrote to its JETJOB_MAP file, if
// anything: one JSON array of 1 to worker.MaxMapItems items, at most
// worker.MaxMapBytes. Anything else fails the run, naming why: a map that
// silently did nothing would look like a fire without work.
func (m mapIO) mapFrom(job *worker.Job) error {
	if m.mapPath == "" {
		return nil
	}
	f, err := os.Open(m.mapPath)
	if err != nil {
		return fmt.Errorf("JETJOB_MAP: %w", err)
	}
	defer func() { _ = f.Close() }()
	b, err := io.ReadAll(io.LimitReader(f, worker.MaxMapBytes+1))
	if err != nil {
		return fmt.Errorf("JETJOB_MAP: %w", err)
	}
	b = bytes.TrimSpace(b)
	switch {
	case len(b) == 0:
		return nil
	case len(b) > worker.MaxMapBytes:
		return fmt.Errorf("JETJOB_MAP: more than %d bytes", worker.MaxMapBytes)
	case !json.Valid(b) || b[0] != '[':
		return fmt.Errorf("JETJOB_MAP: the file does not hold one JSON array")
	}
	if err := job.Map(json.RawMessage(b)); err != nil {
		return fmt.Errorf("JETJOB_MAP: %w", err)
	}
	return nil
}
