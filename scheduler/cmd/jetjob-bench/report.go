package main

import (
	"bufio"
	"encoding/gob"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

func readSeen(path string) (Seen, error) {
	var s Seen
	f, err := os.Open(path)
	if err != nil {
		return s, err
	}
	defer f.Close()
	err = gob.NewDecoder(bufio.NewReader(f)).Decode(&s)
	return s, err
}

func numCPU() int { return runtime.NumCPU() }

func goVersion() string { return runtime.Version() }

func cpuModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func memTotalMB() int64 {
	b, _ := os.ReadFile("/proc/meminfo")
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "MemTotal:") {
			f := strings.Fields(line)
			if len(f) >= 2 {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				return kb / 1024
			}
		}
	}
	return 0
}

func kernel() string {
	b, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	return strings.TrimSpace(string(b))
}

// judge adds the targets for the scenario.
func judge(r *Result) {
	add := func(name, goal, measured string, met bool) {
		r.Targets = append(r.Targets, Target{Name: name, Goal: goal, Measured: measured, Met: met})
	}
	ms := func(v float64) string { return fmt.Sprintf("%.1f ms", v) }
	// accounted is correct for runs that may shed fires on purpose: a
	// fire must run or be shed by the misfire policy, with a row.
	accounted := func() {
		if c := r.Correctness; c != nil {
			add("fires neither run nor shed", "0", strconv.FormatInt(c.UnaccountedFires, 10), c.UnaccountedFires == 0 && c.ExpectedFires > 0)
			add("fires without a row", "0", strconv.FormatInt(c.UnrecordedFires, 10), c.UnrecordedFires == 0)
			add("duplicate runs", "0", strconv.FormatInt(c.DuplicateRuns, 10), c.DuplicateRuns == 0)
		}
	}
	correct := func() {
		if c := r.Correctness; c != nil {
			add("lost fires", "0", strconv.FormatInt(c.LostFires, 10), c.LostFires == 0 && c.ExpectedFires > 0)
			add("fires without a row", "0", strconv.FormatInt(c.UnrecordedFires, 10), c.UnrecordedFires == 0)
			add("duplicate runs", "0", strconv.FormatInt(c.DuplicateRuns, 10), c.DuplicateRuns == 0)
		}
	}
	switch r.Scenario {
	case "steady":
		if r.Rates != nil {
			add("runs finished/s", "≥ 15000 for 60 s", fmt.Sprintf("%.0f/s succeeded over %.0f s (offered %d/s)",
				r.Rates.RunsSucceeded, r.Window.Seconds, r.Config.Jobs), r.Rates.RunsSucceeded >= 15000 && r.Window.Seconds >= 60)
			add("fire lag p99", "≤ 10 ms", ms(r.FireLagMs.P99), r.FireLagMs.P99 <= 10)
			add("start lag p99", "≤ 50 ms", ms(r.StartLagMs.P99), r.StartLagMs.P99 <= 50)
		}
		correct()
	case "workflow":
		if wf := r.Workflow; wf != nil {
			add("node wait p99", "≤ 100 ms", ms(wf.NodeWaitMs.P99), wf.NodeWaitMs.P99 <= 100 && wf.NodeWaitMs.N > 0)
			add("workflow runs ended SUCCEEDED", strconv.FormatInt(wf.Expected, 10), fmt.Sprint(wf.Runs), wf.ended())
			add("node runs twice", "0", strconv.FormatInt(wf.DuplicateNodeRuns+wf.HandlerDuplicates, 10), wf.DuplicateNodeRuns+wf.HandlerDuplicates == 0)
		}
	case "sparse":
		if r.FireLagMs != nil {
			add("fire lag p99", "≤ 10 ms", ms(r.FireLagMs.P99), r.FireLagMs.P99 <= 10)
		}
		var rss float64
		for _, p := range r.Processes {
			if strings.HasPrefix(p.Role, "scheduler") {
				rss = max(rss, p.PeakRSSMB)
			}
		}
		add("scheduler peak RSS", "≤ 300 MB", fmt.Sprintf("%.0f MB", rss), rss > 0 && rss <= 300)
		correct()
	case "burst":
		if b := r.Burst; b != nil {
			add("all published", "≤ 2 s after the fire time", fmt.Sprintf("%.3f s (%d of %d)", b.AllPublishedSecs, b.Published, b.Jobs),
				b.AllPublishedSecs >= 0 && b.AllPublishedSecs <= 2)
		}
		correct()
	case "dueread":
		for _, d := range r.DueRead {
			if d.Jobs == 1_000_000 {
				add("due read p99 at 1 M jobs", "≤ 20 ms", ms(d.P99Ms), d.P99Ms <= 20)
			}
		}
	case "max":
		add("max sustained fires/s", "≥ 15000 (steady target)", fmt.Sprintf("%.0f/s", r.MaxSustainedPerSec), r.MaxSustainedPerSec >= 15000)
		if c := r.Correctness; c != nil {
			add("duplicate runs", "0", strconv.FormatInt(c.DuplicateRuns, 10), c.DuplicateRuns == 0)
		}
	case "overload":
		if ov := r.Overload; ov != nil && ov.CapacityPerS > 0 {
			add("succeeded under overload", "≥ 90 % of capacity", fmt.Sprintf("%.0f/s = %.1f %% of %.0f/s (offered %.0f/s)",
				ov.SucceededPerS, ov.SucceededPctOfCapacity, ov.CapacityPerS, ov.OfferedPerS), ov.SucceededPctOfCapacity >= 90)
		}
		accounted()
	case "coldstart":
		if cs := r.ColdStart; cs != nil {
			for _, ph := range []struct {
				name string
				p    *Phase
			}{{"A (fresh)", cs.WindowA}, {"B (restarted)", cs.WindowB}} {
				p := ph.p
				if p == nil {
					continue
				}
				add(ph.name+": runs finished/s", "≥ 15000 for 60 s", fmt.Sprintf("%.0f/s succeeded over %.0f s (offered %d/s)",
					p.Rates.RunsSucceeded, p.Window.Seconds, r.Config.Jobs), p.Rates.RunsSucceeded >= 15000 && p.Window.Seconds >= 60)
				add(ph.name+": fire lag p99", "≤ 10 ms", ms(p.FireLagMs.P99), p.FireLagMs.P99 <= 10)
				add(ph.name+": start lag p99", "≤ 50 ms", ms(p.StartLagMs.P99), p.StartLagMs.P99 <= 50)
				if c := p.Correctness; c != nil {
					add(ph.name+": lost fires", "0", strconv.FormatInt(c.LostFires, 10), c.LostFires == 0 && c.ExpectedFires > 0)
				}
			}
			rs := cs.Restart
			add("recovery after the restart", fmt.Sprintf("start lag p99 back ≤ %.0f ms", rs.RecoveryLagMs),
				fmt.Sprintf("%.1f s after the first SIGTERM", rs.RecoverySeconds), rs.RecoverySeconds >= 0)
		}
		accounted()
	}
}

