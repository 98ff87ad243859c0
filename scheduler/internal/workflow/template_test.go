package workflow

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestCheckParams(t *testing.T) {
	g := mk(t, "extract>load", "side", "extract>each")
	g.Nodes[3].ForEach = "nodes.extract.output.files"
	cases := []struct {
		node, text, want string // want: in the error; "": accepted
	}{
		{"load", `{"rows": {{ .nodes.extract.output.rows }}}`, ""},
		{"load", `plain text`, ""},
		{"load", `{{ json .nodes.extract.output }} {{ .params.day }} {{ .scheduled_at }}`, ""},
		{"load", `{{ if .nodes.extract.output.ok }}{{ $.params.x }}{{ end }}`, ""},
		{"each", `{{ .item }}`, ""},
		{"load", `{{ .nodes.side.output }}`, `node "load": params use node "side", which is not upstream of it`},
		{"extract", `{{ .nodes.load.output }}`, `params use node "load", which is not upstream`},
		{"load", `{{ range .nodes.side.output.list }}x{{ end }}`, `node "side", which is not upstream`},
		{"load", `{{ .nodes.extract.status }}`, `a node offers .output`},
		{"load", `{{ .nodes }}`, `name a node`},
		{"load", `{{ .item }}`, `the node has no for_each`},
		{"load", `{{ .secrets.db }}`, `params use .secrets`},
		{"load", `{{ .params.x `, `params:`},
	}
	for _, c := range cases {
		err := CheckParams(g, c.node, c.text)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s %q refused: %v", c.node, c.text, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s %q: %v, want an error saying %q", c.node, c.text, err, c.want)
		}
	}
}

func TestRenderParams(t *testing.T) {
	in := Inputs{
		Params:      json.RawMessage(`{"day": "2026-11-26"}`),
		ScheduledAt: time.Date(2026, 11, 27, 2, 0, 0, 0, time.FixedZone("CST", 8*3600)),
		Outputs:     map[string]json.RawMessage{"extract": json.RawMessage(`{"rows": 9007199254740993, "files": ["a", "b"]}`)},
		Item:        json.RawMessage(`"a"`),
	}
	got, err := RenderParams(`{{ .params.day }} {{ .scheduled_at }} {{ .nodes.extract.output.rows }} {{ json .nodes.extract.output.files }} {{ .item }}`, in)
	if err != nil {
		t.Fatal(err)
	}
	if want := `2026-11-26 2026-11-26T18:00:00Z 9007199254740993 ["a","b"] a`; got != want {
		t.Errorf("rendered %q, want %q", got, want)
	}
	if _, err := RenderParams(`{{ .nodes.extract.output.missing }}`, in); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("a missing key: %v", err)
	}
	big := Inputs{Outputs: map[string]json.RawMessage{"a": json.RawMessage(`"` + strings.Repeat("x", 40<<10) + `"`)}}
	if _, err := RenderParams(`{{ .nodes.a.output }}{{ .nodes.a.output }}`, big); err == nil || !strings.Contains(err.Error(), "over 65536 bytes") {
		t.Errorf("params past the bound: %v", err)
	}
	if got, _ := RenderParams(`no template`, Inputs{}); got != "no template" {
		t.Errorf("plain params changed: %q", got)
	}
}

func TestRefItems(t *testing.T) {
	out := json.RawMessage(`{"files": [{"name": "a"}, 2, "c"], "n": 3, "deep": {"list": [[1, 2]]}}`)
	items, err := mustRef(t, "nodes.x.output.files").Items(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 3 || string(items[0]) != `{"name":"a"}` || string(items[2]) != `"c"` {
		t.Errorf("items %s", items)
	}
	if v, err := mustRef(t, "nodes.x.output.deep.list.0.1").Lookup(out); err != nil || v.(json.Number) != "2" {
		t.Errorf("deep lookup: %v %v", v, err)
	}
	for ref, want := range map[string]string{
		"nodes.x.output.n":         "a number, not a list",
		"nodes.x.output.missing":   `no key "missing"`,
		"nodes.x.output.files.9":   "not an index of a list of 3",
		"nodes.x.output.n.deeper":  `"deeper" of a number`,
		"nodes.x.output.files.x.y": "not an index",
	} {
		if _, err := mustRef(t, ref).Items(out); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", ref, err, want)
		}
	}
	long := `[` + strings.Repeat(`1,`, MaxForEach) + `1]`
	if _, err := mustRef(t, "nodes.x.output").Items(json.RawMessage(long)); err == nil || !strings.Contains(err.Error(), "at most 1000") {
		t.Errorf("over the bound: %v", err)
	}
	if _, err := mustRef(t, "nodes.x.output").Items(nil); err == nil || !strings.Contains(err.Error(), "set no output") {
		t.Errorf("no output: %v", err)
	}
	for _, bad := range []string{"x.output", "nodes.x", "nodes..output", "nodes.x.output.", "nodes.x.result.a"} {
		if _, err := ParseRef(bad); err == nil {
			t.Errorf("ParseRef(%q) accepted", bad)
		}
	}
}

func mustRef(t *testing.T, s string) Ref {
	t.Helper()
	r, err := ParseRef(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
