package cassette

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	vcr "github.com/dnaeon/go-vcr/v2/cassette"
	"github.com/openmax/openmax/core/harness"
	"github.com/openmax/openmax/internal/rapidchecks"
	"pgregory.net/rapid"
)

// sessionBefore is Session as it was before reloads were kept: the bytes
// a cassette without reloads is written as must not have changed.
type sessionBefore struct {
	SessionID   string          `yaml:"session_id"`
	Imported    bool            `yaml:"imported,omitempty"`
	Seed        uint64          `yaml:"seed"`
	Config      *harness.Config `yaml:"config,omitempty"`
	Args        []string        `yaml:"args,omitempty"`
	Commands    []Command       `yaml:"commands"`
	Tools       []Tool          `yaml:"tools,omitempty"`
	ToolResults []ToolResult    `yaml:"tool_results,omitempty"`
	Hooks       []HookCall      `yaml:"hooks,omitempty"`
}

func randomTools(t *rapid.T, label string) []Tool {
	var out []Tool
	for i := range rapid.IntRange(0, 3).Draw(t, label+"#") {
		tl := Tool{Name: text(t, fmt.Sprintf("%s%d.name", label, i)), Description: text(t, "desc"), Schema: text(t, "schema"), Mutating: rapid.Bool().Draw(t, "mut")}
		if rapid.Bool().Draw(t, "source") {
			tl.Mutating = true
			tl.Source = &ToolSource{Env: []string{text(t, "env")}, Detail: text(t, "detail")}
			if rapid.Bool().Draw(t, "check") {
				tl.Source.Checks = []SourceCheck{{Path: text(t, "path"), SHA: "ab", Error: text(t, "err")}}
			}
		}
		out = append(out, tl)
	}
	return out
}

func randomSession(t *rapid.T) *Session {
	s := &Session{SessionID: text(t, "sid"), Seed: rapid.Uint64().Draw(t, "seed"), Imported: rapid.Bool().Draw(t, "imported"), Commands: []Command{}}
	for i := range rapid.IntRange(0, 3).Draw(t, "commands") {
		s.Commands = append(s.Commands, Command{Line: text(t, fmt.Sprintf("line%d", i)), Anchor: Anchor{Turn: i, After: "done"}, Refused: rapid.Bool().Draw(t, "refused")})
	}
	s.Tools = randomTools(t, "tools")
	if rapid.Bool().Draw(t, "results") {
		s.ToolResults = []ToolResult{{Name: text(t, "rname"), Args: text(t, "args"), OK: true, Output: text(t, "out")}}
	}
	if rapid.Bool().Draw(t, "hooks") {
		s.Hooks = []HookCall{{Event: "turn_end", Payload: text(t, "payload"), Refused: true, Hook: "h", Reason: text(t, "reason")}}
	}
	return s
}

// TestRapidSessionWithoutReloadsIsUnchanged: a session that kept no
// reload is written byte for byte as before reloads were kept (no
// reloads key), and reads back as itself.
func TestRapidSessionWithoutReloadsIsUnchanged(t *testing.T) {
	rapidchecks.Use(t, rapidchecks.Pick(100, 20))
	rapid.Check(t, func(t *rapid.T) {
		s := randomSession(t)
		got, err := sessionText(s)
		if err != nil {
			t.Fatal(err)
		}
		want, err := encodeYAML(struct {
			S *sessionBefore `yaml:"openmax"`
		}{&sessionBefore{s.SessionID, s.Imported, s.Seed, s.Config, s.Args, s.Commands, s.Tools, s.ToolResults, s.Hooks}})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("a session without reloads is written otherwise than before:\n%s---\n%s", got, want)
		}
		f, err := Parse(append([]byte("version: 1\ninteractions: []\n"), got...))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(f.Session, s) {
			t.Fatalf("reads back as %+v, want %+v", f.Session, s)
		}
	})
}

// A session's reloads are written, read back (by Parse, and from the
// recorder's live layout), ignored by stock go-vcr, and deep-copied by
// Clone.
func TestSessionReloads(t *testing.T) {
	cases := []struct {
		name    string
		reloads []Reload
	}{
		{"nothing changed", []Reload{{Tools: []string{"read_file"}, Skills: []string{}, Changes: []string{}, System: "base"}}},
		{"a skill and a tool added", []Reload{{
			Tools: []string{"read_file", "lint"}, Skills: []string{"review"},
			Changes: []string{"tool lint: added (.openmax/tools/lint.json)", "skill review: added (.openmax/skills/review.md)"},
			Note:    "[openmax harness note] re-frozen\nsecond line", System: "base\n\n# Skills\n\n## Skill: review\n\nReview.",
			Offered: []Tool{{Name: "read_file", Schema: `{"type":"object"}`}, {Name: "lint", Mutating: true, Source: &ToolSource{Env: []string{"TOKEN"}, Detail: "/bin/sh lint.sh", Checks: []SourceCheck{{Path: "lint.sh", SHA: "ab"}}}}},
		}}},
		{"two, the second removing", []Reload{
			{Tools: []string{"a", "b"}, Skills: []string{}, Changes: []string{"tool b: added (x)"}, Offered: []Tool{{Name: "a"}, {Name: "b"}}},
			{Tools: []string{"a"}, Skills: []string{}, Changes: []string{"tool b: removed (x)", "not loaded: y: bad"}, Note: "n", Offered: []Tool{{Name: "a"}}},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := testSession(2, "out")
			s.Reloads = tc.reloads
			f := &File{Version: FormatVersion, Interactions: []*Interaction{testInteraction(1, "data: x\n\n")}, Session: s}
			data, err := f.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(data, []byte("\n  reloads:\n")) {
				t.Errorf("no reloads key:\n%s", data)
			}
			back, err := Parse(data)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back.Session, s) {
				t.Errorf("reads back as %+v, want %+v", back.Session, s)
			}
			var c sessionCache
			live, err := c.liveSession(s)
			if err != nil {
				t.Fatal(err)
			}
			if lf, err := Parse(append([]byte("version: 1\n"), live...)); err != nil || !reflect.DeepEqual(lf.Session, s) {
				t.Errorf("the live layout reads back as %+v (%v), want %+v", lf.Session, err, s)
			}
			path := filepath.Join(t.TempDir(), "c.yaml")
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			if stock, err := vcr.Load(strings.TrimSuffix(path, ".yaml")); err != nil || len(stock.Interactions) != 1 {
				t.Errorf("stock go-vcr: %v", err)
			}
			before, _ := encodeYAML(s.Reloads)
			cl := s.Clone()
			cl.Reloads[0].Tools[0], cl.Reloads[0].Changes = "changed", append(cl.Reloads[0].Changes[:0], "more")
			for _, r := range cl.Reloads {
				for _, tl := range r.Offered {
					if tl.Source != nil {
						tl.Source.Env[0], tl.Source.Checks[0].Path = "changed", "changed"
					}
				}
			}
			if after, _ := encodeYAML(s.Reloads); !bytes.Equal(before, after) {
				t.Errorf("Clone shares the reloads: the original became\n%s", after)
			}
		})
	}
}
