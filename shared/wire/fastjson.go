package wire

import (
	"bytes"
	"strconv"
	"time"
)

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
	return p.object(func(key []byte) (ok bool) {
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
			ok = enum(&p, &t.TriggerType)
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
			ok = enum(&p, &t.MisfirePolicy)
		case "misfire_threshold_ms":
			t.MisfireThresholdMS, ok = p.int()
		case "block_strategy":
			ok = enum(&p, &t.BlockStrategy)
		case "max_concurrency":
			ok = p.intInto(&t.MaxConcurrency)
		case "secrets":
			t.Secrets, ok = p.bool()
		}
		return ok
	}) && p.done()
}

// decodeEventsFast is decodeTriggerFast for an events message (the
// scheduler decodes one per batch of run events; events with messages that
// need escaping leave the whole batch to encoding/json).
func decodeEventsFast(data []byte, m *Events) bool {
	p := fastParser{b: data}
	return p.object(func(key []byte) bool {
		switch string(key) {
		case "v":
			return p.intInto(&m.V)
		case "events":
			return p.events(&m.Events)
		}
		return false
	}) && p.done()
}

func (p *fastParser) events(out *[]Event) bool {
	if !p.byte('[') {
		return false
	}
	// Room for every event at once: a message carries tens of them, and
	// growing the slice by doubling allocated twice their size. Each
	// event has one "kind" key (a count that a message text may inflate,
	// which costs only capacity).
	*out = make([]Event, 0, bytes.Count(p.b[p.i:], kindKey)) // empty, not nil, as encoding/json leaves "[]"
	if p.byte(']') {
		return true
	}
	for {
		var e Event
		if !p.event(&e) {
			return false
		}
		*out = append(*out, e)
		if p.byte(']') {
			return true
		}
		if !p.byte(',') {
			return false
		}
	}
}

func (p *fastParser) event(e *Event) bool {
	return p.object(func(key []byte) (ok bool) {
		switch string(key) {
		case "kind":
			ok = enum(p, &e.Kind)
		case "run_id":
			e.RunID, ok = p.int()
		case "job_id":
			e.JobID, ok = p.int()
		case "worker_id":
			e.WorkerID, ok = p.string()
		case "status":
			ok = enum(p, &e.Status)
		case "message":
			e.Message, ok = p.string()
		case "at":
			e.At, ok = p.time()
		case "scheduled_at":
			e.ScheduledAt, ok = p.time()
		case "trigger_seq":
			var n int64
			n, ok = p.int()
			e.TriggerSeq = uint64(n)
		case "triggered_at":
			e.TriggeredAt, ok = p.time()
		}
		return ok
	})
}

// fastParser reads the compact JSON decodeTriggerFast accepts.
// kindKey opens every event of an events message.
var kindKey = []byte(`"kind"`)

type fastParser struct {
	b []byte
	i int
}

func (p *fastParser) done() bool { return p.i == len(p.b) }

// object reads one object, calling field after each key and its colon to
// read the value; field returns false for a key it does not know or a
// value it cannot read.
func (p *fastParser) object(field func(key []byte) bool) bool {
	if !p.byte('{') {
		return false
	}
	if p.byte('}') {
		return true
	}
	for {
		key, ok := p.str()
		if !ok || !p.byte(':') || !field(key) {
			return false
		}
		if p.byte('}') {
			return true
		}
		if !p.byte(',') {
			return false
		}
	}
}

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

