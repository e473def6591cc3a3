package core

import "testing"

func TestShellWord(t *testing.T) {
	cases := []struct{ in, want string }{
		{"tools/greet.sh", "tools/greet.sh"},
		{"my tools/a b.sh", "'my tools/a b.sh'"},
		{"it's.sh", `'it'\''s.sh'`},
		{"$(x).sh", "'$(x).sh'"},
		{"", "''"},
	}
	for _, c := range cases {
		if got := shellWord(c.in); got != c.want {
			t.Errorf("shellWord(%q) = %s, want %s", c.in, got, c.want)
		}
	}
}
