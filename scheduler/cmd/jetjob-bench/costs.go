package main

// What a run costs in counts, which do not depend on how busy the host
// is (CPU does): the NATS servers' messages and bytes, PostgreSQL's WAL,
// transactions and rows, and with --profile its statements and the index
// entries its WAL records. docs/capacity.md sizes deployments from them.

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"
)

// costSnap is the counters at one end of a window.
type costSnap struct {
	nats   NATSTraffic
	natsOK bool
	seqs   map[string]uint64 // each stream's last sequence
	pg     pgCounters
	pgOK   bool
}

// pgCounters are PostgreSQL's cumulative counters: the WAL position
// (pg_current_wal_lsn), its records and full-page images (pg_stat_wal,
// the whole server), and the benchmark database's transactions and rows
// (pg_stat_database).
type pgCounters struct {
	lsn                          string
	walBytes                     int64 // the LSN as a byte position
	walRecords, walFPI           int64
	xacts                        int64
	inserted, updated, deleted   int64
	returned, fetched, hotUpdate int64
	connections                  int64
	runsBytes                    int64 // job_runs' partitions with their indexes
}

const pgCountersSQL = `SELECT pg_current_wal_lsn()::text, pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint,
		w.wal_records, w.wal_fpi, d.xact_commit + d.xact_rollback, d.tup_inserted, d.tup_updated, d.tup_deleted,
		d.tup_returned, d.tup_fetched,
		(SELECT coalesce(sum(n_tup_hot_upd), 0)::bigint FROM pg_stat_user_tables),
		(SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend'),
		(SELECT coalesce(sum(pg_total_relation_size(i.inhrelid)), 0)::bigint FROM pg_inherits i
			WHERE i.inhparent = 'job_runs'::regclass)
	FROM pg_stat_wal w, pg_stat_database d WHERE d.datname = current_database()`

// costs snapshots the counters (each part noted and left out when it
// cannot be read).
func (e *env) costs(ctx context.Context) *costSnap {
	s := &costSnap{}
	s.nats, s.natsOK = e.natsTraffic(ctx)
	s.seqs = e.streamSeqs(ctx)
	if e.pool == nil {
		return s
	}
	// Statistics reach the shared counters when a backend's transaction
	// ends or within a second of it: ask for the current picture.
	_, _ = e.pool.Exec(ctx, `SELECT pg_stat_clear_snapshot()`)
	c := &s.pg
	err := e.pool.QueryRow(ctx, pgCountersSQL).Scan(&c.lsn, &c.walBytes, &c.walRecords, &c.walFPI, &c.xacts,
		&c.inserted, &c.updated, &c.deleted, &c.returned, &c.fetched, &c.hotUpdate, &c.connections, &c.runsBytes)
	if err != nil {
		e.note("postgres counters: %v", err)
		return s
	}
	s.pgOK = true
	return s
}

// PerRun is a window's counts divided by the runs that succeeded in it.
type PerRun struct {
	Runs     int64        `json:"runs"`
	NATS     *NATSPerRun  `json:"nats,omitempty"`
	Postgres *PGPerRun    `json:"postgres,omitempty"`
	Window   *WindowCount `json:"window_totals,omitempty"`
}

// NATSPerRun is the servers' traffic per run, summed over the nodes. In
// and out count every connection, clients and routes; client_* only the
// clients' (schedulers, workers), so in - client_in is what the nodes
// sent each other (replication, forwarded messages): 0 on one server.
type NATSPerRun struct {
	Servers        int     `json:"servers"`
	Replicas       int     `json:"stream_replicas"`
	InMsgs         float64 `json:"in_msgs"`
	OutMsgs        float64 `json:"out_msgs"`
	InBytes        float64 `json:"in_bytes"`
	OutBytes       float64 `json:"out_bytes"`
	ClientInMsgs   float64 `json:"client_in_msgs"`
	ClientOutMsgs  float64 `json:"client_out_msgs"`
	ClientInBytes  float64 `json:"client_in_bytes"`
	ClientOutBytes float64 `json:"client_out_bytes"`
	RouteInMsgs    float64 `json:"route_in_msgs"`
	RouteInBytes   float64 `json:"route_in_bytes"`
	// StreamMsgs is the messages each stream stored per run (its last
	// sequence's advance), by stream name.
	StreamMsgs map[string]float64 `json:"stream_msgs,omitempty"`
}

