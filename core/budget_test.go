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

func TestBudgetFirstAndGrowing(t *testing.T) {
	p := mustScript(t, "replies:\n  - text: "+strings.Repeat("x", 400)+"\n  - text: y\n")
	e := newEngine(t, p)
	e.ContextTokens = 1000
	s := core.NewSession("s")
	var first, second recorder
	e.RunTurn(context.Background(), s, "hello", first.emit)
	e.RunTurn(context.Background(), s, "again", second.emit)
	b1, ok1 := first.events[0].(wire.Budget)
	b2, ok2 := second.events[0].(wire.Budget)
	if !ok1 || !ok2 {
		t.Fatalf("budget is not first: %s / %s", first.types(), second.types())
	}
	if b1.ContextTokens != 1000 || b2.UsedTokens <= b1.UsedTokens+90 {
		t.Errorf("budgets %+v then %+v: the 400-byte reply should add about 100 tokens", b1, b2)
	}
}

// TestMaxAgentTokens: once a turn has spent its cap the next request is
// refused before it goes out (budget_exhausted), and the next turn goes on.
func TestMaxAgentTokens(t *testing.T) {
	p := mustScript(t, `
replies:
  - tool_calls: [{id: c1, name: echo_args}]
    usage: {prompt_tokens: 100, completion_tokens: 50}
  - tool_calls: [{id: c2, name: echo_args}]
    usage: {prompt_tokens: 100, completion_tokens: 50}
  - text: "Finished."
`)
	e := newEngine(t, p, echoTool())
	e.MaxAgentTokens = 200
	s := core.NewSession("s")
	var rec recorder
	if stop := e.RunTurn(context.Background(), s, "go", rec.emit); stop != wire.StopBudgetExhausted {
		t.Fatalf("stop %q (%s)", stop, rec.types())
	}
	if n := len(p.Requests()); n != 2 {
		t.Errorf("%d requests went out, want 2 (the third refused)", n)
	}
	var again recorder
	if stop := e.RunTurn(context.Background(), s, "continue", again.emit); stop != "stop" || !strings.Contains(again.types(), "message_done") {
		t.Errorf("resubmitting: stop %q (%s)", stop, again.types())
	}
}

// TestBudgetScalesToReportedPromptTokens: when the server counted more
// prompt tokens than estimated, later budgets scale up by that ratio.
func TestBudgetScalesToReportedPromptTokens(t *testing.T) {
	p := mustScript(t, "replies:\n  - text: a\n    usage: {prompt_tokens: 1000, completion_tokens: 1}\n  - text: b\n")
	e := newEngine(t, p)
	s := core.NewSession("s")
	var first, second recorder
	e.RunTurn(context.Background(), s, "x", first.emit)
	e.RunTurn(context.Background(), s, "y", second.emit)
	b1, b2 := first.events[0].(wire.Budget), second.events[0].(wire.Budget)
	// The first request was estimated at b1.UsedTokens; the server said 1000.
	if b2.UsedTokens < 1000 {
		t.Errorf("budget %d then %d: not scaled to the reported 1000 prompt tokens", b1.UsedTokens, b2.UsedTokens)
	}
}

// TestCompactionNearTheWindow: when the next request nears the window the
// oldest exchanges are dropped, with a compacted receipt, and the latest
// prompt always goes out.
func TestCompactionNearTheWindow(t *testing.T) {
	long := strings.Repeat("word ", 40) // 200 bytes, about 50 tokens
	p := mustScript(t, "replies:\n  - text: '"+long+"'\n  - text: '"+long+"'\n  - text: ok\n")
	e := newEngine(t, p)
	e.ContextTokens = 200 // compaction past 160 estimated tokens, down to 120
	s := core.NewSession("s")
	var turns [3]recorder
	for i, prompt := range []string{long, long, "last question"} {
		e.RunTurn(context.Background(), s, prompt, turns[i].emit)
	}
	if got := turns[2].types(); !strings.HasPrefix(got, "budget compacted ") {
		t.Fatalf("third turn: %s", got)
	}
	c := turns[2].events[1].(wire.Compacted)
	if c.CompactedMessages == 0 || c.TokensAfter >= c.TokensBefore || c.TokensAfter > 120 {
		t.Errorf("receipt %+v", c)
	}
	reqs := p.Requests()
	last := reqs[len(reqs)-1].Messages
	if last[len(last)-1].Text != "last question" || len(last) >= 5 {
		t.Errorf("the compacted request: %+v", last)
	}
}

func TestSchemasOverBudgetOncePerSession(t *testing.T) {
	big := tool.Func{ToolSpec: provider.ToolSpec{Name: "big", Schema: json.RawMessage(`{"description":"` + strings.Repeat("x", 800) + `"}`)},
		Fn: func(context.Context, json.RawMessage) tool.Result { return tool.Result{OK: true} }}
	p := mustScript(t, "replies:\n  - text: a\n  - text: b\n")
	e := newEngine(t, p, big)
	e.ContextTokens = 300 // the schema (about 200 tokens) takes most of it
	s := core.NewSession("s")
	var first, second recorder
	e.RunTurn(context.Background(), s, "x", first.emit)
	e.RunTurn(context.Background(), s, "y", second.emit)
	if !strings.Contains(first.types(), "schemas_over_budget") || strings.Contains(second.types(), "schemas_over_budget") {
		t.Errorf("first %s / second %s", first.types(), second.types())
	}
}
