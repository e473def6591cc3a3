package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/provider/clock"
)

// stateSession runs `openmax --stdio` in process on project with a fixed
// state directory, checks stdout against the contract and returns its
// lines decoded.
type stateSession struct {
	t       *testing.T
	project string
	getenv  func(string) string
}

func newStateSession(t *testing.T) *stateSession {
	project, state := t.TempDir(), t.TempDir()
	return &stateSession{t: t, project: project, getenv: trustedEnv(t, func(k string) string {
		if k == "XDG_STATE_HOME" {
			return state
		}
		return ""
	}, project)}
}

func (s *stateSession) run(scenario, stdin string, flags ...string) []map[string]any {
	s.t.Helper()
	sc := filepath.Join(s.t.TempDir(), "s.yaml")
	if err := os.WriteFile(sc, []byte(scenario), 0o644); err != nil {
		s.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	args := append([]string{"--stdio", "--provider", "script", "--script", sc, "--project", s.project}, flags...)
	if code := run(ctx, args, strings.NewReader(stdin), &out, &errb, env{clock: clock.Real{}, getenv: s.getenv}); code != 0 {
		s.t.Fatalf("%v: exit %d\n%s\n%s", flags, code, out.String(), errb.String())
	}
	if _, err := wire.CheckStreamStrict(strings.NewReader(out.String()), func(v wire.Verdict) {
		if v.Err != nil {
			s.t.Errorf("line %d: %v\n%s", v.Line, v.Err, out.String())
		}
	}); err != nil {
		s.t.Fatal(err)
	}
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			s.t.Fatalf("%q: %v", l, err)
		}
		lines = append(lines, m)
	}
	return lines
}

func ofType(lines []map[string]any, typ string) []map[string]any {
	var out []map[string]any
	for _, l := range lines {
		if l["type"] == typ {
			out = append(out, l)
		}
	}
	return out
}

// TestStateAcrossContinue: schemas_over_budget goes out at most once per
// session, --continue included, and the budget's scale (the server
// reported more prompt tokens than estimated) survives --continue. The
// built-in tools' schemas are about 1350 tokens, over half of a
// 2500-token window.
func TestStateAcrossContinue(t *testing.T) {
	s := newStateSession(t)
	sc := "context_tokens: 2500\nreplies:\n  - text: ok\n    usage: {prompt_tokens: 3000, completion_tokens: 1}\n  - text: again\n"
	first := s.run(sc, `{"cmd":"user","text":"hi"}`+"\n")
	if len(ofType(first, "schemas_over_budget")) != 1 {
		t.Fatalf("first session: no schemas_over_budget: %v", first)
	}
	again := s.run(sc, `{"cmd":"user","text":"more"}`+"\n"+`{"cmd":"user","text":"more"}`+"\n", "--continue")
	if n := len(ofType(again, "schemas_over_budget")); n != 0 {
		t.Errorf("continued session: %d schemas_over_budget, want none (once per session)", n)
	}
	b := ofType(again, "budget")
	if len(b) == 0 || b[0]["used_tokens"].(float64) < 3000 {
		t.Errorf("continued session's first budget %v: not scaled to the 3000 prompt tokens the server reported", b)
	}
}

// TestForcedCompaction: --compact makes the first turn compact and say so
// with compacted whatever it prunes: 0 messages when the transcript is under
// the prune target, the earlier exchanges when it is over (though under the
// point where compaction runs by itself, so without --compact nothing
// happens).
func TestForcedCompaction(t *testing.T) {
	// A 4000-token window: prune target 2400, compaction by itself past
	// 3200; the schemas (about 1350) are not over half of it.
	sc := "context_tokens: 4000\nreplies:\n  - text: ok\n  - text: ok\n  - text: ok\n"
	tests := []struct {
		name    string
		prompt  int // bytes of the first session's prompt
		flags   []string
		receipt bool
		dropped float64
	}{
		{"under the target, forced", 100, []string{"--compact"}, true, 0},
		{"over the target, forced", 6000, []string{"--compact"}, true, 2},
		{"over the target, not forced", 6000, nil, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStateSession(t)
			s.run(sc, `{"cmd":"user","text":"`+strings.Repeat("w", tt.prompt)+`"}`+"\n")
			lines := s.run(sc, `{"cmd":"user","text":"q"}`+"\n"+`{"cmd":"user","text":"r"}`+"\n", append([]string{"--continue"}, tt.flags...)...)
			c := ofType(lines, "compacted")
			if !tt.receipt {
				if len(c) != 0 {
					t.Errorf("compacted without --compact: %v", c)
				}
				return
			}
			if len(c) != 1 {
				t.Fatalf("%d compacted lines, want 1 (the second turn is not forced): %v", len(c), lines)
			}
			if c[0]["compacted_messages"] != tt.dropped {
				t.Errorf("receipt %v, want %v messages", c[0], tt.dropped)
			}
			if tt.dropped == 0 && c[0]["tokens_before"] != c[0]["tokens_after"] {
				t.Errorf("nothing dropped, yet the tokens changed: %v", c[0])
			}
			if tt.dropped > 0 && c[0]["tokens_after"].(float64) > 2400 {
				t.Errorf("receipt %v: not under the 2400-token target", c[0])
			}
		})
	}
}

// TestForcedCompactionRecordReplay: --compact is part of a recording's
// configuration: the recorded session and its replay both open the first
// turn with the forced compaction's receipt.
func TestForcedCompactionRecordReplay(t *testing.T) {
	dir := t.TempDir()
	sc, cas := filepath.Join(dir, "s.yaml"), filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(sc, []byte("replies:\n  - text: ok\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rec, stderr, code := runCLI(t, `{"cmd":"user","text":"hi"}`+"\n", "record", "--cassette", cas, "--provider", "script", "--script", sc, "--session-id", "s", "--compact")
	if code != 0 || !strings.Contains(rec, `"type":"compacted","tokens_before":`) {
		t.Fatalf("record: exit %d\n%s\n%s", code, rec, stderr)
	}
	rep, stderr, code := runCLI(t, "", "replay", cas)
	if code != 0 || !strings.Contains(rep, `"type":"compacted","tokens_before":`) {
		t.Fatalf("replay: exit %d\n%s\n%s", code, rep, stderr)
	}
}
