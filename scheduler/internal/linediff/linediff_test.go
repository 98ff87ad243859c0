package linediff

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// apply rebuilds both texts from an edit script: it must give back a and
// b exactly, or the diff shown to a user lies.
func apply(ed []Line) (a, b []string) {
	for _, l := range ed {
		if l.Op != Insert {
			a = append(a, l.Text)
		}
		if l.Op != Delete {
			b = append(b, l.Text)
		}
	}
	return a, b
}

func TestUnifiedLikeDiffU(t *testing.T) {
	a := "#!/bin/bash\necho start\nstep 1\nstep 2\nstep 3\nstep 4\nstep 5\nstep 6\nstep 7\necho done\n"
	b := "#!/bin/bash\necho begin\nstep 1\nstep 2\nstep 3\nstep 4\nstep 5\nstep 6\nstep 7\necho done\nexit 0\n"
	want := `--- v1
+++ v2
@@ -1,5 +1,5 @@
 #!/bin/bash
-echo start
+echo begin
 step 1
 step 2
 step 3
@@ -8,3 +8,4 @@
 step 6
 step 7
 echo done
+exit 0
`
	if got := Unified("v1", "v2", a, b, 3); got != want {
		t.Fatalf("diff:\n%s\nwant (as diff -u writes it):\n%s", got, want)
	}
	if got := Unified("v1", "v2", a, a, 3); got != "" {
		t.Fatalf("equal texts gave a diff:\n%s", got)
	}
	if got := Unified("v1", "v2", "", "x\n", 3); got != "--- v1\n+++ v2\n@@ -0,0 +1 @@\n+x\n" {
		t.Fatalf("diff from empty:\n%s", got)
	}
}

func TestCompareMinimalAndFaithful(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	words := []string{"a", "b", "c", "d"}
	for n := range 300 {
		var a, b []string
		for range r.IntN(12) {
			a = append(a, words[r.IntN(len(words))])
		}
		for range r.IntN(12) {
			b = append(b, words[r.IntN(len(words))])
		}
		ed := Compare(a, b)
		ga, gb := apply(ed)
		if strings.Join(ga, ",") != strings.Join(a, ",") || strings.Join(gb, ",") != strings.Join(b, ",") {
			t.Fatalf("case %d: %v / %v: the edit script rebuilds %v / %v", n, a, b, ga, gb)
		}
		kept := 0
		for _, l := range ed {
			if l.Op == Equal {
				kept++
			}
		}
		if want := lcs(a, b); kept != want {
			t.Fatalf("case %d: %v / %v keeps %d lines, an LCS has %d", n, a, b, kept, want)
		}
	}
}

// lcs is the length of a longest common subsequence, by plain recursion.
func lcs(a, b []string) int {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	if a[0] == b[0] {
		return 1 + lcs(a[1:], b[1:])
	}
	return max(lcs(a[1:], b), lcs(a, b[1:]))
}
