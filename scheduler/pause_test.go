package scheduler_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/scheduler/internal/dispatch"
	"github.com/jetjob/jetjob/scheduler/internal/store"
	"github.com/jetjob/jetjob/shared/wire"
)

// auditSQL records every row a scheduler writes to the scheduling tables,
// with the writer's application_name, the row's shard and the kind of
// write: the test's way to see writes. Shard-owned writes are planning
// (inserting runs, moving next_fire_at) and recording publishes (setting
// triggered_at, or ending an unpublished run); applying worker events is
// not shard-owned (any scheduler may) and counts as "event".
const auditSQL = `
CREATE TABLE audit (app text NOT NULL, tbl text NOT NULL, kind text NOT NULL, shard integer,
	at timestamptz NOT NULL DEFAULT clock_timestamp());
CREATE FUNCTION audit_row() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
	k text := 'owned';
	-- job_runs is partitioned: its row triggers fire on the partitions.
	tbl text := CASE WHEN TG_TABLE_NAME LIKE 'job\_runs\_%' THEN 'job_runs' ELSE TG_TABLE_NAME END;
BEGIN
	-- Shard-owned writes to a run: dispatch recording it TRIGGERED (or
	-- adding the trigger's time to a run events already moved), or ending
	-- it unpublished. Anything else is a worker's event, applied by any
	-- scheduler, which may record the trigger's time along with the status.
	IF tbl = 'job_runs' AND TG_OP = 'UPDATE' THEN
		IF NOT ((OLD.status = 'SCHEDULED' AND NEW.status = 'TRIGGERED')
		   OR (NEW.triggered_at IS DISTINCT FROM OLD.triggered_at AND NEW.status = OLD.status)
		   OR (OLD.status = 'SCHEDULED' AND NEW.status IN ('SKIPPED', 'FAILED') AND NEW.started_at IS NULL)) THEN
			k := 'event';
		END IF;
	END IF;
	INSERT INTO audit (app, tbl, kind, shard) VALUES (current_setting('application_name'), tbl, k,
		CASE WHEN TG_OP = 'DELETE' THEN OLD.shard ELSE NEW.shard END);
	RETURN NULL;
END $$;
CREATE TRIGGER audit_runs AFTER INSERT OR UPDATE OR DELETE ON job_runs FOR EACH ROW EXECUTE FUNCTION audit_row();
CREATE TRIGGER audit_jobs AFTER INSERT OR UPDATE OR DELETE ON jobs FOR EACH ROW EXECUTE FUNCTION audit_row();
CREATE TRIGGER audit_shards AFTER INSERT OR UPDATE OR DELETE ON scheduler_shards FOR EACH ROW EXECUTE FUNCTION audit_row();`

