package scheduler_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/worker"
)

// A quartz job fires through the whole system (planner, wheel, dispatch,
// worker) at the times its Quartz expression names, day-of-week numbers
// read the Quartz way (1 = Sunday).
func TestQuartzJobFires(t *testing.T) {
	t.Parallel()
	var rec record[time.Time]
	sys := startSystem(t, func(w *worker.Worker) {
		w.Handle("tick", func(ctx context.Context, j *worker.Job) error {
			rec.add(j.ScheduledAt)
			return nil
		})
	})
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	// Today and tomorrow in Berlin, in Quartz numbering, so that the test
	// also passes across midnight. Read as cron's 0 = Sunday, these would
	// be tomorrow and the day after, and nothing would fire today.
	today := time.Now().In(berlin).Weekday()
	expr := fmt.Sprintf("*/2 * * ? * %d,%d", today+1, (today+1)%7+1)
	ctx := context.Background()
	job := createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: "quartz", Handler: "tick",
		ScheduleType: "quartz", ScheduleExpr: expr, Timezone: "Europe/Berlin"})
	testwait.Eventually(t, 60*time.Second, "3 quartz fires", func() bool { return len(rec.all()) >= 3 })
	if _, err := sys.api.DisableJob(ctx, job.ID); err != nil {
		t.Fatal(err)
	}
	for _, at := range rec.all() {
		l := at.In(berlin)
		if l.Second()%2 != 0 || l.Nanosecond() != 0 {
			t.Errorf("%q fired for %s, not an even whole second", expr, at.Format(time.RFC3339Nano))
		}
		if wd := l.Weekday(); wd != today && wd != (today+1)%7 {
			t.Errorf("%q fired for %s, a %s", expr, at.Format(time.RFC3339), wd)
		}
	}
}
