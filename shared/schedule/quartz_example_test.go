package schedule_test

import (
	"fmt"
	"time"

	"github.com/jetjob/jetjob/shared/schedule"
)

func ExampleParse_quartz() {
	// The last Friday of each month at 10:15 (in Quartz, 6 is Friday).
	s, err := schedule.Parse("quartz", "0 15 10 ? * 6L", "Europe/Berlin")
	if err != nil {
		panic(err)
	}
	for _, t := range s.NextN(time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC), 2) {
		fmt.Println(t.In(s.Location()).Format("Mon Jan 2 15:04 MST"))
	}
	// Output:
	// Fri Jan 30 10:15 CET
	// Fri Feb 27 10:15 CET
}

func ExampleQuartzToCron() {
	fmt.Println(schedule.QuartzToCron("0 0 9 ? * 2-6"))
	fmt.Println(schedule.QuartzToCron("0 15 10 ? * 6L"))
	// Output:
	// 0 0 9 * * 1-5 true
	//  false
}