// PGPerRun is PostgreSQL's work per run. Statements, statement rows,
// index entries and wal_by_record need --profile (pg_stat_statements,
// pg_walinspect); they are omitted without it.
type PGPerRun struct {
	WALBytes       float64 `json:"wal_bytes"`
	WALRecords     float64 `json:"wal_records"`
	WALFPI         float64 `json:"wal_fpi"`
	Transactions   float64 `json:"transactions"`
	RowsInserted   float64 `json:"rows_inserted"`
	RowsUpdated    float64 `json:"rows_updated"`
	RowsHOTUpdated float64 `json:"rows_hot_updated"`
	RowsDeleted    float64 `json:"rows_deleted"`
	RowsReturned   float64 `json:"rows_returned"`
	RowsFetched    float64 `json:"rows_fetched"`
	// RunsTableBytes is job_runs' growth on disk per run: its partitions,
	// their indexes and TOAST (dead row versions not yet vacuumed too).
	RunsTableBytes float64     `json:"job_runs_bytes"`
	Statements     float64     `json:"statements,omitempty"`
	StatementRows  float64     `json:"statement_rows,omitempty"`
	BlocksDirtied  float64     `json:"blocks_dirtied,omitempty"`
	IndexEntries   float64     `json:"index_entries,omitempty"`
	WALByRecord    []WALRecord `json:"wal_by_record,omitempty"`
	// Connections is not per run: the client connections to the
	// benchmark database at the window's end (every pool's, the
	// orchestrator's too).
	Connections int64 `json:"connections"`
}

// WALRecord is one kind of WAL record per run (pg_walinspect).
type WALRecord struct {
	Type  string  `json:"type"`
	Count float64 `json:"count"`
	Bytes float64 `json:"bytes"`
}

// WindowCount is the raw window totals behind the per-run figures.
type WindowCount struct {
	NATS         NATSTraffic `json:"nats"`
	WALBytes     int64       `json:"wal_bytes"`
	StartLSN     string      `json:"start_lsn,omitempty"`
	EndLSN       string      `json:"end_lsn,omitempty"`
	Statements   int64       `json:"statements,omitempty"`
	IndexEntries int64       `json:"index_entries,omitempty"`
}

// indexEntryRecords are the B-tree WAL records that add a leaf entry: a
// plain insert, an insert into a posting list, and a page split (which
// carries the new entry).
var indexEntryRecords = []string{"Btree/INSERT_LEAF", "Btree/INSERT_POST", "Btree/SPLIT_L", "Btree/SPLIT_R"}

// perRun divides the window's counts by runs; with --profile it reads the
// statements (pg_stat_statements, reset at the window's start) and the
// WAL's records between the two positions (pg_walinspect).
func (e *env) perRun(ctx context.Context, a, b *costSnap, runs int64) *PerRun {
	if a == nil || b == nil || runs <= 0 {
		return nil
	}
	per := func(n int64) float64 { return round3(float64(n) / float64(runs)) }
	out := &PerRun{Runs: runs, Window: &WindowCount{}}
	if a.natsOK && b.natsOK {
		out.Window.NATS = b.nats.plus(a.nats, -1)
		out.NATS = natsPerRun(out.Window.NATS, runs, e.o.natsCluster, e.o.replicas)
		out.NATS.StreamMsgs = streamsPerRun(a.seqs, b.seqs, runs)
	}
	if !a.pgOK || !b.pgOK {
		return out
	}
	x, y := a.pg, b.pg
	out.Window.WALBytes, out.Window.StartLSN, out.Window.EndLSN = y.walBytes-x.walBytes, x.lsn, y.lsn
	p := &PGPerRun{WALBytes: per(y.walBytes - x.walBytes), WALRecords: per(y.walRecords - x.walRecords),
		WALFPI: per(y.walFPI - x.walFPI), Transactions: per(y.xacts - x.xacts),
		RowsInserted: per(y.inserted - x.inserted), RowsUpdated: per(y.updated - x.updated),
		RowsHOTUpdated: per(y.hotUpdate - x.hotUpdate), RowsDeleted: per(y.deleted - x.deleted),
		RowsReturned: per(y.returned - x.returned), RowsFetched: per(y.fetched - x.fetched), RunsTableBytes: per(y.runsBytes - x.runsBytes),
		Connections: y.connections}
	out.Postgres = p
	if !e.o.profile {
		return out
	}
	var calls, rows, dirtied int64
	if err := e.pool.QueryRow(ctx, `SELECT coalesce(sum(calls), 0)::bigint, coalesce(sum(rows), 0)::bigint,
		coalesce(sum(shared_blks_dirtied), 0)::bigint FROM pg_stat_statements`).Scan(&calls, &rows, &dirtied); err != nil {
		e.note("statements: %v", err)
	} else {
		out.Window.Statements, p.Statements, p.StatementRows, p.BlocksDirtied = calls, per(calls), per(rows), per(dirtied)
	}
	recs, err := walStats(ctx, e, x.lsn, y.lsn)
	if err != nil {
		e.note("pg_walinspect: %v", err)
		return out
	}
	var entries int64
	for _, r := range recs {
		for _, t := range indexEntryRecords {
			if r.typ == t {
				entries += r.count
			}
		}
		p.WALByRecord = append(p.WALByRecord, WALRecord{Type: r.typ, Count: per(r.count), Bytes: per(r.bytes)})
	}
	out.Window.IndexEntries, p.IndexEntries = entries, per(entries)
	return out
}

