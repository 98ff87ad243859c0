-- jetjob schema, version 27: a job's alarm_emails / alarm_webhook become a
-- channel and a rule of the alert model (issue #31, docs/alerts.md "Per-job
-- alarm fields"), so that one mechanism, the alert outbox, tells people
-- about failures.
--
-- A job with alarm fields has *managed* objects, marked managed_by_job:
-- an email channel (the addresses), a webhook channel (the URL, unsigned
-- by its own secret, so signed with the group's secret derived from
-- JETJOB_WEBHOOK_SECRET, as the per-job webhook was), and a rule on the
-- job subscribing them to retries_exhausted (a run's last attempt ended
-- FAILED, TIMED_OUT or LOST: what the old alarm sent on), threshold 1 and
-- re-notify 1 ms, so that every such failure is told, as before. The API
-- and console show them read-only; editing the job's fields changes them.
--
-- jetjob_job_alarm(job) makes a job's managed objects what its fields say
-- (creating, updating or deleting them); the trigger below calls it in the
-- statement that inserts, updates or deletes the job, whichever path writes
-- it (API, console, import, apply, workflows' inline jobs), so they change
-- in the job's own transaction. This migration calls it for every existing
-- job with alarm fields.
--
-- The old delivery path is gone: nothing writes job_runs.alarm_* any more
-- (the columns stay, read as history of runs recorded before this version,
-- and dropping them would rewrite every partition).

ALTER TABLE alert_channels ADD COLUMN managed_by_job bigint;
ALTER TABLE alert_rules ADD COLUMN managed_by_job bigint;

-- Managed objects are named after their job's id; user-made ones keep
-- their names unique per group, and never collide with managed ones.
DROP INDEX alert_channels_name;
CREATE UNIQUE INDEX alert_channels_name ON alert_channels (COALESCE(group_name, ''), name) WHERE managed_by_job IS NULL;
CREATE UNIQUE INDEX alert_channels_managed ON alert_channels (managed_by_job, kind) WHERE managed_by_job IS NOT NULL;
CREATE UNIQUE INDEX alert_rules_managed ON alert_rules (managed_by_job) WHERE managed_by_job IS NOT NULL;

DROP INDEX IF EXISTS job_runs_alarm_pending;

-- The dashboard's "Alerts not delivered, last 24 h" (store.RunFailures).
CREATE INDEX alert_deliveries_failed ON alert_deliveries (created_at) WHERE state = 'failed';

CREATE FUNCTION jetjob_job_alarm(job bigint) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    grp    text;
    emails text;
    hook   text;
    rule   bigint;
BEGIN
    SELECT j.group_name, array_to_string(j.alarm_emails, ', '), j.alarm_webhook INTO grp, emails, hook
    FROM jobs j WHERE j.id = job;
    emails := COALESCE(emails, '');
    hook := COALESCE(hook, '');

    -- The channels: one per field that is set, updated in place (pending
    -- deliveries go to the new target), deleted with their deliveries when
    -- the field is cleared or the job deleted.
    DELETE FROM alert_rule_channels WHERE channel_id IN (SELECT c.id FROM alert_channels c
        WHERE c.managed_by_job = job AND ((c.kind = 'email' AND emails = '') OR (c.kind = 'webhook' AND hook = '')));
    DELETE FROM alert_channels c
        WHERE c.managed_by_job = job AND ((c.kind = 'email' AND emails = '') OR (c.kind = 'webhook' AND hook = ''));
    INSERT INTO alert_channels (name, kind, group_name, target, created_by, managed_by_job)
        SELECT 'job-' || job || '-alarm-' || k.kind, k.kind, grp, k.target, '', job
        FROM (VALUES ('email', emails), ('webhook', hook)) AS k(kind, target)
        WHERE k.target <> ''
    ON CONFLICT (managed_by_job, kind) WHERE managed_by_job IS NOT NULL DO UPDATE
        SET target = EXCLUDED.target, group_name = EXCLUDED.group_name, updated_at = now()
        WHERE (alert_channels.target, alert_channels.group_name) IS DISTINCT FROM (EXCLUDED.target, EXCLUDED.group_name);

    IF emails = '' AND hook = '' THEN
        DELETE FROM alert_rules r WHERE r.managed_by_job = job;
        RETURN;
    END IF;
    INSERT INTO alert_rules (name, job_id, group_name, events, threshold, window_ms, renotify_ms, created_by, managed_by_job)
        VALUES ('job-' || job || '-alarm', job, grp, '{retries_exhausted}', 1, 0, 1, '', job)
    ON CONFLICT (managed_by_job) WHERE managed_by_job IS NOT NULL DO UPDATE
        SET group_name = EXCLUDED.group_name
        WHERE alert_rules.group_name IS DISTINCT FROM EXCLUDED.group_name;
    SELECT r.id INTO rule FROM alert_rules r WHERE r.managed_by_job = job;
    INSERT INTO alert_rule_channels (rule_id, channel_id)
        SELECT rule, c.id FROM alert_channels c WHERE c.managed_by_job = job
    ON CONFLICT DO NOTHING;
END $$;

CREATE FUNCTION jetjob_job_alarm_trigger() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM jetjob_job_alarm(OLD.id);
    ELSIF TG_OP = 'INSERT' THEN
        IF NEW.alarm_emails <> '{}' OR NEW.alarm_webhook <> '' THEN
            PERFORM jetjob_job_alarm(NEW.id);
        END IF;
    ELSIF (OLD.alarm_emails, OLD.alarm_webhook, OLD.group_name) IS DISTINCT FROM (NEW.alarm_emails, NEW.alarm_webhook, NEW.group_name) THEN
        PERFORM jetjob_job_alarm(NEW.id);
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER jobs_alarm AFTER INSERT OR DELETE OR UPDATE OF alarm_emails, alarm_webhook, group_name ON jobs
    FOR EACH ROW EXECUTE FUNCTION jetjob_job_alarm_trigger();

SELECT jetjob_job_alarm(id) FROM jobs WHERE alarm_emails <> '{}' OR alarm_webhook <> '' ORDER BY id;
