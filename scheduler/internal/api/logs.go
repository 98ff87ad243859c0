package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/logging"
	"github.com/jetjob/jetjob/internal/runlog"
	"github.com/jetjob/jetjob/scheduler/apiv1"
)

func logDoc(l runlog.Line) apiv1.LogLine {
	return apiv1.LogLine{Cursor: l.Cursor, Seq: l.Seq, At: l.At, Level: l.Level, Msg: l.Msg}
}

// runLogs serves a run's log lines; with follow=true it streams them as
// NDJSON until the run has ended.
func (s *Server) runLogs(w http.ResponseWriter, r *http.Request) error {
	if err := onlyParams(r, "from", "limit", "follow"); err != nil {
		return err
	}
	id, err := pathID(r)
	if err != nil {
		return err
	}
	from, limit, err := pageParams(r, "from", 1000, 10000)
	if err != nil {
		return err
	}
	follow := false
	if v := r.URL.Query().Get("follow"); v != "" {
		if follow, err = strconv.ParseBool(v); err != nil {
			return invalidf("query parameter follow=%q: want true or false", v)
		}
	}
	run, err := s.store.GetRun(r.Context(), id)
	if err != nil {
		return err
	}
	if !follow {
		lines, next, err := s.cfg.Logs.Read(r.Context(), run.Group, id, uint64(from), limit)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, apiv1.RunLogs{Lines: docs(lines, logDoc), Next: next})
		return nil
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	if flusher != nil {
		flusher.Flush()
	}
	enc := json.NewEncoder(w)
	ended := func(ctx context.Context) bool {
		run, err := s.store.GetRun(ctx, id)
		return err != nil || run.Status.Terminal()
	}
	err = s.cfg.Logs.Follow(r.Context(), run.Group, id, uint64(from), ended, func(l runlog.Line) error {
		if err := enc.Encode(logDoc(l)); err != nil {
			return err
		}
		if flusher != nil {
			flusher.Flush()
		}
		return nil
	})
	if err != nil {
		// The status line is sent: all we can do is end the stream.
		s.log.Warn("following run logs ended with an error", logging.Run(id), zap.Error(err))
	}
	return nil
}
