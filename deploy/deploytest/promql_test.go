package deploytest

import (
	"fmt"
	"slices"
	"testing"
)

// seriesNames returns the metric names a PromQL expression (of the dashboard
// or the rules) selects, in order of appearance. It is a small lexer, not a
// parser (Prometheus's would add the whole server to go.mod): strings, label
// matchers {…}, ranges […] and Grafana variables are skipped; an identifier
// followed by "(" is a function or an aggregation; by/without/on/ignoring/
// group_left/group_right take a label list; aggregation operators (sum,
// max, …) are never taken for series. promtool checks the syntax
// (make rules-check).
func seriesNames(expr string) ([]string, error) {
	var names []string
	s := []rune(expr)
	keywordList := map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}
	keyword := map[string]bool{"bool": true, "and": true, "or": true, "unless": true, "offset": true, "atan2": true, "inf": true, "nan": true,
		// aggregations, also when by/without comes before their "("
		"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true, "stdvar": true, "count": true,
		"count_values": true, "bottomk": true, "topk": true, "quantile": true, "limitk": true, "limit_ratio": true}
	isIdentStart := func(r rune) bool { return r == '_' || r == ':' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' }
	isIdent := func(r rune) bool { return isIdentStart(r) || r >= '0' && r <= '9' }
	skipSpace := func(i int) int {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
			i++
		}
		return i
	}
	// skipTo returns the index after the close matching the open at i.
	skipTo := func(i int, open, close rune) (int, error) {
		depth := 0
		for j := i; j < len(s); j++ {
			switch s[j] {
			case '"', '\'', '`':
				q := s[j]
				for j++; j < len(s) && s[j] != q; j++ {
					if s[j] == '\\' && q != '`' {
						j++
					}
				}
			case open:
				depth++
			case close:
				depth--
				if depth == 0 {
					return j + 1, nil
				}
			}
		}
		return 0, fmt.Errorf("unbalanced %c", open)
	}
	for i := 0; i < len(s); {
		r := s[i]
		switch {
		case r == '"' || r == '\'' || r == '`':
			j := i + 1
			for ; j < len(s) && s[j] != r; j++ {
				if s[j] == '\\' && r != '`' {
					j++
				}
			}
			if j >= len(s) {
				return nil, fmt.Errorf("unterminated string")
			}
			i = j + 1
		case r == '{':
			j, err := skipTo(i, '{', '}')
			if err != nil {
				return nil, err
			}
			i = j
		case r == '[':
			j, err := skipTo(i, '[', ']')
			if err != nil {
				return nil, err
			}
			i = j
		case r == '$': // a Grafana variable: $x, ${x}
			i++
			if i < len(s) && s[i] == '{' {
				j, err := skipTo(i, '{', '}')
				if err != nil {
					return nil, err
				}
				i = j
			}
			for i < len(s) && isIdent(s[i]) {
				i++
			}
		case r >= '0' && r <= '9' || r == '.': // a number, 1e3, 0x1f, a duration
			for i < len(s) && (isIdent(s[i]) || s[i] == '.') {
				i++
			}
		case isIdentStart(r):
			j := i
			for j < len(s) && isIdent(s[j]) {
				j++
			}
			word := string(s[i:j])
			next := skipSpace(j)
			switch {
			case keywordList[word]:
				if next < len(s) && s[next] == '(' {
					k, err := skipTo(next, '(', ')')
					if err != nil {
						return nil, err
					}
					j = k
				}
			case keyword[word]:
			case next < len(s) && s[next] == '(':
				// a function or an aggregation: its arguments follow
			default:
				names = append(names, word)
			}
			i = j
		default:
			i++
		}
	}
	return names, nil
}

func TestSeriesNames(t *testing.T) {
	for _, c := range []struct {
		expr string
		want []string
	}{
		{`up{job=~".*jetjob-scheduler.*"} == 0`, []string{"up"}},
		{`histogram_quantile(0.99, sum by (le, group) (rate(jetjob_run_start_lag_seconds_bucket{group=~"$group"}[$__rate_interval])))`,
			[]string{"jetjob_run_start_lag_seconds_bucket"}},
		{`sum(rate(a_total[5m])) by (le) / ignoring(x) group_left(y) b offset 1h > bool 1e3`, []string{"a_total", "b"}},
		{"max by (group) (x) > 0\nunless on (group)\ncount by (group) (y{lane=\"shared\"})", []string{"x", "y"}},
		{`(sum(jetjob_owned_shards) or vector(0)) == 0`, []string{"jetjob_owned_shards"}},
		{`time() - max(ts{a="}{"}) > 60`, []string{"ts"}},
		{`sum(rate(c[${__rate_interval}])) and on() d`, []string{"c", "d"}},
	} {
		got, err := seriesNames(c.expr)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("seriesNames(%q) = %q, %v; want %q", c.expr, got, err, c.want)
		}
	}
	if _, err := seriesNames(`sum(rate(x{a="b"[5m]))`); err == nil {
		t.Error("an unbalanced matcher was not refused")
	}
}
