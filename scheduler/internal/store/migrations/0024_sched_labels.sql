-- jetjob schema, version 24: labels and an owner on jobs (issue #34).
--
-- labels are key=value pairs (package labels); a selector
-- "env=prod,team=billing" is `labels @> '{"env":"prod","team":"billing"}'`,
-- which the GIN index answers. owner is free text: who to ask about the
-- job (a person, a team, a channel), shown on the job page.
ALTER TABLE jobs ADD COLUMN labels jsonb NOT NULL DEFAULT '{}',
    ADD COLUMN owner text NOT NULL DEFAULT '';
CREATE INDEX jobs_labels ON jobs USING gin (labels jsonb_path_ops) WHERE labels <> '{}';
