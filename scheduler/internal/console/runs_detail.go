package console

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/shared/wire"
)

// The run page, /runs/{id}: the target of the scheduler's alarm links. It
// shows the run's timeline, its attempt chain and its log so far; while
// the run is active, console.js follows the log live from where the page
// stopped and re-reads the page's summary when the run ends.

const (
	// maxChain bounds how many attempts either side of a run the page
	// looks up: a job retries at most a few times, and a run page must
	// stay a handful of API calls.
	maxChain = 20
	// logPage is how many log lines the page renders; an ended run's
	// further lines are a "More lines" link away, an active run's are
	// streamed by console.js.
	logPage = 1000
)

// runPage is the run page's data.
type runPage struct {
	Run apiv1.Run
	// Job is the run's job; nil when it was deleted (runs outlive jobs).
	Job *apiv1.Job
	// Earlier are the attempts this run retries, oldest first; Later the
	// retries of this run, in order.
	Earlier, Later []apiv1.Run
	Timeline       []step
	Lines          []apiv1.LogLine
	// LogFrom is the cursor the shown lines start at (0: the first);
	// LogNext the cursor after them, where following or "More lines"
	// reads on; LogMore whether an ended run has lines past the page.
	LogFrom, LogNext uint64
	LogMore          bool
	// Active is whether the run can still change (follow, kill).
	Active bool
	// CanOperate shows the kill, re-run and delete buttons (the API
	// decides).
	CanOperate bool
}

// Deletable is whether the page offers Delete: the run ended and is not a
// workflow's node run. A workflow's own run and a node's retry read like
// other runs here; the API refuses them, and the page says why.
func (p *runPage) Deletable() bool {
	return !p.Active && p.Run.TriggerType != string(wire.TriggerWorkflow)
}

// MapRole is the run's place in a map/reduce fire: "root" (it mapped),
// "part", "reduce", or "" for a run of no such fire.
func (p *runPage) MapRole() string {
	switch f := p.Run.MapFire; {
	case f == nil:
		return ""
	case *f == p.Run.ID:
		return "root"
	case p.Run.ShardTotal > 0:
		return "part"
	}
	return "reduce"
}

// step is one moment of a run's timeline and how long after the previous
// recorded moment it came.
type step struct {
	Name string
	At   *time.Time
	// Gap is the time since the previous recorded step ("" for the first
	// or when either is missing); GapLabel says what that gap measures.
	Gap, GapLabel string
}

// FollowURL is the API's live log stream from where the page stopped.
func (p *runPage) FollowURL() string {
	return "/api/v1/runs/" + strconv.FormatInt(p.Run.ID, 10) + "/logs?follow=true&from=" + strconv.FormatUint(p.LogNext, 10)
}

// MoreURL is the run page showing the log lines after these.
func (p *runPage) MoreURL() string {
	return "/runs/" + strconv.FormatInt(p.Run.ID, 10) + "?log_from=" + strconv.FormatUint(p.LogNext, 10) + "#run-log"
}

func (c *Console) runDetail(w http.ResponseWriter, r *http.Request) error {
	return c.renderRun(w, r, http.StatusOK, "")
}

// renderRun renders the run page of the request's {id} with status code
// and an error above it (a refused kill).
func (c *Console) renderRun(w http.ResponseWriter, r *http.Request, code int, pageErr string) error {
	id, err := runID(r)
	if err != nil {
		return err
	}
	from, err := logFrom(r)
	if err != nil {
		return err
	}
	u, err := c.me(r)
	if err != nil {
		return err
	}
	data, err := c.runData(r, id, from)
	if err != nil {
		return err
	}
	data.CanOperate = u.CanOperate(data.Run.Group)
	return c.render(w, r, code, "run", page{Title: c.lang(r, u).T("Run %d", id), User: u, Data: data, Error: pageErr})
}

// logFrom reads the page's log_from: where the shown log starts.
func logFrom(r *http.Request) (uint64, error) {
	v := r.URL.Query().Get("log_from")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(v, 10, 63)
	if err != nil {
		return 0, &APIError{Status: http.StatusBadRequest, Doc: apiv1.Error{Error: "log_from=" + strconv.Quote(v) + ": want a log cursor (a non-negative integer)"}}
	}
	return n, nil
}

// runData reads the run (the API's 404 for a run the caller may not
// read), its job, its attempt chain and its log from cursor from.
func (c *Console) runData(r *http.Request, id int64, from uint64) (*runPage, error) {
	var run apiv1.Run
	if _, err := c.call(r, http.MethodGet, runPath(id), nil, nil, &run); err != nil {
		return nil, err
	}
	data := &runPage{Run: run, Active: active(run.Status), LogFrom: from, Timeline: timeline(run)}
	var err error
	if data.Job, err = c.jobOfRun(r, run.JobID); err != nil {
		return nil, err
	}
	if data.Earlier, err = c.earlierAttempts(r, run); err != nil {
		return nil, err
	}
	if data.Later, err = c.laterAttempts(r, run, data.Job); err != nil {
		return nil, err
	}
	var logs apiv1.RunLogs
	q := url.Values{"from": {strconv.FormatUint(from, 10)}, "limit": {strconv.Itoa(logPage)}}
	if _, err := c.call(r, http.MethodGet, runPath(id)+"/logs", q, nil, &logs); err != nil {
		return nil, err
	}
	data.Lines, data.LogNext = logs.Lines, logs.Next
	data.LogMore = !data.Active && len(logs.Lines) == logPage
	return data, nil
}

func runPath(id int64) string { return "/api/v1/runs/" + strconv.FormatInt(id, 10) }