// natsPerRun divides a window's traffic d by runs.
func natsPerRun(d NATSTraffic, runs int64, servers, replicas int) *NATSPerRun {
	per := func(n int64) float64 { return round3(float64(n) / float64(runs)) }
	return &NATSPerRun{Servers: servers, Replicas: replicas,
		InMsgs: per(d.InMsgs), OutMsgs: per(d.OutMsgs), InBytes: per(d.InBytes), OutBytes: per(d.OutBytes),
		ClientInMsgs: per(d.InClientMsgs), ClientOutMsgs: per(d.OutClientMsgs),
		ClientInBytes: per(d.InClientBytes), ClientOutBytes: per(d.OutClientBytes),
		RouteInMsgs: per(d.InMsgs - d.InClientMsgs), RouteInBytes: per(d.InBytes - d.InClientBytes)}
}

// streamsPerRun is each stream's stored messages per run, the streams that
// stored any.
func streamsPerRun(a, b map[string]uint64, runs int64) map[string]float64 {
	if a == nil || b == nil {
		return nil
	}
	out := map[string]float64{}
	for name, seq := range b {
		if d := seq - a[name]; seq > a[name] {
			out[name] = round3(float64(d) / float64(runs))
		}
	}
	return out
}

type walStat struct {
	typ          string
	count, bytes int64
}

// walStats reads the WAL's records between two positions by type, the
// largest first (pg_walinspect; the WAL is kept for it, see
// enableStatStatements).
func walStats(ctx context.Context, e *env, from, to string) ([]walStat, error) {
	rows, _ := e.pool.Query(ctx, `SELECT "resource_manager/record_type", count, combined_size
		FROM pg_get_wal_stats($1::pg_lsn, $2::pg_lsn, true) WHERE count > 0`, from, to)
	var out []walStat
	var s walStat
	_, err := pgx.ForEachRow(rows, []any{&s.typ, &s.count, &s.bytes}, func() error {
		out = append(out, s)
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].bytes > out[j].bytes })
	return out, err
}

// printPerRun writes the counts per run and, with --profile, the WAL's
// largest kinds of record.
func printPerRun(w io.Writer, p *PerRun) {
	if p == nil {
		return
	}
	fmt.Fprintf(w, "per run (%d runs succeeded in the window): %s\n", p.Runs, p.summary())
	if g := p.Postgres; g != nil && len(g.WALByRecord) > 0 {
		var top []string
		for _, r := range g.WALByRecord[:min(8, len(g.WALByRecord))] {
			top = append(top, fmt.Sprintf("%s %.2f (%.0f bytes)", r.Type, r.Count, r.Bytes))
		}
		fmt.Fprintf(w, "  WAL records per run, the largest kinds: %s\n", strings.Join(top, ", "))
	}
}

// summary is the one-line form of the counts.
func (p *PerRun) summary() string {
	var parts []string
	if n := p.NATS; n != nil {
		parts = append(parts, fmt.Sprintf("NATS (%d server(s), R%d) msgs in %.2f out %.2f, bytes in %.0f out %.0f (clients: msgs in %.2f out %.2f, bytes in %.0f out %.0f; routes in: msgs %.2f, bytes %.0f)",
			n.Servers, n.Replicas, n.InMsgs, n.OutMsgs, n.InBytes, n.OutBytes, n.ClientInMsgs, n.ClientOutMsgs,
			n.ClientInBytes, n.ClientOutBytes, n.RouteInMsgs, n.RouteInBytes))
		if len(n.StreamMsgs) > 0 {
			var st []string
			for name, v := range n.StreamMsgs {
				st = append(st, fmt.Sprintf("%s %.3f", name, v))
			}
			sort.Strings(st)
			parts = append(parts, "stored by stream "+strings.Join(st, ", "))
		}
	}
	if g := p.Postgres; g != nil {
		s := fmt.Sprintf("PostgreSQL WAL %.0f bytes (%.2f records, %.3f full-page images), %.3f transactions, rows inserted %.2f updated %.2f (HOT %.2f) deleted %.2f, job_runs grew %.0f bytes",
			g.WALBytes, g.WALRecords, g.WALFPI, g.Transactions, g.RowsInserted, g.RowsUpdated, g.RowsHOTUpdated, g.RowsDeleted,
			g.RunsTableBytes)
		if g.Statements > 0 {
			s += fmt.Sprintf(", %.3f statements (%.2f rows, %.3f 8 KiB blocks dirtied)", g.Statements, g.StatementRows, g.BlocksDirtied)
		}
		if g.IndexEntries > 0 {
			s += fmt.Sprintf(", %.2f index entries", g.IndexEntries)
		}
		parts = append(parts, s+fmt.Sprintf("; %d connections", g.Connections))
	}
	return strings.Join(parts, "; ")
}
