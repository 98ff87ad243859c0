package schedule

import "testing"

// TestDST pins the documented rule with real zones, both transitions:
// a time skipped by spring-forward fires at the first instant after the gap,
// a time repeated by fall-back fires once, at its first occurrence.
//
// America/New_York 2026: spring forward on Mar 8 at 07:00Z (02:00 EST becomes
// 03:00 EDT), fall back on Nov 1 at 06:00Z (02:00 EDT becomes 01:00 EST).
// Europe/Berlin 2026: spring forward on Mar 29 at 01:00Z (02:00 CET becomes
// 03:00 CEST), fall back on Oct 25 at 01:00Z (03:00 CEST becomes 02:00 CET).
func TestDST(t *testing.T) {
	const ny, berlin = "America/New_York", "Europe/Berlin"
	checkNext(t, "cron", []nextCase{
		// New York, spring forward
		{"NY gap time fires at 03:00 EDT", "0 30 2 * * *", ny, "2026-03-07T12:00:00Z",
			"2026-03-08T07:00:00Z 2026-03-09T06:30:00Z 2026-03-10T06:30:00Z"},
		{"NY gap start fires at 03:00 EDT", "0 0 2 * * *", ny, "2026-03-07T12:00:00Z",
			"2026-03-08T07:00:00Z 2026-03-09T06:00:00Z"},
		{"NY gap fire is not repeated", "0 30 2 * * *", ny, "2026-03-08T07:00:00Z",
			"2026-03-09T06:30:00Z"},
		{"NY gap times collapse into one fire", "0 */15 * * * *", ny, "2026-03-08T06:40:00Z",
			"2026-03-08T06:45:00Z 2026-03-08T07:00:00Z 2026-03-08T07:15:00Z"},
		{"NY gap with seconds", "*/20 59 2 * * *", ny, "2026-03-08T06:00:00Z",
			"2026-03-08T07:00:00Z 2026-03-09T06:59:00Z"},
		{"NY hourly over spring forward", "@hourly", ny, "2026-03-08T05:30:00Z",
			"2026-03-08T06:00:00Z 2026-03-08T07:00:00Z 2026-03-08T08:00:00Z"},
		{"NY 03:00 itself fires once", "0 0 2,3 * * *", ny, "2026-03-08T06:30:00Z",
			"2026-03-08T07:00:00Z 2026-03-09T06:00:00Z"},

		// New York, fall back
		{"NY repeated time fires once", "0 30 1 * * *", ny, "2026-10-31T12:00:00Z",
			"2026-11-01T05:30:00Z 2026-11-02T06:30:00Z"},
		{"NY after the first 01:30", "0 30 1 * * *", ny, "2026-11-01T05:30:00Z",
			"2026-11-02T06:30:00Z"},
		{"NY from inside the second pass", "0 30 1 * * *", ny, "2026-11-01T06:10:00Z",
			"2026-11-02T06:30:00Z"},
		{"NY sub-hourly skips the second pass", "0 */15 * * * *", ny, "2026-11-01T05:40:00Z",
			"2026-11-01T05:45:00Z 2026-11-01T07:00:00Z 2026-11-01T07:15:00Z"},
		{"NY sub-hourly from inside the second pass", "0 */15 * * * *", ny, "2026-11-01T06:59:59.5Z",
			"2026-11-01T07:00:00Z"},
		{"NY just before the clock goes back", "0 */15 * * * *", ny, "2026-11-01T05:59:59.999Z",
			"2026-11-01T07:00:00Z"},
		{"NY hourly over fall back", "@hourly", ny, "2026-11-01T04:30:00Z",
			"2026-11-01T05:00:00Z 2026-11-01T07:00:00Z 2026-11-01T08:00:00Z"},
		{"NY time after the overlap", "0 30 2 * * *", ny, "2026-10-31T12:00:00Z",
			"2026-11-01T07:30:00Z 2026-11-02T07:30:00Z"},

		// Berlin
		{"Berlin gap time fires at 03:00 CEST", "0 30 2 * * *", berlin, "2026-03-28T12:00:00Z",
			"2026-03-29T01:00:00Z 2026-03-30T00:30:00Z"},
		{"Berlin repeated time fires once", "0 30 2 * * *", berlin, "2026-10-24T12:00:00Z",
			"2026-10-25T00:30:00Z 2026-10-26T01:30:00Z"},
		{"Berlin from inside the second pass", "0 30 2 * * *", berlin, "2026-10-25T01:10:00Z",
			"2026-10-26T01:30:00Z"},
		{"Berlin every minute over fall back", "0 58-59,0-1 2,3 * * *", berlin, "2026-10-25T00:57:30Z",
			"2026-10-25T00:58:00Z 2026-10-25T00:59:00Z 2026-10-25T02:00:00Z 2026-10-25T02:01:00Z 2026-10-25T02:58:00Z"},
	})
}

// TestDSTOddZones covers transitions that are not one hour.
func TestDSTOddZones(t *testing.T) {
	checkNext(t, "cron", []nextCase{
		// Lord Howe Island moves its clocks by 30 minutes. 2026-04-05:
		// 02:00 (+11) becomes 01:30 (+10:30) at 2026-04-04T15:00Z;
		// 2026-10-04: 02:00 (+10:30) becomes 02:30 (+11) at
		// 2026-10-03T15:30Z.
		{"Lord Howe half-hour overlap", "0 45 1 * * *", "Australia/Lord_Howe", "2026-04-04T12:00:00Z",
			"2026-04-04T14:45:00Z 2026-04-05T15:15:00Z"},
		{"Lord Howe half-hour gap", "0 15 2 * * *", "Australia/Lord_Howe", "2026-10-03T12:00:00Z",
			"2026-10-03T15:30:00Z 2026-10-04T15:15:00Z"},
		// Samoa skipped 2011-12-30 entirely (-10 to +14 at 10:00Z): that
		// day's noon fires at the transition, local midnight of Dec 31.
		{"Samoa skipped day", "0 0 12 * * *", "Pacific/Apia", "2011-12-29T12:00:00Z",
			"2011-12-29T22:00:00Z 2011-12-30T10:00:00Z 2011-12-30T22:00:00Z"},
		// Sao Paulo moved its clocks at midnight: 2018-11-04 00:00 (-03)
		// became 01:00 (-02) at 03:00Z, so that day had no midnight.
		{"Sao Paulo missing midnight", "@daily", "America/Sao_Paulo", "2018-11-03T12:00:00Z",
			"2018-11-04T03:00:00Z 2018-11-05T02:00:00Z"},
	})
}
