-- jetjob schema, version 16: alerts (issue #31): channels, rules, alerts,
-- and the outbox and deliveries that make them durable (package alerts;
-- docs/alerts.md).

-- A channel is where notices go: one vendor's webhook, a generic signed
-- webhook, or email addresses. A NULL group makes it global (admins
-- only); a group's channel is managed by the group's operators. target is
-- the URL (or the comma-separated addresses of an email channel); for the
-- chat vendors the URL carries the credential, so the API shows it
-- redacted. secret (a signing secret) is never returned by the API.
CREATE TABLE alert_channels (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name       text NOT NULL CHECK (name ~ '^[A-Za-z0-9_.-]{1,64}$'),
    kind       text NOT NULL CHECK (kind IN ('email', 'webhook', 'slack', 'teams', 'dingtalk', 'feishu', 'wecom')),
    group_name text REFERENCES job_groups (name) ON DELETE CASCADE,
    target     text NOT NULL,
    secret     text NOT NULL DEFAULT '',
    template   text NOT NULL DEFAULT '',
    created_by text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX alert_channels_name ON alert_channels (COALESCE(group_name, ''), name);

-- A rule subscribes channels to events of one job (job_id), of a group's
-- jobs (group_name) or of every job (both NULL).
CREATE TABLE alert_rules (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name        text NOT NULL CHECK (name ~ '^[A-Za-z0-9_.-]{1,64}$'),
    job_id      bigint REFERENCES jobs (id) ON DELETE CASCADE,
    group_name  text REFERENCES job_groups (name) ON DELETE CASCADE,
    events      text[] NOT NULL CHECK (cardinality(events) > 0),
    threshold   integer NOT NULL DEFAULT 1 CHECK (threshold BETWEEN 1 AND 10000),
    window_ms   bigint NOT NULL DEFAULT 0 CHECK (window_ms >= 0),
    renotify_ms bigint NOT NULL DEFAULT 0 CHECK (renotify_ms >= 0),
    -- pause_after: disable the job at this many consecutive problem
    -- events the rule hears (0: never).
    pause_after integer NOT NULL DEFAULT 0 CHECK (pause_after BETWEEN 0 AND 10000),
    -- sla_ms: how late a start (late_start) or how long a run
    -- (running_long) the rule tolerates before the event.
    sla_ms      bigint NOT NULL DEFAULT 0 CHECK (sla_ms >= 0),
    enabled     boolean NOT NULL DEFAULT true,
    muted_until timestamptz,
    muted_by    text NOT NULL DEFAULT '',
    mute_reason text NOT NULL DEFAULT '',
    created_by  text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now(),
    CHECK (job_id IS NULL OR group_name IS NOT NULL)
);
CREATE INDEX alert_rules_job ON alert_rules (job_id) WHERE job_id IS NOT NULL;
CREATE INDEX alert_rules_group ON alert_rules (group_name) WHERE group_name IS NOT NULL;

-- A channel a rule notifies. A channel named by a rule cannot be deleted
-- (RESTRICT): the rule would go quiet without anyone deciding so.
CREATE TABLE alert_rule_channels (
    rule_id    bigint NOT NULL REFERENCES alert_rules (id) ON DELETE CASCADE,
    channel_id bigint NOT NULL REFERENCES alert_channels (id) ON DELETE RESTRICT,
    PRIMARY KEY (rule_id, channel_id)
);

-- The outbox: the ends of runs an alert may follow from, written by the
-- results applier in the transaction that records them, consumed (and
-- deleted) by the alert engine in the transaction that updates alerts and
-- queues deliveries.
CREATE TABLE alert_outbox (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- rule_id: an SLA event is for the one rule whose SLA passed (NULL:
    -- a run's end, for every rule covering its job).
    rule_id    bigint,
    run_id     bigint NOT NULL,
    job_id     bigint NOT NULL,
    group_name text NOT NULL,
    status     text NOT NULL,
    attempt    integer NOT NULL,
    final      boolean NOT NULL,
    message    text NOT NULL DEFAULT '',
    at         timestamptz NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- The SLA events already raised per run (late_start, running_long): each
-- at most once per run and rule, whichever scheduler sweeps.
CREATE TABLE alert_sla (
    rule_id bigint NOT NULL REFERENCES alert_rules (id) ON DELETE CASCADE,
    run_id  bigint NOT NULL,
    event   text NOT NULL,
    at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (rule_id, run_id, event)
);
CREATE INDEX alert_sla_at ON alert_sla (at);

-- An alert: one live (pending or open) per (rule, job), updated by every
-- event rather than repeated, closed by a recovery. pending: fewer than
-- the rule's threshold of events within its window so far (recent).
CREATE TABLE alerts (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    rule_id      bigint NOT NULL REFERENCES alert_rules (id) ON DELETE CASCADE,
    job_id       bigint NOT NULL,
    group_name   text NOT NULL,
    state        text NOT NULL CHECK (state IN ('pending', 'open', 'closed')),
    count        integer NOT NULL DEFAULT 0,
    recent       timestamptz[] NOT NULL DEFAULT '{}',
    first_at     timestamptz NOT NULL,
    last_at      timestamptz NOT NULL,
    opened_at    timestamptz,
    closed_at    timestamptz,
    notified_at  timestamptz,
    last_run_id  bigint NOT NULL DEFAULT 0,
    last_event   text NOT NULL DEFAULT '',
    last_status  text NOT NULL DEFAULT '',
    last_message text NOT NULL DEFAULT '',
    acked_by     text NOT NULL DEFAULT '',
    acked_at     timestamptz,
    muted_until  timestamptz,
    muted_by     text NOT NULL DEFAULT '',
    mute_reason  text NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX alerts_live ON alerts (rule_id, job_id) WHERE state <> 'closed';
CREATE INDEX alerts_live_job ON alerts (job_id) WHERE state <> 'closed';
CREATE INDEX alerts_group ON alerts (group_name, id DESC);

-- A delivery: one notice to one channel, at most once per (rule, channel,
-- event) — the outbox row it follows from (event_id; 0 for a test). state:
-- pending (due at next_at), sending (claimed until lease_until), sent,
-- failed (attempts used up), unknown (its scheduler stopped during the
-- attempt: not repeated).
CREATE TABLE alert_deliveries (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    alert_id    bigint REFERENCES alerts (id) ON DELETE CASCADE,
    rule_id     bigint NOT NULL DEFAULT 0,
    channel_id  bigint NOT NULL REFERENCES alert_channels (id) ON DELETE CASCADE,
    event_id    bigint NOT NULL,
    notice      jsonb NOT NULL,
    state       text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'sending', 'sent', 'failed', 'unknown')),
    attempts    integer NOT NULL DEFAULT 0,
    next_at     timestamptz NOT NULL DEFAULT now(),
    lease_until timestamptz,
    last_code   integer NOT NULL DEFAULT 0,
    last_error  text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now(),
    sent_at     timestamptz
);
CREATE UNIQUE INDEX alert_deliveries_once ON alert_deliveries (rule_id, channel_id, event_id) WHERE event_id <> 0;
CREATE INDEX alert_deliveries_due ON alert_deliveries (next_at) WHERE state = 'pending';
CREATE INDEX alert_deliveries_sending ON alert_deliveries (lease_until) WHERE state = 'sending';
CREATE INDEX alert_deliveries_alert ON alert_deliveries (alert_id) WHERE alert_id IS NOT NULL;

-- Every attempt of a delivery: its result, the receiver's status code (0:
-- none) and the class of its failure, never what the receiver answered.
CREATE TABLE alert_attempts (
    delivery_id bigint NOT NULL REFERENCES alert_deliveries (id) ON DELETE CASCADE,
    n           integer NOT NULL,
    at          timestamptz NOT NULL DEFAULT now(),
    result      text NOT NULL CHECK (result IN ('sent', 'failed', 'unknown')),
    code        integer NOT NULL DEFAULT 0,
    error       text NOT NULL DEFAULT '',
    PRIMARY KEY (delivery_id, n)
);
