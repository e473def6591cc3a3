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

// mutatingTool changes the project (so the approval mode gates it) and
// counts its runs.
type mutatingTool struct {
	tool.Func
	runs *int
}

func (mutatingTool) Mutating() bool { return true }

// TestModeGate: auto runs a mutating tool, readonly refuses it, and a mode
// openmax does not know (a hand-edited settings file) fails closed: it is
// refused too, never run as if it were auto.
func TestModeGate(t *testing.T) {
	for _, tt := range []struct {
		mode    string
		runs    int
		refusal string
	}{
		{"auto", 1, ""},
		{"readonly", 0, "the approval mode is readonly"},
		{"yolo", 0, `the approval mode "yolo" is not one openmax knows`},
		{"", 0, `the approval mode "" is not one openmax knows`},
	} {
		runs := 0
		tl := mutatingTool{Func: tool.Func{ToolSpec: provider.ToolSpec{Name: "touch", Schema: json.RawMessage(`{"type":"object"}`)},
			Fn: func(context.Context, json.RawMessage) tool.Result {
				runs++
				return tool.Result{OK: true, Output: "touched"}
			}}}
		e := newEngine(t, mustScript(t, `
replies:
  - tool_calls: [{id: c1, name: touch, args: {}}]
  - text: ok
`), tl)
		mode := tt.mode
		sess := core.NewSession("s")
		sess.SetApprovals(func() string { return mode }, nil)
		var rec recorder
		e.RunTurn(context.Background(), sess, "go", rec.emit)
		var end wire.ToolEnd
		for _, ev := range rec.events {
			if te, ok := ev.(wire.ToolEnd); ok {
				end = te
			}
		}
		if runs != tt.runs || end.OK != (tt.refusal == "") || !strings.Contains(end.Output, tt.refusal) {
			t.Errorf("mode %q: %d runs, tool_end ok=%v %q; want %d runs, refusal %q", tt.mode, runs, end.OK, end.Output, tt.runs, tt.refusal)
		}
	}
}
