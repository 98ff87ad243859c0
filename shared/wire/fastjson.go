package wire

import "time"

// decodeTriggerFast decodes the common shape of a trigger message — the one
// EncodeTrigger writes: a flat, compact object of the fields of Trigger with
// integer numbers, strings without escapes and UTC RFC 3339 times — without
// reflection. It reports false for anything else (whitespace, escapes, a
// null, a float, an unknown key, a zoned time…), and the caller then
// decodes with encoding/json, so it only ever has to be right about what it
// accepts: a worker decodes one trigger per run, and encoding/json's
// reflection and its deep stack (grown afresh in each run's goroutine) were
// a sixth of a busy worker's CPU.
func decodeTriggerFast(data []byte, t *Trigger) bool {
	p := fastParser{b: data}
	if !p.byte('{') {
		return false
	}
	if p.byte('}') {
		return p.done()
	}
	for {
		key, ok := p.str()
		if !ok || !p.byte(':') {
			return false
		}
		switch string(key) {
		case "v":
			ok = p.intInto(&t.V)
		case "run_id":
			t.RunID, ok = p.int()
		case "job_id":
			t.JobID, ok = p.int()
		case "group":
			t.Group, ok = p.string()
		case "handler":
			t.Handler, ok = p.string()
		case "params":
			t.Params, ok = p.string()
		case "trigger_type":
			var s string
			s, ok = p.string()
			t.TriggerType = TriggerType(s)
		case "scheduled_at":
			t.ScheduledAt, ok = p.time()
		case "attempt":
			ok = p.intInto(&t.Attempt)
		case "shard_index":
			ok = p.intInto(&t.ShardIndex)
		case "shard_total":
			ok = p.intInto(&t.ShardTotal)
		case "timeout_ms":
			t.TimeoutMS, ok = p.int()
		case "misfire_policy":
			t.MisfirePolicy, ok = p.string()
		case "misfire_threshold_ms":
			t.MisfireThresholdMS, ok = p.int()
		case "block_strategy":
			t.BlockStrategy, ok = p.string()
		default:
			return false
		}
		if !ok {
			return false
		}
		if p.byte('}') {
			return p.done()
		}
		if !p.byte(',') {
			return false
		}
	}
}

// fastParser reads the compact JSON decodeTriggerFast accepts.
type fastParser struct {
	b []byte
	i int
}

func (p *fastParser) done() bool { return p.i == len(p.b) }

func (p *fastParser) byte(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// str returns the raw bytes of a string without escapes or control
// characters (encoding/json would have to unescape or reject those).
func (p *fastParser) str() ([]byte, bool) {
	if !p.byte('"') {
		return nil, false
	}
	start := p.i
	for p.i < len(p.b) {
		switch c := p.b[p.i]; {
		case c == '"':
			s := p.b[start:p.i]
			p.i++
			return s, true
		case c == '\\' || c < 0x20 || c >= 0x80:
			// Escapes, control characters and non-ASCII (which encoding/json
			// checks for valid UTF-8) are left to encoding/json.
			return nil, false
		}
		p.i++
	}
	return nil, false
}

func (p *fastParser) string() (string, bool) {
	s, ok := p.str()
	return string(s), ok
}

// int reads an integer without sign, fraction or exponent that fits int64.
func (p *fastParser) int() (int64, bool) {
	start := p.i
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	digits := p.b[start:p.i]
	if len(digits) == 0 || len(digits) > 18 || (len(digits) > 1 && digits[0] == '0') {
		return 0, false
	}
	var n int64
	for _, c := range digits {
		n = n*10 + int64(c-'0')
	}
	return n, true
}

func (p *fastParser) intInto(dst *int) bool {
	n, ok := p.int()
	if ok && int64(int(n)) != n {
		return false
	}
	*dst = int(n)
	return ok
}

// time reads "YYYY-MM-DDTHH:MM:SS[.fraction]Z" in years 1970–9999.
func (p *fastParser) time() (time.Time, bool) {
	s, ok := p.str()
	if !ok || len(s) < len("2006-01-02T15:04:05Z") || s[len(s)-1] != 'Z' ||
		s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' {
		return time.Time{}, false
	}
	num := func(b []byte) (int, bool) {
		n := 0
		for _, c := range b {
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + int(c-'0')
		}
		return n, true
	}
	year, ok1 := num(s[0:4])
	month, ok2 := num(s[5:7])
	day, ok3 := num(s[8:10])
	hour, ok4 := num(s[11:13])
	minute, ok5 := num(s[14:16])
	sec, ok6 := num(s[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || year < 1970 || month < 1 || month > 12 ||
		day < 1 || day > daysIn(year, month) || hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, false
	}
	nsec := 0
	if frac := s[19 : len(s)-1]; len(frac) > 0 {
		// RFC 3339 allows any number of digits; encoding/json's time parsing
		// takes up to nine.
		if frac[0] != '.' || len(frac) < 2 || len(frac) > 10 {
			return time.Time{}, false
		}
		n, ok := num(frac[1:])
		if !ok {
			return time.Time{}, false
		}
		for range 10 - len(frac) {
			n *= 10
		}
		nsec = n
	}
	days := daysSinceEpoch(year, month, day)
	return time.Unix(days*86400+int64(hour*3600+minute*60+sec), int64(nsec)).UTC(), true
}

func isLeap(y int) bool { return y%4 == 0 && (y%100 != 0 || y%400 == 0) }

func daysIn(y, m int) int {
	switch m {
	case 2:
		if isLeap(y) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysSinceEpoch counts the days from 1970-01-01 to y-m-d (proleptic
// Gregorian; Howard Hinnant's days_from_civil).
func daysSinceEpoch(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era*146097 + doe - 719468)
}
