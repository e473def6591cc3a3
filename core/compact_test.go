package core_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/openmax/openmax/core"
	"github.com/openmax/openmax/core/tool"
	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/provider"
)

// schemaTool is a tool whose spec costs about n/4 tokens every request.
func schemaTool(n int) tool.Tool {
	pad := n - len(`{"description":""}`) - len("big")
	return tool.Func{ToolSpec: provider.ToolSpec{Name: "big", Schema: json.RawMessage(`{"description":"` + strings.Repeat("x", pad) + `"}`)},
		Fn: func(context.Context, json.RawMessage) tool.Result { return tool.Result{OK: true} }}
}

// history is n exchanges of a user message and an assistant reply, each
// text bytes long.
func history(n, bytes int) []provider.Message {
	var msgs []provider.Message
	for i := range n {
		msgs = append(msgs,
			provider.Message{Role: provider.RoleUser, Text: strings.Repeat(string(rune('a'+i)), bytes)},
			provider.Message{Role: provider.RoleAssistant, Text: strings.Repeat("r", bytes)})
	}
	return msgs
}

// TestCompactionThresholds: with a 1000-token window (prune target 600,
// compaction past 800): small schemas leave a transcript at 70% alone;
// schemas over half the window make the same total compact (earlier, down
// to the target); schemas at or over the target stop compaction entirely;
// a requested compaction always answers with compacted, 0 messages only
// when the transcript was already under the target.
func TestCompactionThresholds(t *testing.T) {
	tests := []struct {
		name        string
		schemaBytes int
		exchanges   int
		bytes       int // per message
		force       bool
		wantCompact bool // a compacted line
		wantDropped bool // compacted_messages > 0
		wantWarn    bool // schemas_over_budget
	}{
		{"small schemas, 70% full: no compaction", 40, 4, 340, false, false, false, false},
		{"schemas at 52%, 70% full: compaction starts early", 2080, 4, 90, false, true, true, true},
		{"small schemas, 85% full: compaction", 40, 5, 340, false, true, true, false},
		{"schemas at the target, 90% full: compaction stopped", 2480, 4, 150, false, false, false, true},
		{"forced under the target: receipt with 0", 40, 2, 100, true, true, false, false},
		{"forced over the target, under the trigger: pruned", 40, 4, 340, true, true, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustScript(t, "replies:\n  - text: ok\n")
			e := newEngine(t, p, schemaTool(tt.schemaBytes))
			e.ContextTokens = 1000
			s := core.NewSessionFrom("s", history(tt.exchanges, tt.bytes), nil)
			if tt.force {
				s.RequestCompaction()
			}
			before := len(s.Messages())
			var rec recorder
			if stop := e.RunTurn(context.Background(), s, "q", rec.emit); stop != "stop" {
				t.Fatalf("stop %q (%s)", stop, rec.types())
			}
			types := rec.types()
			if got := strings.Contains(types, "schemas_over_budget"); got != tt.wantWarn {
				t.Errorf("schemas_over_budget %v, want %v: %s", got, tt.wantWarn, types)
			}
			var c *wire.Compacted
			for _, ev := range rec.events {
				if v, ok := ev.(wire.Compacted); ok {
					c = &v
				}
			}
			if (c != nil) != tt.wantCompact {
				t.Fatalf("compacted %v, want %v: %s", c != nil, tt.wantCompact, types)
			}
			if c == nil {
				return
			}
			if (c.CompactedMessages > 0) != tt.wantDropped {
				t.Errorf("receipt %+v, want messages dropped: %v", *c, tt.wantDropped)
			}
			req := p.Requests()[0].Messages
			if got := before + 1 - len(req); got != c.CompactedMessages {
				t.Errorf("the request lost %d messages, the receipt says %d", got, c.CompactedMessages)
			}
			if req[len(req)-1].Text != "q" {
				t.Errorf("the prompt did not go out last: %+v", req[len(req)-1])
			}
			if c.CompactedMessages == 0 && (c.TokensBefore > 600 || c.TokensAfter != c.TokensBefore) {
				t.Errorf("0 messages compacted, but the transcript was over the target or changed: %+v", *c)
			}
			if c.CompactedMessages > 0 && (c.TokensAfter > 600 || c.TokensAfter >= c.TokensBefore) {
				t.Errorf("receipt %+v: not pruned to the 600-token target", *c)
			}
		})
	}
}

// TestSessionStateCarriesOver: what a session saves (the budget's scale,
// and that schemas_over_budget went out) is what a continued session
// restores: no second schemas_over_budget, and the first budget scaled.
func TestSessionStateCarriesOver(t *testing.T) {
	p := mustScript(t, "replies:\n  - text: a\n    usage: {prompt_tokens: 2000, completion_tokens: 1}\n  - text: b\n")
	e := newEngine(t, p, schemaTool(2080))
	e.ContextTokens = 1000
	s := core.NewSession("s")
	var saved []core.SessionState
	s.SetState(core.SessionState{}, func(st core.SessionState) error { saved = append(saved, st); return nil })
	var first recorder
	e.RunTurn(context.Background(), s, "x", first.emit)
	if !strings.Contains(first.types(), "schemas_over_budget") {
		t.Fatalf("first session: %s", first.types())
	}
	if len(saved) == 0 {
		t.Fatal("nothing saved")
	}
	last := saved[len(saved)-1]
	if !last.WarnedSchemas || last.Scale <= 1 {
		t.Fatalf("saved %+v, want warned and a scale over 1", last)
	}

	// "--continue": the same transcript in a new Session with the saved state.
	cont := core.NewSessionFrom("s", s.Messages(), nil)
	cont.SetState(last, nil)
	fresh := core.NewSessionFrom("s", s.Messages(), nil)
	var second, unscaled recorder
	e.RunTurn(context.Background(), cont, "y", second.emit)
	if strings.Contains(second.types(), "schemas_over_budget") {
		t.Errorf("schemas_over_budget again after continuing: %s", second.types())
	}
	e2 := newEngine(t, mustScript(t, "replies:\n  - text: b\n"), schemaTool(2080))
	e2.ContextTokens = 1000
	e2.RunTurn(context.Background(), fresh, "y", unscaled.emit)
	b, u := second.events[0].(wire.Budget), unscaled.events[0].(wire.Budget)
	if want := int(float64(u.UsedTokens)*last.Scale + 0.5); b.UsedTokens != want {
		t.Errorf("continued budget %d, want the unscaled %d times %.2f = %d", b.UsedTokens, u.UsedTokens, last.Scale, want)
	}
}
