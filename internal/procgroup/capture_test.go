package procgroup_test

import (
	"testing"

	"github.com/openmax/openmax/internal/procgroup"
)

func TestCapture(t *testing.T) {
	tests := []struct {
		name   string
		max    int
		writes []string
		kept   string
		total  int
	}{
		{"under", 10, []string{"ab", "cd"}, "abcd", 4},
		{"exactly", 4, []string{"ab", "cd"}, "abcd", 4},
		{"cut inside a write", 3, []string{"ab", "cd"}, "abc", 4},
		{"writes after full", 2, []string{"ab", "cd", "ef"}, "ab", 6},
		{"zero keeps nothing", 0, []string{"ab"}, "", 2},
		{"nothing written", 5, nil, "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &procgroup.Capture{Max: tc.max}
			for _, w := range tc.writes {
				if n, err := c.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", w, n, err)
				}
			}
			if got := string(c.Kept()); got != tc.kept {
				t.Errorf("Kept = %q, want %q", got, tc.kept)
			}
			if got := c.Total(); got != tc.total {
				t.Errorf("Total = %d, want %d", got, tc.total)
			}
		})
	}
}