// buildScheduler builds the jetjob-scheduler binary for tests that need a
// real process (to pause it with SIGSTOP).
func buildScheduler(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "jetjob-scheduler")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/jetjob-scheduler")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build jetjob-scheduler: %v\n%s", err, out)
	}
	return bin
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// A scheduler process paused (SIGSTOP) past its lease loses its shards to
// another; when it resumes it publishes nothing and writes nothing for
// them. (It is a live scheduler again, so it soon acquires a fair share
// anew, under new epochs: what it does for a shard after re-acquiring it
// is legitimate; anything before is a stale write.) Every fire still runs
// exactly once.
func TestPausedSchedulerIsFenced(t *testing.T) {
	t.Parallel()
	c := newCluster(t) // first: it skips the test under -short, before a build
	bin := buildScheduler(t)
	ctx := context.Background()
	if _, err := c.direct.Exec(ctx, auditSQL); err != nil {
		t.Fatal(err)
	}

	// Who published each trigger, seen on the wire (core NATS sees every
	// publish, including ones JetStream would drop as duplicates).
	type pub struct {
		from  string
		runID int64
		at    time.Time
	}
	var mu sync.Mutex
	var pubs []pub
	watch := c.connect("watch")
	sub, err := watch.Subscribe("jetjob.trigger.>", func(m *nats.Msg) {
		mu.Lock()
		defer mu.Unlock()
		// A trigger batch carries several runs, one per line; a lone
		// trigger is a batch of one line.
		lines, _ := wire.SplitTriggerBatch(m.Data)
		for _, line := range lines {
			var trig wire.Trigger
			_ = json.Unmarshal(line, &trig)
			pubs = append(pubs, pub{m.Header.Get(dispatch.HeaderScheduler), trig.RunID, time.Now()})
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()

	proc := exec.Command(bin, "serve", "--insecure-no-auth", "--log-format", "console")
	proc.Env = append(os.Environ(),
		"JETJOB_DATABASE_URL="+c.dbURL+"&application_name=paused",
		fmt.Sprintf("JETJOB_NATS_URL=nats://127.0.0.1:%d", c.natsPort),
		fmt.Sprintf("JETJOB_LISTEN=127.0.0.1:%d", freePort(t)),
		"JETJOB_SCHEDULER_ID=paused", "JETJOB_SHARD_COUNT=4", "JETJOB_LEASE_TTL=2s",
		"JETJOB_PLANNING_INTERVAL=200ms", "JETJOB_PLANNING_WINDOW=2s", testTriggerKeyEnv)
	logf, err := os.Create(filepath.Join(t.TempDir(), "paused.log"))
	if err != nil {
		t.Fatal(err)
	}
	proc.Stdout, proc.Stderr = logf, logf
	if err := proc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = proc.Process.Signal(syscall.SIGCONT)
		_ = proc.Process.Kill()
		_ = proc.Wait()
		if t.Failed() {
			out, _ := os.ReadFile(logf.Name())
			t.Logf("paused scheduler's log:\n%s", out)
		}
	})
	testwait.Eventually(t, 30*time.Second, "the process to hold all 4 shards", func() bool {
		return c.count(`SELECT count(*) FROM scheduler_shards WHERE owner = 'paused' AND expires_at > now()`) == 4
	})

	st, err := store.Open(ctx, c.direct, 4)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.EnsureGroup(ctx, store.Group{Name: "g"}); err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for i := range 20 {
		j, err := st.CreateJob(ctx, store.System, store.Job{Group: "g", Name: fmt.Sprint("tick-", i), Handler: "count",
			ScheduleType: "cron", ScheduleExpr: "@every 1s", Timezone: "UTC", MisfirePolicy: "fire_all",
			RouteStrategy: "any", BlockStrategy: "serial", Enabled: true})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, j.ID)
	}
	c.startWorker("w1")
	start := time.Now()
	from := start.Truncate(time.Second).Add(2 * time.Second)
	at(start.Add(3 * time.Second))

	if err := proc.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	c.startScheduler(4) // the in-process scheduler that takes over
	c.waitLeases(20*time.Second, "the other scheduler to take all 4 shards", func() bool {
		return c.count(`SELECT count(*) FROM scheduler_shards WHERE owner = 'sched-0' AND expires_at > now()`) == 4
	})
	at(time.Now().Add(2 * time.Second))
	resumed := time.Now()
	if err := proc.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	at(resumed.Add(5 * time.Second))

	// A write for a shard counts as stale unless the resumed process had
	// re-acquired that shard before it.
	const reacquiredBefore = `EXISTS (SELECT 1 FROM audit a WHERE a.app = 'paused' AND a.tbl = 'scheduler_shards'
		AND a.shard = %s AND a.at > $1 AND a.at < %s)`
	if n := c.count(`SELECT count(*) FROM audit w WHERE w.app = 'paused' AND w.tbl <> 'scheduler_shards'
		AND w.kind = 'owned' AND w.at > $1 AND NOT `+fmt.Sprintf(reacquiredBefore, "w.shard", "w.at"), resumed); n != 0 {
		t.Errorf("the resumed scheduler wrote %d rows for shards it no longer held", n)
	}
	if n := c.count(`SELECT count(*) FROM audit WHERE app = 'paused' AND tbl = 'job_runs' AND kind = 'owned' AND at < $1`, resumed); n == 0 {
		t.Error("the audit saw no write of the paused scheduler before its pause: the check is blind")
	}
	mu.Lock()
	var stale, before int
	for _, p := range pubs {
		if p.from != "paused" {
			continue
		}
		if !p.at.After(resumed) {
			before++
			continue
		}
		ok := c.count(`SELECT count(*) FROM job_runs r WHERE r.id = $2 AND `+fmt.Sprintf(reacquiredBefore, "r.shard", "$3"), resumed, p.runID, p.at)
		if ok == 0 {
			stale++
		}
	}
	mu.Unlock()
	if stale != 0 {
		t.Errorf("the resumed scheduler published %d triggers for shards it no longer held", stale)
	}
	if before == 0 {
		t.Error("the paused scheduler never published before its pause: the check is blind")
	}
	to := resumed.Add(4 * time.Second)
	c.waitSettled(to)
	c.checkExactlyOnce(ids, from, to)
}