// countLogProblems counts warn/error lines in the children's logs.
func countLogProblems(dir string) (map[string]int, []string) {
	out := map[string]int{}
	var files []string
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		files = append(files, p)
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		n := 0
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, `"level":"warn"`) || strings.Contains(line, `"level":"error"`) ||
				strings.Contains(line, "panic") {
				n++
			}
		}
		if n > 0 {
			out[e.Name()] = n
		}
	}
	return out, files
}

func writeJSON(dir string, r *Result) (string, error) {
	name := filepath.Join(dir, fmt.Sprintf("%s-%s.json", r.Scenario, r.StartedAt.Local().Format("20060102-150405")))
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", err
	}
	return name, os.WriteFile(name, append(b, '\n'), 0o644)
}

// printTable writes the human summary.
func printTable(w io.Writer, r *Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	c := r.Config
	fmt.Fprintf(w, "\n== %s ==  %s\n", r.Scenario, strings.Join(r.Command, " "))
	if r.Source.Revision != "" {
		fmt.Fprintf(w, "source: %.12s (uncommitted changes: %v)\n", r.Source.Revision, r.Source.Modified)
	}
	fmt.Fprintf(w, "machine: %d × %s, %d MB, Go %s, PostgreSQL %s, nats-server %s; one core hashes 64 MiB in %.1f ms (compare runs only at the same speed)\n",
		r.Machine.NProc, r.Machine.CPUModel, r.Machine.MemTotalMB, r.Machine.GoVersion, r.Machine.PostgresVersion,
		r.Machine.NATSServerVersion, r.Machine.CalibrationMs)
	if r.Scenario != "dueread" && r.Scenario != "publish" {
		phases := ""
		if c.Phases != "" {
			phases = ", phases " + c.Phases
		}
		route := ""
		if c.Route != "" && c.Route != "any" {
			route = ", route " + c.Route
		}
		fmt.Fprintf(w, "jobs %d (%s %s%s, block %s%s, misfire %s), shards %d, schedulers %d, workers %d × %d, handler %s",
			c.Jobs, c.ScheduleType, c.ScheduleExpr, phases, c.BlockStrategy, route, c.MisfirePolicy, c.Shards, c.Schedulers, c.Workers,
			c.WorkerConcurrency, c.Handler)
		if r.Window != nil && r.Scenario != "coldstart" {
			fmt.Fprintf(w, ", window %.1f s after %.0f s warm-up", r.Window.Seconds, c.WarmupSeconds)
		}
		fmt.Fprintln(w)
		if c.Flow != nil {
			fmt.Fprintf(w, "flow controls: %s\n", c.Flow)
		}
	}
	lagTitle := "lag (ms)"
	if r.Scenario == "overload" {
		lagTitle = "lag of the runs that ran (ms)"
	}
	printFigures(w, r.Rates, lagTitle, r.FireLagMs, r.StartLagMs, r.EndToEndMs, r.FireSpreadMs)
	if b := r.Burst; b != nil {
		fmt.Fprintf(w, "burst of %d at %s: all published after %.3f s (%d published), all started after %.3f s, all finished after %.3f s\n",
			b.Jobs, b.FireAt.Format("15:04:05"), b.AllPublishedSecs, b.Published, b.AllStartedSecs, b.AllFinishedSecs)
		fmt.Fprintf(w, "backlog at its peak: %d pending triggers, the oldest waiting %.1f s\n", b.PeakPending, b.PeakOldestPendingSecs)
	}
	if cs := r.ColdStart; cs != nil {
		printColdStart(w, cs, c.WarmupSeconds)
	}
	if k := r.Correctness; k != nil && r.Scenario == "max" {
		fmt.Fprintf(w, "DUPLICATES %d over the whole run, handler invocations %d (lost fires: per step below)\n", k.DuplicateRuns, k.HandlerInvocations)
		for _, x := range k.DuplicateExamples {
			fmt.Fprintf(w, "  duplicate: %s\n", x)
		}
	} else if k != nil {
		if r.Scenario == "coldstart" {
			fmt.Fprintln(w, "-- the whole run, from the first fire to the end of window B --")
		}
		printCorrect(w, k)
	}
	if wf := r.Workflow; wf != nil {
		fmt.Fprintf(w, "workflows %d × %d nodes: %.0f node runs/s succeeded; node wait (ready → started) p50 %.1f / p99 %.1f / max %.1f ms over %d node runs; workflow run (fire → end) p50 %.0f / p99 %.0f / max %.0f ms\n",
			wf.Workflows, wf.NodesPerRun, wf.NodeRunsPerS, wf.NodeWaitMs.P50, wf.NodeWaitMs.P99, wf.NodeWaitMs.Max, wf.NodeWaitMs.N,
			wf.RunDurationMs.P50, wf.RunDurationMs.P99, wf.RunDurationMs.Max)
		fmt.Fprintf(w, "workflow runs of the window: %d expected, by status %v; node keys with two runs %d, node runs a handler ran twice %d\n",
			wf.Expected, wf.Runs, wf.DuplicateNodeRuns, wf.HandlerDuplicates)
		for _, x := range wf.DuplicateExamples {
			fmt.Fprintf(w, "  duplicate: %s\n", x)
		}
	}
	if ov := r.Overload; ov != nil {
		share := "no --capacity given"
		if ov.CapacityPerS > 0 {
			share = fmt.Sprintf("%.1f %% of the capacity %.0f/s", ov.SucceededPctOfCapacity, ov.CapacityPerS)
		}
		fmt.Fprintf(w, "overload: offered %.0f fires/s, succeeded %.0f runs/s (%s); of the window's %d fires %d succeeded (%.1f %%), %d shed (%.1f %%, %.0f/s), %d misfire catch-ups ran\n",
			ov.OfferedPerS, ov.SucceededPerS, share, ov.Fires, ov.Succeeded, ov.SucceededPctOfOffered, ov.Shed, ov.ShedPct, ov.ShedPerS, ov.CatchUps)
		fmt.Fprintf(w, "  other statuses %v, without a row (lost) %d, neither run nor shed %d, duplicates %d\n",
			ov.OtherStatuses, ov.WithoutRow, ov.Unaccounted, ov.Duplicates)
		for _, k := range ov.ShedByMessage {
			fmt.Fprintf(w, "  shed %8d %-8s %s\n", k.Runs, k.Status, k.Message)
		}
	}
	if len(r.Steps) > 0 {
		fmt.Fprintf(tw, "step jobs\tsucceeded/s\tfire p99\tstart p99\tstart max\tlost\tunfinished\tsustained\t\n")
		for _, s := range r.Steps {
			fmt.Fprintf(tw, "%d\t%.0f\t%.1f\t%.1f\t%.1f\t%d\t%d\t%v\t\n", s.Jobs, s.Rates.RunsSucceeded, s.FireLagMs.P99,
				s.StartLagMs.P99, s.StartLagMs.Max, s.Lost, s.Unfinished, s.Sustained)
		}
		tw.Flush()
		for _, s := range r.Steps {
			fmt.Fprintf(w, "  %d jobs: %s\n", s.Jobs, strings.Join(s.CPUPctByRole, ", "))
		}
		fmt.Fprintf(w, "max sustained: %.0f fires/s\n", r.MaxSustainedPerSec)
	}
	if len(r.Publish) > 0 {
		fmt.Fprintf(tw, "burst msgs\tbursts\thanded p50 ms\tlast ack p50 ms\tlast ack max ms\tmsgs/s\t\n")
		for _, p := range r.Publish {
			fmt.Fprintf(tw, "%d\t%d\t%.1f\t%.1f\t%.1f\t%.0f\t\n", p.Messages, p.Bursts, p.HandedP50Ms, p.LastAckP50Ms, p.LastAckMaxMs, p.MsgsPerSec)
		}
		tw.Flush()
	}
	if len(r.DueRead) > 0 {
		fmt.Fprintf(tw, "due read jobs\tdue/shard\treads\tp50 ms\tp99 ms\tmax ms\tserver ms\tinsert s\t\n")
		for _, d := range r.DueRead {
			fmt.Fprintf(tw, "%d\t%.0f\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t%.1f\t\n", d.Jobs, d.DuePerShard, d.Reads, d.P50Ms, d.P99Ms, d.MaxMs, d.ServerMs, d.InsertSecs)
		}
		tw.Flush()
		if last := r.DueRead[len(r.DueRead)-1]; len(last.Plan) > 0 {
			fmt.Fprintf(w, "plan at %d jobs:\n", last.Jobs)
			for _, l := range last.Plan {
				fmt.Fprintf(w, "  %s\n", l)
			}
		}
	}
	printProcs(w, r.Processes, r.HostCPU, r.CPUPerRun)
	printPerRun(w, r.PerRun)
	if len(r.TopSQL) > 0 {
		fmt.Fprintln(w, "top SQL in the window (pg_stat_statements):")
		for _, s := range r.TopSQL {
			q := s.Query
			if len(q) > 110 {
				q = q[:110] + "…"
			}
			fmt.Fprintf(w, "  %5.1f%% %9.0f ms %7d calls %8.2f ms/call %8.0f ms planning  %s\n", s.SharePct, s.TotalMs, s.Calls, s.MeanMs, s.PlanMs, q)
		}
	}
	for _, t := range r.Targets {
		mark := "MISSED"
		if t.Met {
			mark = "met"
		}
		fmt.Fprintf(w, "target %-30s %-28s measured %-40s %s\n", t.Name, t.Goal, t.Measured, mark)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	if len(r.ChildLogProblemRows) > 0 {
		fmt.Fprintf(w, "warnings/errors in child logs: %v\n", r.ChildLogProblemRows)
	}
}

// printFigures writes a window's rates, lags and per-fire-time spread
// (each only when measured).
func printFigures(w io.Writer, x *Rates, lagTitle string, fire, start, e2e *Latency, sp *Spread) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	if x != nil {
		fmt.Fprintf(tw, "per second\tplanned\tdue\tpublished\tfinished\tsucceeded\t\n")
		fmt.Fprintf(tw, "\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t\n", x.FiresPlanned, x.FiresDue, x.TriggersPublished, x.RunsFinished, x.RunsSucceeded)
		tw.Flush()
	}
	if fire != nil || start != nil {
		fmt.Fprintf(tw, "%s\tp50\tp99\tmax\tn\tmissing\t\n", lagTitle)
		for _, l := range []struct {
			name string
			l    *Latency
		}{{"fire", fire}, {"start", start}, {"end-to-end", e2e}} {
			if l.l == nil { // the River baseline has start lags only
				continue
			}
			fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.1f\t%d\t%d\t\n", l.name, l.l.P50, l.l.P99, l.l.Max, l.l.N, l.l.Missing)
		}
		tw.Flush()
	}
	if sp != nil && sp.FireTimes > 0 {
		fmt.Fprintf(w, "per fire time (%d): first trigger published after p50 %.1f / p99 %.1f ms, last after p50 %.1f / p99 %.1f ms\n",
			sp.FireTimes, sp.FirstP50, sp.FirstP99, sp.LastP50, sp.LastP99)
	}
}

