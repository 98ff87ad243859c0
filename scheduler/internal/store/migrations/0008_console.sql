-- jetjob schema, version 8: indexes of the web console's listings.

-- The jobs page sorts by name or by last change, a page at a time (keyset
-- on (key, id), store.SearchJobs). Neither column changes on the hot path.
CREATE INDEX jobs_name ON jobs (name, id);
CREATE INDEX jobs_updated ON jobs (updated_at, id);

-- No index for the run search by worker (GET /runs?worker=): every run
-- would pay one more index write when it starts (the benchmark measured
-- PostgreSQL's CPU per run up by 5-15 %). The search reads the time index
-- newest first and keeps the worker's runs, which are recent: a worker id
-- is one process's.
