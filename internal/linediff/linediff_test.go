package linediff

import (
	"fmt"
	"strings"
	"testing"
)

func TestUnified(t *testing.T) {
	for _, tt := range []struct {
		name    string
		a, b    string
		changes int
		want    string
	}{
		{"identical", "x y", "x y", 0, "--- a\n+++ b\n(the normalised requests are identical)\n"},
		{"one line changed", "1 2 3 4 5 6 7 8 9", "1 2 3 4 five 6 7 8 9", 2,
			"--- a\n+++ b\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n"},
		{"a line added at the end", "1 2", "1 2 3", 1, "--- a\n+++ b\n@@ -1,2 +1,3 @@\n 1\n 2\n+3\n"},
		{"everything removed", "1 2", "", 3, "--- a\n+++ b\n@@ -1,2 +1 @@\n-1\n-2\n+\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ops := Lines(strings.Split(tt.a, " "), strings.Split(tt.b, " "))
			if n := Changes(ops); n != tt.changes {
				t.Errorf("%d changes, want %d", n, tt.changes)
			}
			if got := Unified(ops, "a", "b", 3); got != tt.want {
				t.Errorf("got\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

// TestLargeMiddle: past the LCS table's bound, the differing middle is
// shown removed then added, still bracketed by the common head and tail.
func TestLargeMiddle(t *testing.T) {
	var a, b []string
	a = append(a, "head")
	b = append(b, "head")
	for i := range 3000 {
		a = append(a, fmt.Sprint("a", i))
		b = append(b, fmt.Sprint("b", i))
	}
	a = append(a, "tail")
	b = append(b, "tail")
	ops := Lines(a, b)
	if Changes(ops) != 6000 || ops[0] != (Edit{' ', "head"}) || ops[1].Op != '-' || ops[3001].Op != '+' || ops[len(ops)-1] != (Edit{' ', "tail"}) {
		t.Errorf("%d changes; ops %v %v %v", Changes(ops), ops[0], ops[1], ops[len(ops)-1])
	}
}
