-- jetjob schema, version 11: the after-run steps of the events applier
-- probe small indexes (issue #16).
--
-- Every run the applier ends is joined to its job twice in the applier's
-- statement (runs.applySQL): for its child jobs (children) and for a
-- fix_delay job's next fire (chained). Almost no job has either, yet each
-- join probed jobs_pkey and read the job's row, per run: 1.9 µs of the
-- statement's 11.5 per run at 7,000 runs/s. The joins now state these
-- predicates, so they probe one of these partial indexes instead, which
-- hold only the jobs concerned (usually none: the probe reads one page).
--
-- Neither predicate's columns change on the hot path (the planner rewrites
-- next_fire_at), so a job's row gets an entry here only when it is created
-- or edited to be a parent or fix_delay.
CREATE INDEX jobs_parents ON jobs (id) WHERE child_job_ids <> '{}';
CREATE INDEX jobs_fix_delay ON jobs (id) WHERE schedule_type = 'fix_delay';
