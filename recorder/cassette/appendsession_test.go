package cassette

import (
	"bytes"
	"testing"

	"pgregory.net/rapid"

	"github.com/openmax/openmax/internal/rapidchecks"
)

// TestLiveSessionIncremental: the session text an appender writes, kept
// up to date item by item as commands and tool results are added and
// earlier ones change (a command re-anchored, refused), is at every step
// the text a fresh cache encodes from scratch.
func TestLiveSessionIncremental(t *testing.T) {
	rapidchecks.Use(t, 1000)
	rapid.Check(t, func(t *rapid.T) {
		var kept sessionCache
		s := &Session{SessionID: "s", Seed: 1}
		for step := range rapid.IntRange(1, 30).Draw(t, "steps") {
			switch op := rapid.IntRange(0, 4).Draw(t, "op"); {
			case op <= 1 || len(s.Commands) == 0:
				s.Commands = append(s.Commands, Command{Line: rapid.SampledFrom([]string{`{"cmd":"user","text":"hi"}`, "é\nx", "", " lead"}).Draw(t, "line"), Anchor: Anchor{Turn: step}})
			case op == 2:
				i := rapid.IntRange(0, len(s.Commands)-1).Draw(t, "changed")
				c := s.Commands
				s.Commands = append([]Command(nil), c...) // the recorder stages copies
				s.Commands[i].Anchor = Anchor{Turn: step, After: "token", Nth: rapid.IntRange(0, 3).Draw(t, "nth")}
				s.Commands[i].Refused = rapid.Bool().Draw(t, "refused")
			case op == 3:
				s.ToolResults = append(s.ToolResults, ToolResult{Name: "read", Args: `{"path":"a"}`, OK: true, Output: rapid.SampledFrom([]string{"x", "a\nb\n", "\n\nlead"}).Draw(t, "output")})
			default:
				s.Commands = s.Commands[:rapid.IntRange(0, len(s.Commands)).Draw(t, "cut")]
			}
			got, err := kept.liveSession(s)
			if err != nil {
				t.Fatal(err)
			}
			var fresh sessionCache
			want, err := fresh.liveSession(s)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("step %d: the incremental text differs from a fresh encoding:\n%s\nwant:\n%s", step, got, want)
			}
		}
	})
}
