package policy

import "testing"

// The strategy parsers take "" as the default, a listed value as itself,
// and refuse anything else naming the field and every value it accepts.
func TestParseStrategies(t *testing.T) {
	for _, c := range []struct {
		name, in, want, err string
		parse               func(string) (string, error)
	}{
		{"misfire default", "", "fire_once", "", asString(ParseMisfire)},
		{"misfire skip", "skip", "skip", "", asString(ParseMisfire)},
		{"misfire unknown", "later", "", `unknown misfire_policy "later" (want skip, fire_once or fire_all)`, asString(ParseMisfire)},
		{"route default", "", "any", "", asString(ParseRoute)},
		{"route lfu", "lfu", "lfu", "", asString(ParseRoute)},
		{"route unknown", "LFU", "", `unknown route_strategy "LFU" (want any, first, last, round, random, consistent_hash, lfu, lru, failover, busyover or sharding_broadcast)`, asString(ParseRoute)},
		{"block default", "", "serial", "", asString(ParseBlock)},
		{"block concurrent", "concurrent", "concurrent", "", asString(ParseBlock)},
		{"block unknown", "parallel", "", `unknown block_strategy "parallel" (want serial, discard_later, cover_early, buffer_one or concurrent)`, asString(ParseBlock)},
	} {
		got, err := c.parse(c.in)
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("%s: error %v, want %s", c.name, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: %q, %v; want %q", c.name, got, err, c.want)
		}
	}
}

func asString[T ~string](parse func(string) (T, error)) func(string) (string, error) {
	return func(s string) (string, error) {
		v, err := parse(s)
		return string(v), err
	}
}