// enum reads a string into one of the string types of a message (a kind,
// a status, a policy).
func enum[T ~string](p *fastParser, dst *T) bool {
	s, ok := p.string()
	*dst = T(s)
	return ok
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

// bool reads a JSON true or false.
func (p *fastParser) bool() (bool, bool) {
	for _, lit := range []string{"true", "false"} {
		if bytes.HasPrefix(p.b[p.i:], []byte(lit)) {
			p.i += len(lit)
			return lit == "true", true
		}
	}
	return false, false
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

// encodeTriggerFast returns what json.Marshal(t) writes, byte for byte,
// when every string is plain ASCII without characters JSON or
// encoding/json escape and the time is UTC in years 0–9999; false
// otherwise (the caller then uses json.Marshal).
func encodeTriggerFast(t *Trigger) ([]byte, bool) {
	if t.Script != nil || t.Flow != nil || t.Map != nil {
		return nil, false // a nested object: encoding/json writes it
	}
	w := fastWriter{b: make([]byte, 0, 320), ok: true}
	w.int(`{"v":`, int64(t.V))
	w.int(`,"run_id":`, t.RunID)
	w.int(`,"job_id":`, t.JobID)
	w.str(`,"group":`, t.Group)
	w.str(`,"handler":`, t.Handler)
	w.optStr(`,"params":`, t.Params)
	w.str(`,"trigger_type":`, string(t.TriggerType))
	w.time(`,"scheduled_at":`, t.ScheduledAt)
	w.int(`,"attempt":`, int64(t.Attempt))
	w.int(`,"shard_index":`, int64(t.ShardIndex))
	w.int(`,"shard_total":`, int64(t.ShardTotal))
	w.optInt(`,"timeout_ms":`, t.TimeoutMS)
	w.optStr(`,"misfire_policy":`, string(t.MisfirePolicy))
	w.optInt(`,"misfire_threshold_ms":`, t.MisfireThresholdMS)
	w.optStr(`,"block_strategy":`, string(t.BlockStrategy))
	w.optInt(`,"max_concurrency":`, int64(t.MaxConcurrency))
	if t.Secrets {
		w.b = append(w.b, `,"secrets":true`...)
	}
	w.b = append(w.b, '}')
	return w.b, w.ok
}

// encodeEventsFast is encodeTriggerFast for an events message.
func encodeEventsFast(evs []Event) ([]byte, bool) {
	w := fastWriter{b: make([]byte, 0, 64+len(evs)*256), ok: true}
	w.int(`{"v":`, Version)
	w.b = append(w.b, `,"events":[`...)
	for i := range evs {
		e := &evs[i]
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.str(`{"kind":`, string(e.Kind))
		w.int(`,"run_id":`, e.RunID)
		w.int(`,"job_id":`, e.JobID)
		w.optStr(`,"worker_id":`, e.WorkerID)
		w.str(`,"status":`, string(e.Status))
		w.optStr(`,"message":`, e.Message)
		w.time(`,"at":`, e.At)
		w.optTime(`,"scheduled_at":`, e.ScheduledAt)
		if e.TriggerSeq != 0 {
			w.b = append(w.b, `,"trigger_seq":`...)
			w.b = strconv.AppendUint(w.b, e.TriggerSeq, 10)
		}
		w.optTime(`,"triggered_at":`, e.TriggeredAt)
		if len(e.Output) > 0 || len(e.Map) > 0 {
			w.ok = false // a node's output, a map's items: encoding/json writes them (compacted)
		}
		w.b = append(w.b, '}')
	}
	w.b = append(w.b, ']', '}')
	return w.b, w.ok
}

// fastWriter appends compact JSON; ok turns false at the first value it
// cannot write as encoding/json would.
type fastWriter struct {
	b  []byte
	ok bool
}

// Each writes key (the punctuation before the value and the quoted name)
// and then the value.

func (w *fastWriter) int(key string, n int64) {
	w.b = strconv.AppendInt(append(w.b, key...), n, 10)
}

func (w *fastWriter) str(key, s string) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			w.ok = false
			return
		}
	}
	w.b = append(append(append(append(w.b, key...), '"'), s...), '"')
}

// optStr, optInt and optTime leave out a zero value, as omitempty does.

func (w *fastWriter) optStr(key, s string) {
	if s != "" {
		w.str(key, s)
	}
}

func (w *fastWriter) optInt(key string, n int64) {
	if n != 0 {
		w.int(key, n)
	}
}

func (w *fastWriter) optTime(key string, t time.Time) {
	if !t.IsZero() {
		w.time(key, t)
	}
}

// time writes UTC times only ("Z"): an offset is left to encoding/json.
func (w *fastWriter) time(key string, t time.Time) {
	if _, off := t.Zone(); off != 0 {
		w.ok = false
		return
	}
	if y := t.Year(); y < 0 || y > 9999 {
		w.ok = false
		return
	}
	w.b = append(append(w.b, key...), '"')
	w.b = t.AppendFormat(w.b, time.RFC3339Nano)
	w.b = append(w.b, '"')
}
