package schedule_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/jetjob/jetjob/shared/schedule"
)

func ExampleParse() {
	s, err := schedule.Parse("cron", "0 30 2 * * *", "America/New_York")
	if err != nil {
		panic(err)
	}
	// 2026-03-08 has no 02:30 in New York: that day's fire is at 03:00 EDT.
	for _, t := range s.NextN(time.Date(2026, 3, 7, 12, 0, 0, 0, time.UTC), 2) {
		fmt.Println(t, "=", t.In(s.Location()).Format("Jan 2 15:04 MST"))
	}
	// Output:
	// 2026-03-08 07:00:00 +0000 UTC = Mar 8 03:00 EDT
	// 2026-03-09 06:30:00 +0000 UTC = Mar 9 02:30 EDT
}

func ExampleParse_invalid() {
	_, err := schedule.Parse("fix_rate", "abc", "")
	fmt.Println(err)
	fmt.Println(errors.Is(err, schedule.ErrInvalid))
	// Output:
	// fix_rate interval "abc": want a duration like "30s" or a number of seconds
	// true
}
