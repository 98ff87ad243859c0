-- jetjob schema, version 8: indexes of the web console's listings.

-- The jobs page sorts by name or by last change, a page at a time (keyset
-- on (key, id), store.SearchJobs). Neither column changes on the hot path.
CREATE INDEX jobs_name ON jobs (name, id);
CREATE INDEX jobs_updated ON jobs (updated_at, id);

-- Run search by worker (GET /runs?worker=), newest first like the other
-- search indexes (migration 0004). Runs not yet started have no worker and
-- stay out of it.
CREATE INDEX job_runs_worker ON job_runs (worker_id, scheduled_at DESC, id DESC) WHERE worker_id <> '';