// printCorrect writes the loss and duplication audit.
func printCorrect(w io.Writer, k *Correct) {
	var st []string
	for s, n := range k.StatusCounts {
		st = append(st, fmt.Sprintf("%s=%d", s, n))
	}
	sort.Strings(st)
	fmt.Fprintf(w, "expected fires %d, reached a handler %d, LOST %d (shed by misfire policy %d, without a row %d, neither run nor shed %d), DUPLICATES %d, unfinished %d, statuses %s, handler invocations %d\n",
		k.ExpectedFires, k.InvokedFires, k.LostFires, k.ShedFires, k.UnrecordedFires, k.UnaccountedFires, k.DuplicateRuns,
		k.UnfinishedRuns, strings.Join(st, " "), k.HandlerInvocations)
	// The examples are fires that reached no handler: when the misfire
	// policy shed all of those, they are no news.
	if k.UnaccountedFires > 0 || k.ShedFires == 0 {
		for _, x := range k.LostExamples {
			fmt.Fprintf(w, "  lost: %s\n", x)
		}
	}
	for _, x := range k.DuplicateExamples {
		fmt.Fprintf(w, "  duplicate: %s\n", x)
	}
}

// printProcs writes the processes' CPU and memory, the host's CPU and the
// CPU per run, in all and by kind of process (the line to compare
// --schedulers 2 --workers 2 with 1 + 1 by).
func printProcs(w io.Writer, ps []ProcStat, h *HostCPU, cpr *CPUPerRun) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	if len(ps) > 0 {
		fmt.Fprintf(tw, "process\tcpu s (window)\tcpu %%\tcpu s (total)\tpeak RSS MB\t\n")
		for _, p := range ps {
			fmt.Fprintf(tw, "%s\t%.1f\t%.0f\t%.1f\t%.0f\t\n", p.Role, p.CPUWindow, p.CPUPctWindow, p.CPUTotal, p.PeakRSSMB)
		}
		tw.Flush()
	}
	if cpr != nil {
		var kinds []string
		for _, k := range cpr.ByKind {
			name := k.Kind
			if k.Processes > 1 {
				name = fmt.Sprintf("%d %s", k.Processes, k.Kind)
			}
			kinds = append(kinds, fmt.Sprintf("%s %.3f", name, k.Ms))
		}
		fmt.Fprintf(w, "CPU per run: %.3f ms (%.1f cpu-s of all benchmark processes / %d runs succeeded in the window); by kind, ms: %s\n",
			cpr.Ms, cpr.CPUSeconds, cpr.Runs, strings.Join(kinds, ", "))
	}
	if h != nil {
		fmt.Fprintf(w, "host: %.0f%% of all cores busy over the window; benchmark processes %.1f cpu-s, other processes on the host %.1f cpu-s; load %s\n",
			h.BusyPct, h.BenchmarkCPU, h.OtherCPU, h.LoadAvg)
	}
}

