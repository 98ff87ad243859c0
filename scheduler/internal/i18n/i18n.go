// Package i18n is the console's message catalogue: the words of its pages
// in English and Simplified Chinese, and the choice of one per request.
//
// A message's id is its English text ("Jobs", "Run %d"): templates read as
// English, and English needs no file of its own. zh-CN.json maps each id
// to its Chinese text; a translator edits that one file (docs/console.md,
// "Languages"). Arguments are fmt verbs, in the same order in both
// languages; there are no plural forms (Chinese has none, and the English
// texts are written to need none: "runs: %d").
package i18n

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Lang is a language of the console, as a BCP 47 tag.
type Lang string

// The console's languages.
const (
	English Lang = "en"
	Chinese Lang = "zh-CN"
)

// Langs are the console's languages, English (the default) first.
var Langs = []Lang{English, Chinese}

//go:embed zh-CN.json
var zhJSON []byte

// zh is the Chinese text by English id.
var zh = func() map[string]string {
	m := map[string]string{}
	if err := json.Unmarshal(zhJSON, &m); err != nil {
		panic("i18n: zh-CN.json: " + err.Error())
	}
	return m
}()

// Parse is the language a stored or submitted tag names: "en", "zh-CN"
// (also "zh" and the other Chinese tags Match takes), false for any other.
func Parse(tag string) (Lang, bool) {
	switch l := Lang(tag); {
	case l == English || l == Chinese:
		return l, true
	}
	if l, ok := match(tag); ok {
		return l, true
	}
	return "", false
}

// Name is the language's name in itself, for the language switch.
func (l Lang) Name() string {
	if l == Chinese {
		return "中文"
	}
	return "English"
}

// T is msg in l, formatted with args (fmt verbs) when there are any. An id
// the catalogue lacks shows in English, and is noted for Missing.
func (l Lang) T(msg string, args ...any) string {
	if l == Chinese {
		if s, ok := zh[msg]; ok {
			msg = s
		} else {
			noteMissing(msg)
		}
	}
	if len(args) == 0 {
		return msg
	}
	return fmt.Sprintf(msg, args...)
}

// Has reports whether the catalogue holds msg in l (English holds every
// id).
func (l Lang) Has(msg string) bool {
	if l == English {
		return true
	}
	_, ok := zh[msg]
	return ok
}

// IDs are the catalogue's ids, sorted.
func IDs() []string {
	out := make([]string, 0, len(zh))
	for k := range zh {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Negotiate is the language for a browser's Accept-Language header: the
// first Chinese or English range by quality, English when none is (or for
// an empty header).
func Negotiate(acceptLanguage string) Lang {
	best, bestQ := English, -1.0
	for _, part := range strings.Split(acceptLanguage, ",") {
		tag, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		q := 1.0
		if v, ok := strings.CutPrefix(strings.TrimSpace(params), "q="); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				continue
			}
			q = f
		}
		if q <= 0 || q <= bestQ {
			continue
		}
		if l, ok := match(strings.TrimSpace(tag)); ok {
			best, bestQ = l, q
		}
	}
	return best
}

// match maps a language tag to a console language: zh, zh-CN, zh-Hans,
// zh-SG (and any other zh-*: the console has one Chinese) to Chinese; en
// and en-* to English.
func match(tag string) (Lang, bool) {
	primary, _, _ := strings.Cut(strings.ToLower(tag), "-")
	switch primary {
	case "zh":
		return Chinese, true
	case "en":
		return English, true
	}
	return "", false
}

// missing are the ids asked for in Chinese that the catalogue lacks, for
// tests rendering every page in Chinese; bounded, as an id may come from
// a caller's mistake rather than from the source.
var missing = struct {
	sync.Mutex
	ids map[string]bool
}{ids: map[string]bool{}}

const maxMissing = 1000

func noteMissing(msg string) {
	missing.Lock()
	defer missing.Unlock()
	if len(missing.ids) < maxMissing {
		missing.ids[msg] = true
	}
}

// Missing are the ids T was asked for in Chinese and did not find since
// the process started, sorted.
func Missing() []string {
	missing.Lock()
	defer missing.Unlock()
	out := make([]string, 0, len(missing.ids))
	for k := range missing.ids {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
