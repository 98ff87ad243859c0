package flowkey

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, ok := range []string{"params", "params.tenant", "params.a.b_c.D-9", "params.0"} {
		if err := Parse(ok); err != nil {
			t.Errorf("Parse(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "param", "Params", "params.", "params..a", "params.a.", "paramsx",
		"params[0]", "params.a b", "params.ä", " params", "params.a.$", "tenant", "params." + strings.Repeat("a", MaxExprLen)} {
		if err := Parse(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("Parse(%q) = %v, want ErrInvalid", bad, err)
		}
	}
}

func TestEval(t *testing.T) {
	long := strings.Repeat("x", 256)
	sum := sha256.Sum256([]byte(long))
	hashed := "sha256:" + hex.EncodeToString(sum[:])
	edge := strings.Repeat("y", 255)
	for _, c := range []struct{ expr, params, want string }{
		{"params", `{"a": 1}`, `{"a": 1}`},
		{"params", "", ""},
		{"params", "not json", "not json"},
		{"params", long, hashed},
		{"params.tenant", `{"tenant":"acme"}`, "acme"},
		{"params.tenant", `{"tenant":"a\"b\u00e9"}`, `a"bé`},
		{"params.n", `{"n": 42}`, "42"},
		{"params.n", `{"n": 1.50}`, "1.50"},
		{"params.n", `{"n": 12345678901234567890}`, "12345678901234567890"},
		{"params.b", `{"b": true}`, "true"},
		{"params.o", `{"o": {"y": 2, "x": [1, 2]}}`, `{"y":2,"x":[1,2]}`},
		{"params.a", `{"a": [ 1, "two" ]}`, `[1,"two"]`},
		{"params.a.b.c", `{"a": {"b": {"c": "deep"}}}`, "deep"},
		{"params.a.b", `{"a": {"c": 1}}`, ""},
		{"params.a.b", `{"a": "str"}`, ""},
		{"params.a.b", `{"a": null}`, ""},
		{"params.missing", `{"a": 1}`, ""},
		{"params.a", `{"a": null}`, ""},
		{"params.a", `[1, 2]`, ""},
		{"params.a", `"text"`, ""},
		{"params.a", `null`, ""},
		{"params.a", ``, ""},
		{"params.a", `not json`, ""},
		{"params.a", `{"a": "` + long + `"}`, hashed},
		{"params.a", `{"a": "` + edge + `"}`, edge},
		{"params.a-b_c", `{"a-b_c": "k"}`, "k"},
		{"nonsense", `{"a": 1}`, ""},
	} {
		if got := Eval(c.expr, c.params); got != c.want {
			t.Errorf("Eval(%q, %q) = %q, want %q", c.expr, c.params, got, c.want)
		}
	}
}

// The whole params as a key (the commonest expression) costs no allocation.
func TestEvalWholeParamsAllocatesNothing(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { _ = Eval("params", `{"tenant":"acme"}`) }); n != 0 {
		t.Errorf("Eval(params) allocates %v times, want 0", n)
	}
}
