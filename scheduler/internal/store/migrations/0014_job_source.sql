-- jetjob schema, version 14: where a job came from (issue #30).
--
-- An importer records the origin of each job it makes, "xxl-job
-- <database>#<id>" for the xxl-job import, and a re-import finds its jobs
-- by it: the job's group and name derive from settings (--group-prefix)
-- and text (the description) that may change between imports, the origin
-- does not. '' for a job made any other way. Not unique: two jetjob jobs
-- may come from one origin (a copy made by hand); the importer says so.
ALTER TABLE jobs ADD COLUMN source text NOT NULL DEFAULT '';
CREATE INDEX jobs_source ON jobs (source) WHERE source <> '';
