-- jetjob schema, version 22: several schedules per job (issue #34).
--
-- A job's first schedule stays in schedule_type / schedule_expr / timezone
-- (what every older reader and the planner's hot path know); the others,
-- each {"type", "expr", "timezone"}, are here. NULL for a job with one
-- schedule, the common case: the planner reads the column with the rest of
-- the row and pays nothing more for it.
ALTER TABLE jobs ADD COLUMN extra_schedules jsonb;
