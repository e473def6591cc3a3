package core_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/openmax/openmax/core"
	"github.com/openmax/openmax/core/tool"
	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/provider"
)

const testSecret = "sk-test-SECRETVALUE-0123"

// leakTool prints the secret and reports a diff carrying it.
func leakTool() tool.Tool {
	return tool.Func{ToolSpec: provider.ToolSpec{Name: "leak"}, Fn: func(context.Context, json.RawMessage) tool.Result {
		return tool.Result{OK: true, Output: "key=" + testSecret, Diffs: []tool.FileDiff{{Path: "k.txt", Unified: "+" + testSecret + "\n", Added: 1}}}
	}}
}

// backendLeak is a backend whose program runs a tool of its own that
// prints the secret, then calls openmax's leak tool.
type backendLeak struct{ got tool.Result }

func (b *backendLeak) RunTurn(ctx context.Context, h *core.TurnHost, _ string) string {
	h.Emit(wire.ToolStart{CallID: "own", Name: "codex_command", Args: json.RawMessage(`{}`)})
	h.Emit(wire.Diff{CallID: "own", Path: "k.txt", Diff: "+" + testSecret + "\n", Added: 1})
	h.Emit(wire.ToolEnd{CallID: "own", OK: true, Output: testSecret})
	b.got = h.CallTool(ctx, "c1", "leak", json.RawMessage(`{}`))
	return "stop"
}

// TestToolResultsCarryNoSecret: a tool's result, whoever ran it, reaches
// the wire, the session, a backend and the model's next request with
// Engine.Secrets replaced by [redacted].
func TestToolResultsCarryNoSecret(t *testing.T) {
	for _, name := range []string{"engine", "backend"} {
		t.Run(name, func(t *testing.T) {
			p := mustScript(t, "replies:\n  - tool_calls: [{id: c1, name: leak}]\n  - text: done\n")
			e := newEngine(t, p, leakTool())
			e.Secrets = []string{testSecret}
			var b backendLeak
			if name == "backend" {
				e.Backend = &b
			}
			s := core.NewSession("s")
			var rec recorder
			e.RunTurn(context.Background(), s, "go", rec.emit)
			seen := fmt.Sprintf("%+v %+v %+v", rec.events, s.Messages(), b.got)
			for _, r := range p.Requests() {
				seen += fmt.Sprintf(" %+v", r.Messages)
			}
			if strings.Contains(seen, testSecret) {
				t.Errorf("the secret got through: %s", seen)
			}
			if n := strings.Count(seen, "[redacted]"); n < 3 {
				t.Errorf("%d [redacted] markers, want the tool's output and diff redacted: %s", n, seen)
			}
		})
	}
}
