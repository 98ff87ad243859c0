// Package mapout answers the workers' requests for the outputs of the
// parts a reduce run reduces (wire.MapOutputsRequest on
// stream.MapOutputsSubject(group); docs/flow-control.md, "Map/reduce").
// Up to wire.MaxMapItems outputs of up to wire.MaxOutputBytes each do not
// fit in one message: a worker asks for them in pages, each at most
// wire.MaxMapOutputsPage bytes, in part index order.
package mapout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/logging"
	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/scheduler/internal/reqreply"
	"github.com/jetjob/jetjob/shared/wire"
)

// answerTimeout bounds one answer; the worker waits a little longer.
const answerTimeout = 5 * time.Second

// maxRowsText bounds the parts one page reads.
const maxRowsText = "1000"

// errRefused is the answer to a request for a run that is not a reduce
// run of the subject's group that has not ended.
var errRefused = errors.New("refused: no reduce run of this group with that id that has not ended")

// fireSQL authorizes a request: run $1 (partitioned by $2) is a reduce
// run of group $3 that has not ended; it returns the fire it reduces.
const fireSQL = `SELECT r.map_reduce FROM job_runs r
	WHERE r.id = $1 AND r.scheduled_at = $2 AND r.group_name = $3 AND r.map_reduce IS NOT NULL
	  AND r.map_reduce <> r.id AND r.status IN ('SCHEDULED', 'TRIGGERED', 'RUNNING')`

// pageSQL reads the outputs of fire $1's parts from index $2 on, in index
// order (the succeeded attempt of each: a succeeded run is never retried),
// as many as fit in $3 bytes of JSON (at least one: an output is at most
// wire.MaxOutputBytes), and the fire's part count.
const pageSQL = `SELECT shard_index, shard_total, output FROM (
		SELECT p.*, sum(octet_length(p.output) + 1) OVER (ORDER BY p.shard_index) AS upto FROM (
			SELECT DISTINCT ON (r.shard_index) r.shard_index, r.shard_total, COALESCE(r.output, 'null') AS output
			FROM job_runs r WHERE r.shard_fire = $1 AND r.shard_total > 0 AND r.status = 'SUCCEEDED' AND r.shard_index >= $2
			ORDER BY r.shard_index LIMIT ` + maxRowsText + `) p) q
	WHERE q.upto <= $3 ORDER BY shard_index`

// Serve answers the requests until ctx ends.
func Serve(ctx context.Context, nc *nats.Conn, pool *pgxpool.Pool, log *zap.Logger) error {
	log = log.Named("mapout")
	return reqreply.Serve(ctx, nc, stream.MapOutputs+".*", func(ctx context.Context, m *nats.Msg) {
		reqreply.Respond(m, answer(ctx, m, pool, log), log)
	})
}

func answer(ctx context.Context, m *nats.Msg, pool *pgxpool.Pool, log *zap.Logger) *wire.MapOutputsReply {
	var req wire.MapOutputsRequest
	if err := wire.DecodeControl(m.Data, &req); err != nil {
		return &wire.MapOutputsReply{Error: err.Error()}
	}
	group, ok := stream.ParseMapOutputs(m.Subject)
	if !ok || !wire.ValidName(group) {
		return &wire.MapOutputsReply{Error: "not a map outputs subject of a group"}
	}
	ctx, cancel := context.WithTimeout(ctx, answerTimeout)
	defer cancel()
	reply, err := Page(ctx, pool, group, req.RunID, req.ScheduledAt, req.From)
	switch {
	case errors.Is(err, errRefused):
		log.Warn("map outputs refused", logging.Run(req.RunID), zap.String("group", group), zap.String("worker", req.WorkerID))
		return &wire.MapOutputsReply{Error: err.Error()}
	case err != nil:
		log.Warn("map outputs look-up failed", logging.Run(req.RunID), zap.String("group", group), zap.Error(err))
		return &wire.MapOutputsReply{Error: "the scheduler could not read the parts' outputs (see its log)"}
	}
	return reply
}

// Page reads the page of outputs from part from on for reduce run id
// (scheduled at at) of group.
func Page(ctx context.Context, pool *pgxpool.Pool, group string, id int64, at time.Time, from int) (*wire.MapOutputsReply, error) {
	var fire int64
	err := pool.QueryRow(ctx, fireSQL, id, at, group).Scan(&fire)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errRefused
	}
	if err != nil {
		return nil, fmt.Errorf("read the fire of reduce run %d: %w", id, err)
	}
	var (
		index, total int
		output       string
		reply        = &wire.MapOutputsReply{}
	)
	rows, _ := pool.Query(ctx, pageSQL, fire, from, wire.MaxMapOutputsPage)
	_, err = pgx.ForEachRow(rows, []any{&index, &total, &output}, func() error {
		if index != from+len(reply.Outputs) {
			return fmt.Errorf("part %d of fire %d has no succeeded run", from+len(reply.Outputs), fire)
		}
		reply.Total = total
		reply.Outputs = append(reply.Outputs, json.RawMessage(output))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the outputs of fire %d from part %d: %w", fire, from, err)
	}
	if len(reply.Outputs) == 0 {
		return nil, fmt.Errorf("fire %d has no succeeded part from %d on", fire, from)
	}
	return reply, nil
}