// printColdStart writes coldstart's two windows and its restart.
func printColdStart(w io.Writer, cs *ColdStart, warmup float64) {
	fmt.Fprintf(w, "job_runs before the first fire: %d rows; tables at the first fire: %s\n", cs.JobRunsAtStart, tablesLine(cs.TablesAtFirstFire))
	for _, ph := range []struct {
		title string
		p     *Phase
	}{{fmt.Sprintf("window A, fresh database (after %.0f s warm-up)", warmup), cs.WindowA}, {"window B, after the restart", cs.WindowB}} {
		p := ph.p
		if p == nil {
			continue
		}
		fmt.Fprintf(w, "-- %s: %s..%s, %.1f s --\n", ph.title, p.Window.Start.Local().Format("15:04:05"),
			p.Window.End.Local().Format("15:04:05"), p.Window.Seconds)
		printFigures(w, &p.Rates, "lag (ms)", &p.FireLagMs, &p.StartLagMs, &p.EndToEndMs, p.FireSpreadMs)
		if p.Correctness != nil {
			printCorrect(w, p.Correctness)
		}
		printProcs(w, p.Processes, p.HostCPU, p.CPUPerRun)
		printPerRun(w, p.PerRun)
		if p == cs.WindowA {
			fmt.Fprintf(w, "tables at window A's end: %s\n", tablesLine(cs.TablesAtWindowAEnd))
		}
	}
	rs := cs.Restart
	recovered := "never, up to the end of window B"
	if rs.RecoveredAt != nil {
		recovered = fmt.Sprintf("from the fires of %s on: %.1f s after the first SIGTERM, %.1f s after everything was up",
			rs.RecoveredAt.Local().Format("15:04:05"), rs.RecoverySeconds, rs.RecoveryAfterReadySeconds)
	}
	fmt.Fprintf(w, "restart at %s (PostgreSQL too: %v): stopped in %.1f s, up again and holding every shard %.1f s later; start lag p99 ≤ %.0f ms %s\n",
		rs.StoppedAt.Local().Format("15:04:05"), rs.PostgresRestarted, rs.StopSeconds, rs.StartSeconds, rs.RecoveryLagMs, recovered)
	if len(rs.Seconds) > 0 {
		var secs []string
		for _, s := range rs.Seconds {
			secs = append(secs, fmt.Sprintf("%s %d/%d shed %d p99 %.0f", s.At.Local().Format("05"), s.Started, s.Fires, s.Shed, s.StartP99Ms))
		}
		fmt.Fprintf(w, "  per fire time (second: started/expected, shed, start lag p99 ms): %s\n", strings.Join(secs, "; "))
	}
}

