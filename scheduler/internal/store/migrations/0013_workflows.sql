-- jetjob schema, version 13: workflows (issue #29, docs/workflows.md).
--
-- A workflow owns a row of jobs of kind 'workflow': its schedule, zone,
-- misfire policy, jitter, start/end, enabled and shard, so the planner plans
-- its fires like any job's. Dispatch does not publish such a run: it starts
-- the workflow run in the fenced transaction that moves the run out of
-- SCHEDULED (package wfengine).
ALTER TABLE jobs ADD COLUMN kind text NOT NULL DEFAULT 'job' CHECK (kind IN ('job', 'workflow'));

-- A workflow's graph and its run policy; one row per jobs row of kind
-- workflow. spec is the nodes and edges (wfengine.Spec).
CREATE TABLE workflows (
    job_id         bigint PRIMARY KEY REFERENCES jobs (id) ON DELETE CASCADE,
    spec           jsonb NOT NULL,
    overlap        text NOT NULL DEFAULT 'serial'
        CHECK (overlap IN ('serial', 'discard_later', 'cover_early', 'concurrent')),
    max_concurrent integer NOT NULL DEFAULT 0 CHECK (max_concurrent >= 0),
    timeout_ms     bigint NOT NULL DEFAULT 0 CHECK (timeout_ms >= 0)
);

-- A workflow run: id is its workflow job's run (job_runs.id of the fire
-- that started it), so one fire starts at most one workflow run. spec is
-- the graph as it was when the run was created (an edit changes later runs
-- only); state is the nodes' states (wfengine.State), written in the
-- transactions that lock this row: the results applier's, when a node run
-- ends, and the operations'.
CREATE TABLE workflow_runs (
    id           bigint PRIMARY KEY,
    workflow_id  bigint NOT NULL,
    group_name   text NOT NULL,
    -- scheduled_at is the workflow job's run's partition key.
    scheduled_at timestamptz NOT NULL,
    status       text NOT NULL
        CHECK (status IN ('QUEUED', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLED', 'TIMED_OUT', 'DISCARDED')),
    params       text,
    spec         jsonb NOT NULL,
    state        jsonb NOT NULL DEFAULT '{}',
    -- node_runs counts the node runs created so far: with --max-chain-runs
    -- it bounds what one fire may cause, for_each items included.
    node_runs    integer NOT NULL DEFAULT 0,
    -- end_as is what a cancel asked the run to end as (CANCELLED,
    -- TIMED_OUT), once its running nodes have ended.
    end_as       text NOT NULL DEFAULT '',
    message      text NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL DEFAULT now(),
    started_at   timestamptz,
    finished_at  timestamptz,
    timeout_at   timestamptz
);
CREATE INDEX workflow_runs_workflow ON workflow_runs (workflow_id, id DESC);
CREATE INDEX workflow_runs_active ON workflow_runs (workflow_id, id) WHERE status IN ('QUEUED', 'RUNNING');
CREATE INDEX workflow_runs_timeout ON workflow_runs (timeout_at) WHERE status = 'RUNNING' AND timeout_at IS NOT NULL;

-- The key of a node run, (workflow run, node, attempt, item): one row per
-- node run ever created, so a second insert of the same node run is a
-- no-op (job_runs is partitioned by scheduled_at and cannot hold this
-- key unique). run_id and scheduled_at name its run, then the last of its
-- job's retries once the node settled.
CREATE TABLE workflow_node_runs (
    workflow_run bigint NOT NULL REFERENCES workflow_runs (id) ON DELETE CASCADE,
    node         text NOT NULL,
    node_attempt integer NOT NULL,
    item         integer NOT NULL,
    run_id       bigint NOT NULL,
    scheduled_at timestamptz NOT NULL,
    PRIMARY KEY (workflow_run, node, node_attempt, item)
);

-- A node run is an ordinary run with these set (NULL on other runs); its
-- job's retries copy them. output is the JSON a handler set (at most 64 KB),
-- kept as text: it was checked as JSON when received, and text takes what
-- jsonb would refuse (a \u0000 in a string). run_timeout_ms and
-- run_max_retries are a node's overrides of its job's timeout and retries
-- (NULL: the job's).
ALTER TABLE job_runs ADD COLUMN workflow_run bigint,
    ADD COLUMN node text,
    ADD COLUMN node_attempt integer,
    ADD COLUMN item integer,
    ADD COLUMN output text,
    ADD COLUMN run_timeout_ms bigint,
    ADD COLUMN run_max_retries integer;