// earlierAttempts follows retry_of back to the first attempt (at most
// maxChain runs), oldest first. A run gone from the table (past the
// retention) ends the chain.
func (c *Console) earlierAttempts(r *http.Request, run apiv1.Run) ([]apiv1.Run, error) {
	var out []apiv1.Run
	for prev := run.RetryOf; prev != nil && len(out) < maxChain; {
		var p apiv1.Run
		_, err := c.call(r, http.MethodGet, runPath(*prev), nil, nil, &p)
		var ae *APIError
		if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
			break
		}
		if err != nil {
			return nil, err
		}
		out = append([]apiv1.Run{p}, out...)
		prev = p.RetryOf
	}
	return out, nil
}

// laterAttempts finds the retries of run, then theirs, in order. A retry
// is scheduled its backoff after the attempt it retries finished, so each
// step is one search of the job's retry runs in that window (the job's
// longest backoff, with its jitter and some slack): an index-backed page
// however many runs the job has.
func (c *Console) laterAttempts(r *http.Request, run apiv1.Run, job *apiv1.Job) ([]apiv1.Run, error) {
	var out []apiv1.Run
	window := 5 * time.Minute // the API's default retry_max
	if job != nil {
		window = max(window, time.Duration(job.RetryInitial), time.Duration(job.RetryMax))
	}
	window = window*5/4 + time.Minute
	for cur := run; cur.FinishedAt != nil && len(out) < maxChain; {
		q := url.Values{"job": {strconv.FormatInt(run.JobID, 10)}, "trigger_type": {"retry"}, "limit": {"100"},
			"from": {cur.FinishedAt.UTC().Format(time.RFC3339Nano)}, "to": {cur.FinishedAt.Add(window).UTC().Format(time.RFC3339Nano)}}
		var list apiv1.RunList
		if _, err := c.call(r, http.MethodGet, "/api/v1/runs", q, nil, &list); err != nil {
			return nil, err
		}
		found := false
		for _, n := range list.Runs {
			if n.RetryOf != nil && *n.RetryOf == cur.ID {
				out, cur, found = append(out, n), n, true
				break
			}
		}
		if !found {
			break
		}
	}
	return out, nil
}

// timeline is the run's moments in order, each with the gap since the
// one before: fire lag (scheduled → triggered), start lag (triggered →
// started) and run time (started → finished).
func timeline(run apiv1.Run) []step {
	at := run.ScheduledAt
	steps := []step{
		{Name: "Scheduled", At: &at},
		{Name: "Triggered", At: run.TriggeredAt, GapLabel: "fire lag"},
		{Name: "Started", At: run.StartedAt, GapLabel: "start lag"},
		{Name: "Finished", At: run.FinishedAt, GapLabel: "run time"},
	}
	prev := steps[0]
	for i := 1; i < len(steps); i++ {
		if steps[i].At == nil {
			continue
		}
		steps[i].Gap = dur(prev.At, steps[i].At)
		if prev.Name != steps[i-1].Name {
			// A step that never happened (a run cancelled before it
			// started): the gap reaches further back, and says from where.
			steps[i].GapLabel = "since " + strings.ToLower(prev.Name) // a catalogue id: "since scheduled", …
		}
		prev = steps[i]
	}
	return steps
}

// killRun asks the API to kill the run and goes back to its page. A run
// that ended meanwhile (the API's 409) shows its page with the API's
// words rather than an error page.
func (c *Console) killRun(w http.ResponseWriter, r *http.Request) error {
	id, err := runID(r)
	if err != nil {
		return err
	}
	var run apiv1.Run
	_, err = c.call(r, http.MethodPost, runPath(id)+"/kill", nil, nil, &run)
	var ae *APIError
	if errors.As(err, &ae) && ae.Status == http.StatusConflict {
		return c.renderRun(w, r, http.StatusConflict, "Not killed: "+ae.Error())
	}
	if err != nil {
		return err
	}
	n := noticeKillSent
	if !active(run.Status) {
		n = noticeRunCancelled
	}
	redirect(w, r, "/runs/"+strconv.FormatInt(id, 10), n)
	return nil
}

// deleteRun asks the API to delete the run (DELETE /api/v1/runs/{id})
// and goes to the runs page with a notice. A refusal (409: not ended, or
// of a workflow run) shows the run's page with the API's words.
func (c *Console) deleteRun(w http.ResponseWriter, r *http.Request) error {
	id, err := runID(r)
	if err != nil {
		return err
	}
	_, err = c.call(r, http.MethodDelete, runPath(id), nil, nil, nil)
	var ae *APIError
	if errors.As(err, &ae) && ae.Status == http.StatusConflict {
		return c.renderRun(w, r, http.StatusConflict, "Not deleted: "+ae.Error())
	}
	if err != nil {
		return err
	}
	redirect(w, r, "/runs", noticeRunDeleted)
	return nil
}

// rerunRun triggers the run's job again with the run's params and its
// own priority, if any (POST /api/v1/jobs/{job}/trigger), and opens the
// new run.
func (c *Console) rerunRun(w http.ResponseWriter, r *http.Request) error {
	id, err := runID(r)
	if err != nil {
		return err
	}
	var run apiv1.Run
	if _, err := c.call(r, http.MethodGet, runPath(id), nil, nil, &run); err != nil {
		return err
	}
	// A run's params are empty when it used its job's: then so does the
	// new one; the same for its own priority.
	req := apiv1.TriggerRequest{Priority: run.Priority}
	if run.Params != "" {
		req.Params = &run.Params
	}
	var started apiv1.Run
	if _, err := c.call(r, http.MethodPost, "/api/v1/jobs/"+strconv.FormatInt(run.JobID, 10)+"/trigger", nil, req, &started); err != nil {
		return err
	}
	redirect(w, r, "/runs/"+strconv.FormatInt(started.ID, 10), noticeRerun)
	return nil
}
