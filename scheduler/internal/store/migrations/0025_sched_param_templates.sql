-- jetjob schema, version 25: params templates (issue #34).
--
-- With params_template on, a job's params are a template over the fire
-- (package paramtmpl), rendered once per run when the run is written and
-- stored in job_runs.params, so the run shows what its handler got. Off
-- for every existing job: params that happen to hold "{{" stay text.
ALTER TABLE jobs ADD COLUMN params_template boolean NOT NULL DEFAULT false;
