// Package store is the scheduler's PostgreSQL system of record for groups,
// jobs and runs, as the API sees them: create, read, update, delete, list.
// The hot paths (planning, firing, applying events) own their batch SQL in
// their own packages (planner, dispatch, results), next to the code that
// depends on its exact shape.
package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/jetjob/jetjob/scheduler/internal/pgerr"
	"github.com/jetjob/jetjob/scheduler/internal/refs"
	"github.com/jetjob/jetjob/scheduler/internal/secrets"
	"github.com/jetjob/jetjob/scheduler/internal/wfengine"
)

// DefaultShardCount is the number of shards of a new cluster.
const DefaultShardCount = 64

// MaxShardCount is the most shards a cluster may have.
const MaxShardCount = 4096

var (
	// ErrNotFound is returned when a group, job or run does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict is returned when a name is already taken.
	ErrConflict = errors.New("already exists")
	// ErrInvalid is returned for a write the store refuses as it stands
	// (a workflow's row edited as a job's).
	ErrInvalid = errors.New("invalid")
)

// Store wraps a pgx pool.
type Store struct {
	pool       *pgxpool.Pool
	shardCount int
	// maxChainRuns caps the runs one fire may cause through child jobs:
	// a link that would let a job reach further is refused (package refs).
	maxChainRuns int
	// workflowsEnded is WithWorkflowsEnded's hook (nil: none).
	workflowsEnded func(ended []wfengine.Ended)
	// scriptVersions is how many versions of a script are kept (0:
	// DefaultScriptVersions).
	scriptVersions int
	// keyring encrypts secrets (WithSecrets); empty: none configured.
	keyring secrets.Keyring
}

// Option sets an optional setting of Open.
type Option func(*Store)

// WithMaxChainRuns sets the cap on the runs one fire may cause through
// child jobs, which links are checked against (0: refs.DefaultMaxRuns).
// The results applier enforces the same cap at run time: give both the
// scheduler's one setting.
func WithMaxChainRuns(n int) Option {
	return func(s *Store) { s.maxChainRuns = refs.MaxRunsOr(n) }
}

// WithWorkflowsEnded calls f after each committed operation of the
// store's that ended workflow runs (an operation on a run, a kill of a
// node run not yet published): the scheduler counts them
// (jetjob_workflow_runs_total) and records their spans.
func WithWorkflowsEnded(f func(ended []wfengine.Ended)) Option {
	return func(s *Store) { s.workflowsEnded = f }
}

// endedWorkflows reports ended to the WithWorkflowsEnded hook.
func (s *Store) endedWorkflows(ended []wfengine.Ended) {
	if s.workflowsEnded != nil && len(ended) > 0 {
		s.workflowsEnded(ended)
	}
}

// Open returns a store over pool and reads (or, for a new cluster, fixes)
// the shard count. shardCount is used only when the cluster is created;
// afterwards the stored value wins, and a different request is reported
// through ShardCount so the caller can log it.
func Open(ctx context.Context, pool *pgxpool.Pool, shardCount int, opts ...Option) (*Store, error) {
	if shardCount == 0 {
		shardCount = DefaultShardCount
	}
	if shardCount < 1 || shardCount > MaxShardCount {
		return nil, fmt.Errorf("shard count %d: want 1 to %d", shardCount, MaxShardCount)
	}
	st := &Store{pool: pool, maxChainRuns: refs.DefaultMaxRuns}
	for _, o := range opts {
		o(st)
	}
	if err := refs.ValidateMaxRuns(st.maxChainRuns); err != nil {
		return nil, err
	}
	if _, err := pool.Exec(ctx, `INSERT INTO cluster (shard_count) VALUES ($1) ON CONFLICT (id) DO NOTHING`, shardCount); err != nil {
		return nil, fmt.Errorf("init cluster: %w", err)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT shard_count FROM cluster`).Scan(&n); err != nil {
		return nil, fmt.Errorf("read shard count: %w", err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO scheduler_shards (shard)
		SELECT generate_series(0, $1 - 1) ON CONFLICT (shard) DO NOTHING`, n); err != nil {
		return nil, fmt.Errorf("init shards: %w", err)
	}
	st.shardCount = n
	return st, nil
}

// Pool is the underlying pool.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// ShardCount is the cluster's fixed number of shards.
func (s *Store) ShardCount() int { return s.shardCount }

// Group is an executor group.
type Group struct {
	Name  string
	Title string
	// CommandHandlers are the group's handlers that run commands, besides
	// shell: their jobs need the scripts permission.
	CommandHandlers []string
	CreatedAt       time.Time
	// Flow is its pause or drain (groupflow.go).
	Flow Flow
	// Limits are its cap and rate limit (grouplimits.go).
	Limits GroupLimits
}

