package i18n

import (
	"regexp"
	"slices"
	"testing"
)

func TestNegotiate(t *testing.T) {
	for _, tc := range []struct {
		header string
		want   Lang
	}{
		{"", English},
		{"zh-CN,zh;q=0.9,en;q=0.8", Chinese},
		{"zh", Chinese},
		{"zh-Hans", Chinese},
		{"ZH-hans-CN", Chinese},
		{"en-US,en;q=0.9", English},
		{"en-US,zh-CN;q=0.5", English},
		{"fr-FR,zh;q=0.7,en;q=0.5", Chinese},
		{"fr-FR,de;q=0.5", English},
		{"en;q=0.2,zh;q=0.8", Chinese},
		{"zh;q=0", English},
		{"zh;q=nonsense,en", English},
	} {
		if got := Negotiate(tc.header); got != tc.want {
			t.Errorf("Negotiate(%q) = %s, want %s", tc.header, got, tc.want)
		}
	}
}

func TestParse(t *testing.T) {
	for tag, want := range map[string]Lang{"en": English, "zh-CN": Chinese, "zh": Chinese, "zh-Hans": Chinese, "en-GB": English} {
		if got, ok := Parse(tag); !ok || got != want {
			t.Errorf("Parse(%q) = %s, %v; want %s", tag, got, ok, want)
		}
	}
	for _, tag := range []string{"", "fr", "chinese", "zh_CN!"} {
		if l, ok := Parse(tag); ok {
			t.Errorf("Parse(%q) = %s, want refused", tag, l)
		}
	}
}

// verbs are a message's fmt verbs, without explicit argument indexes
// (a translation may reorder them with %[2]d).
var verbRE = regexp.MustCompile(`%(\[\d+\])?[-+# 0]*\d*(\.\d+)?[a-zA-Z%]`)

func verbs(s string) []string {
	var out []string
	for _, v := range verbRE.FindAllString(s, -1) {
		out = append(out, regexp.MustCompile(`\[\d+\]`).ReplaceAllString(v, ""))
	}
	slices.Sort(out)
	return out
}

// TestChineseEntries: every Chinese text takes the same arguments as its
// English id, and none is empty by mistake.
func TestChineseEntries(t *testing.T) {
	emptyOK := map[string]bool{"s": true} // an English plural ending
	for _, id := range IDs() {
		zhText := Chinese.T(id)
		if zhText == "" && !emptyOK[id] {
			t.Errorf("%q: empty Chinese text", id)
		}
		if !slices.Equal(verbs(id), verbs(zhText)) {
			t.Errorf("%q: Chinese %q takes arguments %v, want %v", id, zhText, verbs(zhText), verbs(id))
		}
	}
	if got := Chinese.T("Run %d", 7); got != "运行 7" {
		t.Errorf(`Chinese.T("Run %%d", 7) = %q`, got)
	}
	if got := English.T("Run %d", 7); got != "Run 7" {
		t.Errorf(`English.T("Run %%d", 7) = %q`, got)
	}
}

func TestMissingIsNoted(t *testing.T) {
	const id = "a message no catalogue has"
	if got := Chinese.T(id); got != id {
		t.Errorf("missing id shows %q, want the English", got)
	}
	if !slices.Contains(Missing(), id) {
		t.Errorf("Missing() = %v, want it to hold %q", Missing(), id)
	}
}
