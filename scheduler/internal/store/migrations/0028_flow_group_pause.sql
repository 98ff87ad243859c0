-- jetjob schema, version 28: a group's pause and drain (issue #33,
-- docs/flow-control.md).
--
-- flow_state is active, paused or draining: paused and draining start no
-- new run of the group's jobs (the planner leaves their jobs out, a manual
-- trigger is refused unless forced); draining also reports "drained" once
-- none of the group's runs is in flight (computed when read, not stored).
-- flow_note, flow_by and flow_at say who set the state, when and why.
-- last_pause_from, _until and _note keep the last pause that ended, so that
-- the fires a resumed group's jobs skip can name it in their message.
ALTER TABLE job_groups
    ADD COLUMN flow_state   text NOT NULL DEFAULT 'active'
        CHECK (flow_state IN ('active', 'paused', 'draining')),
    ADD COLUMN flow_note    text NOT NULL DEFAULT '',
    ADD COLUMN flow_by      text NOT NULL DEFAULT '',
    ADD COLUMN flow_at      timestamptz,
    ADD COLUMN last_pause_from  timestamptz,
    ADD COLUMN last_pause_until timestamptz,
    ADD COLUMN last_pause_note  text NOT NULL DEFAULT '';
