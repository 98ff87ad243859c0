-- jetjob schema, version 23: calendars (issue #34).
--
-- A calendar is a named set of days (package calendar): dates, ranges,
-- weekdays, as JSON. A NULL group makes it global (admins change it; any
-- job may name it); a group's calendar is changed by the group's
-- operators and named only by the group's jobs (refs.CheckCalendars).
-- Names are one namespace, so that a job (and a job file) names a
-- calendar by its name alone.
CREATE TABLE calendars (
    name        text PRIMARY KEY CHECK (name ~ '^[A-Za-z0-9_.-]{1,64}$'),
    group_name  text REFERENCES job_groups (name) ON DELETE CASCADE,
    description text NOT NULL DEFAULT '',
    days        jsonb NOT NULL,
    version     bigint NOT NULL DEFAULT 1,
    created_by  text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);

-- A job's calendars, by name: a fire on a day of an exclude calendar is
-- recorded SKIPPED unless the day is in an include calendar. Empty for
-- almost every job; the planner reads them with the row and loads
-- calendars only for the jobs that name some.
ALTER TABLE jobs ADD COLUMN exclude_calendars text[] NOT NULL DEFAULT '{}',
    ADD COLUMN include_calendars text[] NOT NULL DEFAULT '{}';
CREATE INDEX jobs_calendars ON jobs USING gin ((exclude_calendars || include_calendars))
    WHERE exclude_calendars <> '{}' OR include_calendars <> '{}';
