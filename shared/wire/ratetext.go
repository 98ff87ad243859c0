package wire

import (
	"strconv"
	"strings"
)

// String writes r as a user reads and writes it ("100/1m", "5/1m30s",
// "1/250ms"; ParseRate reads it back), "" for no limit (Count 0): the API,
// the console, job files and run messages show a rate so.
func (r Rate) String() string {
	if r.Count == 0 {
		return ""
	}
	p := r.Period().String()
	// 1h0m0s reads 1h, 1m0s 1m.
	if strings.HasSuffix(p, "m0s") {
		p = strings.TrimSuffix(p, "0s")
	}
	if strings.HasSuffix(p, "h0m") {
		p = strings.TrimSuffix(p, "0m")
	}
	return strconv.Itoa(r.Count) + "/" + p
}

// CanonicalRate is s as String writes it when it parses, else s unchanged
// (its error is the caller's to report).
func CanonicalRate(s string) string {
	r, err := ParseRate(s)
	if err != nil {
		return s
	}
	return r.String()
}
