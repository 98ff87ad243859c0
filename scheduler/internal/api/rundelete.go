package api

import (
	"context"
	"net/http"

	"go.uber.org/zap"

	"github.com/jetjob/jetjob/scheduler/internal/store"
)

// deleteRun deletes a finished run that belongs to no workflow run, with
// its log lines (store.DeleteRun says what else, and what it refuses: 409).
// The lines are purged inside the deleting transaction, before its commit,
// so a failed purge leaves the run, and a repeated call finishes a
// deletion whose commit failed after the purge.
func (s *Server) deleteRun(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	run, err := s.store.DeleteRun(r.Context(), actor(r), id, func(ctx context.Context, run store.Run) error {
		return s.cfg.Logs.Purge(ctx, run.Group, run.ID)
	})
	if err != nil {
		return err
	}
	s.log.Info("run deleted", zap.Int64("run", run.ID), zap.Int64("job", run.JobID),
		zap.String("status", string(run.Status)), zap.String("by", actor(r).Name))
	w.WriteHeader(http.StatusNoContent)
	return nil
}