// groupAudit is a group as the audit log keeps it.
type groupAudit struct {
	Name            string   `json:"name"`
	Title           string   `json:"title,omitempty"`
	CommandHandlers []string `json:"command_handlers,omitempty"`
	limitsAudit
}

// CreateGroup stores a new group, recording a group.create by a;
// ErrConflict if the name is taken.
func (s *Store) CreateGroup(ctx context.Context, a Actor, g Group) (Group, error) {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx,
			`INSERT INTO job_groups (name, title, command_handlers, max_running, rate_count, rate_period_ms)
			VALUES ($1, $2, $3, $4, $5, $6) RETURNING created_at`,
			g.Name, g.Title, nonNil(g.CommandHandlers), g.Limits.MaxRunning, g.Limits.Rate.Count, g.Limits.Rate.PeriodMS).Scan(&g.CreatedAt)
		if pgerr.Unique(err) {
			return fmt.Errorf("group %q: %w", g.Name, ErrConflict)
		}
		if err != nil {
			return fmt.Errorf("create group %q: %w", g.Name, err)
		}
		return writeAudit(ctx, tx, a, "group.create", groupTarget(g.Name), g.Name, nil,
			groupAudit{Name: g.Name, Title: g.Title, CommandHandlers: g.CommandHandlers, limitsAudit: g.Limits.audit()})
	})
	return g, err
}

// EnsureGroup creates a group unless it exists.
func (s *Store) EnsureGroup(ctx context.Context, g Group) error {
	_, err := s.pool.Exec(ctx,
		`INSERT INTO job_groups (name, title) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING`, g.Name, g.Title)
	if err != nil {
		return fmt.Errorf("ensure group %q: %w", g.Name, err)
	}
	return nil
}

// ListGroups returns every group by name, only of groups when it is not
// nil (a caller's readable groups).
func (s *Store) ListGroups(ctx context.Context, groups []string) ([]Group, error) {
	rows, _ := s.pool.Query(ctx, `SELECT g.name, g.title, g.command_handlers, g.created_at,
		g.max_running, g.rate_count, g.rate_period_ms, `+flowColumns+` FROM job_groups g
		WHERE $1::text[] IS NULL OR g.name = ANY($1) ORDER BY g.name`, groups)
	gs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Group, error) {
		var g Group
		f, l := &g.Flow, &g.Limits
		err := r.Scan(&g.Name, &g.Title, &g.CommandHandlers, &g.CreatedAt, &l.MaxRunning, &l.Rate.Count, &l.Rate.PeriodMS,
			&f.State, &f.Note, &f.By, &f.At, &f.InFlight)
		return g, err
	})
	if err != nil {
		return nil, fmt.Errorf("list groups: %w", err)
	}
	return gs, nil
}

// GroupExists reports whether a group of that name exists.
func (s *Store) GroupExists(ctx context.Context, name string) (bool, error) {
	var ok bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM job_groups WHERE name = $1)`, name).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("group %q: %w", name, err)
	}
	return ok, nil
}

// CommandHandlers returns the handlers of a group that run commands,
// besides shell (none for an unknown group).
func (s *Store) CommandHandlers(ctx context.Context, group string) ([]string, error) {
	var hs []string
	err := s.pool.QueryRow(ctx, `SELECT command_handlers FROM job_groups WHERE name = $1`, group).Scan(&hs)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("command handlers of group %q: %w", group, err)
	}
	return hs, nil
}

// JobGroup returns the group of a job; for a deleted job, the group its
// runs or its audit rows name (its history stays readable by that group's
// viewers). ErrNotFound when nothing knows the job.
func (s *Store) JobGroup(ctx context.Context, id int64) (string, error) {
	var g *string
	err := s.pool.QueryRow(ctx, `SELECT coalesce(
			(SELECT group_name FROM jobs WHERE id = $1),
			(SELECT group_name FROM job_runs WHERE job_id = $1 ORDER BY id DESC LIMIT 1),
			(SELECT group_name FROM audit_log WHERE target = $2 ORDER BY id DESC LIMIT 1))`, id, JobTarget(id)).Scan(&g)
	if err != nil {
		return "", fmt.Errorf("group of job %d: %w", id, err)
	}
	if g == nil {
		return "", fmt.Errorf("job %d: %w", id, ErrNotFound)
	}
	return *g, nil
}

// RunGroup returns the group of a run; ErrNotFound if there is no such run.
func (s *Store) RunGroup(ctx context.Context, id int64) (string, error) {
	return columnOf[string](ctx, s.pool, "run", `SELECT group_name FROM job_runs WHERE id = $1`, id)
}
