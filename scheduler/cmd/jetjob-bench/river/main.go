// Command jetjob-bench-river is the River baseline of jetjob-bench
// (`--scenario river`): the same offered load as jetjob's steady scenario,
// N periodic jobs "@every 1s" with a no-op handler, run by River
// (riverqueue/river) against the same throwaway PostgreSQL, so that the two
// systems are compared in one sitting on one host.
//
// It is its own module so that River and its drivers never enter jetjob's
// go.mod; `make bench-river` builds it into bin/. The orchestrator
// (jetjob-bench) starts PostgreSQL, runs this program as a child, samples
// its CPU and PostgreSQL's over the window and counts the completed jobs
// in river_job; this program reports what only the handler sees: each
// fire's start lag (handler start − the job's scheduled time, the fire
// time River's periodic enqueuer gives it) and which fires ran, twice or
// not at all.
//
// Protocol with the orchestrator: it prints "READY" once River runs, and
// on SIGTERM stops River and writes its JSON report (report below) to
// --out.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/bits"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/robfig/cron/v3"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "jetjob-bench-river: %v\n", err)
		os.Exit(1)
	}
}

// fireArgs is one periodic job's fire: N identifies the job (0 to jobs-1).
type fireArgs struct {
	N int `json:"n"`
}

func (fireArgs) Kind() string { return "bench_noop" }

// report is what the orchestrator reads back (jetjob-bench's river.go).
type report struct {
	// Expected is jobs × the window's seconds; Invoked the fires of the
	// window whose handler ran at least once; Duplicates the handler calls
	// beyond the first for the same (job, fire time).
	Expected   int64 `json:"expected"`
	Invoked    int64 `json:"invoked"`
	Duplicates int64 `json:"duplicates"`
	// StartLagMs holds each first invocation's start lag, in ms.
	StartLagMs []float32 `json:"start_lag_ms"`
	// Outside counts invocations of fires outside the window.
	Outside int64 `json:"outside"`
}

// recorder keeps, per second of the window, a bit per job: set when the
// handler of that fire ran. Bits and a lag slice keep the harness's own
// cost per run small next to River's.
type recorder struct {
	from       time.Time
	secs, jobs int
	bits       []atomic.Uint64 // secs × ceil(jobs/64)
	words      int
	dups       atomic.Int64
	outside    atomic.Int64
	mu         sync.Mutex
	lags       []float32
}

func newRecorder(from time.Time, secs, jobs int) *recorder {
	words := (jobs + 63) / 64
	return &recorder{from: from, secs: secs, jobs: jobs, words: words,
		bits: make([]atomic.Uint64, secs*words), lags: make([]float32, 0, secs*jobs)}
}

func (r *recorder) record(job int, scheduled, started time.Time) {
	sec := int(scheduled.Sub(r.from) / time.Second)
	if scheduled.Before(r.from) || sec >= r.secs || job < 0 || job >= r.jobs {
		r.outside.Add(1)
		return
	}
	w := &r.bits[sec*r.words+job/64]
	bit := uint64(1) << (job % 64)
	if w.Or(bit)&bit != 0 {
		r.dups.Add(1)
		return
	}
	lag := float32(started.Sub(scheduled).Seconds() * 1000)
	r.mu.Lock()
	r.lags = append(r.lags, lag)
	r.mu.Unlock()
}

func (r *recorder) report() report {
	var invoked int64
	for i := range r.bits {
		invoked += int64(bits.OnesCount64(r.bits[i].Load()))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return report{Expected: int64(r.secs) * int64(r.jobs), Invoked: invoked, Duplicates: r.dups.Load(),
		StartLagMs: r.lags, Outside: r.outside.Load()}
}

type noopWorker struct {
	river.WorkerDefaults[fireArgs]
	rec *recorder
}

func (w *noopWorker) Work(_ context.Context, job *river.Job[fireArgs]) error {
	w.rec.record(job.Args.N, job.ScheduledAt, time.Now())
	return nil
}

func run() error {
	dsn := flag.String("dsn", "", "PostgreSQL URL")
	jobs := flag.Int("jobs", 10000, "periodic jobs \"@every 1s\"")
	from := flag.Int64("window-start", 0, "the window's start, Unix ms (a whole second)")
	secs := flag.Int("window-seconds", 60, "the window's length in seconds")
	workers := flag.Int("max-workers", 512, "MaxWorkers of the default queue (jetjob's worker: 512 slots)")
	cooldown := flag.Duration("fetch-cooldown", time.Millisecond, "River's FetchCooldown (its minimum, 1 ms: the lowest latency)")
	out := flag.String("out", "", "report file (JSON)")
	flag.Parse()
	switch {
	case *dsn == "" || *out == "":
		return errors.New("--dsn and --out are required")
	case *jobs < 1 || *secs < 1 || *workers < 1:
		return errors.New("--jobs, --window-seconds and --max-workers: want at least 1")
	case *from <= 0:
		return errors.New("--window-start: want a Unix time in ms")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()

	pool, err := pgxpool.New(ctx, *dsn)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer pool.Close()
	migrator, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		return fmt.Errorf("migrator: %w", err)
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}

	// "@every 1s" as robfig/cron reads it (jetjob's parser too): every
	// whole second, so all N jobs are due at the same instant, as in
	// jetjob's steady scenario.
	every, err := cron.ParseStandard("@every 1s")
	if err != nil {
		return err
	}
	rec := newRecorder(time.UnixMilli(*from), *secs, *jobs)
	ws := river.NewWorkers()
	river.AddWorker(ws, &noopWorker{rec: rec})
	periodic := make([]*river.PeriodicJob, *jobs)
	for i := range periodic {
		n := i
		periodic[i] = river.NewPeriodicJob(every, func() (river.JobArgs, *river.InsertOpts) {
			return fireArgs{N: n}, nil
		}, nil)
	}
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Queues:        map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: *workers}},
		Workers:       ws,
		PeriodicJobs:  periodic,
		FetchCooldown: *cooldown,
		Logger:        slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return fmt.Errorf("river client: %w", err)
	}
	if err := client.Start(ctx); err != nil {
		return fmt.Errorf("river start: %w", err)
	}
	fmt.Println("READY")
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := client.Stop(sctx); err != nil {
		fmt.Fprintf(os.Stderr, "river stop: %v\n", err)
	}
	return writeReport(*out, rec.report())
}

func writeReport(path string, r report) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := json.NewEncoder(io.Writer(f)).Encode(r); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}