// tablesLine is a short form of table statistics: jobs, and job_runs
// with its partitions summed.
func tablesLine(ts []TableStat) string {
	var out []string
	var runs TableStat
	parts, never := 0, 0
	for _, t := range ts {
		if !strings.HasPrefix(t.Table, "job_runs") {
			out = append(out, fmt.Sprintf("%s %d rows (%s, analysed %d×, vacuumed %d×)", t.Table, t.LiveRows,
				analysed(t.RelTuples), t.Analyzed, t.Vacuumed))
			continue
		}
		if t.Table != "job_runs" {
			parts++
		}
		if t.RelTuples < 0 {
			never++
		}
		runs.LiveRows += t.LiveRows
		runs.Analyzed += t.Analyzed
		runs.Vacuumed += t.Vacuumed
	}
	if parts > 0 || never > 0 {
		out = append(out, fmt.Sprintf("job_runs and its %d partitions %d rows (%d of %d never analysed, analysed %d×, vacuumed %d×)",
			parts, runs.LiveRows, never, parts+1, runs.Analyzed, runs.Vacuumed))
	}
	return strings.Join(out, "; ")
}

func analysed(reltuples float64) string {
	if reltuples < 0 {
		return "never analysed"
	}
	return fmt.Sprintf("reltuples %.0f", reltuples)
}
