package stdio_test

import (
	"bytes"
	"context"
	"encoding/json"
	"iter"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/openmax/openmax/core"
	"github.com/openmax/openmax/core/stdio"
	"github.com/openmax/openmax/core/tool"
	"github.com/openmax/openmax/provider"
)

// One Engine serves many sessions: the approval mode and approver are each
// session's own, so two sessions served at once on the same Engine, one in
// auto and one in readonly, gate the same mutating call differently, and
// Serve never writes to the Engine (the race detector would see it).
func TestServeSharesOneEngine(t *testing.T) {
	var runs atomic.Int64
	mut := rpaMutator{Func: tool.Func{
		ToolSpec: provider.ToolSpec{Name: rpaTool, Schema: json.RawMessage(`{"type":"object"}`)},
		Fn: func(context.Context, json.RawMessage) tool.Result {
			runs.Add(1)
			return tool.Result{OK: true, Output: "mutated"}
		},
	}, runs: &runs}
	// Each session's first request asks for the tool; the request after
	// its result gets text.
	model := provider.Func(func(_ context.Context, req provider.Request) iter.Seq[provider.Part] {
		return func(yield func(provider.Part) bool) {
			if last := req.Messages[len(req.Messages)-1]; last.Role == provider.RoleTool {
				_ = yield(provider.TextDelta{Text: "done"}) && yield(provider.Finish{Reason: "stop"})
				return
			}
			call := provider.ToolCall{ID: "c1", Name: rpaTool, Args: json.RawMessage(`{}`)}
			_ = yield(provider.ToolCallPart{Call: call}) && yield(provider.Finish{Reason: "tool_calls"})
		}
	})
	reg, err := tool.NewRegistry(mut)
	if err != nil {
		t.Fatal(err)
	}
	eng := &core.Engine{Provider: model, Tools: reg}
	before := *eng

	modes := []string{"auto", "readonly"}
	outs := make([]bytes.Buffer, len(modes))
	var wg sync.WaitGroup
	for i, mode := range modes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in := strings.NewReader(`{"cmd":"user","text":"go"}` + "\n")
			if _, err := stdio.Serve(context.Background(), in, &outs[i], stdio.Options{
				Engine: eng, SessionID: "s-" + mode, Modes: stdio.NewMemoryModes(mode),
			}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if runs.Load() != 1 {
		t.Errorf("the mutating tool ran %d times; want once (auto runs it, readonly refuses it)", runs.Load())
	}
	for i, mode := range modes {
		refused := strings.Contains(outs[i].String(), "the approval mode is readonly")
		if refused != (mode == "readonly") {
			t.Errorf("session in %s: refusal in transcript = %v\n%s", mode, refused, outs[i].String())
		}
	}
	if eng.Tools != before.Tools || eng.Model != before.Model {
		t.Error("Serve changed the shared Engine")
	}
}
