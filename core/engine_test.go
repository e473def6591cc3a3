package core_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openmax/openmax/core"
	"github.com/openmax/openmax/core/stdio"
	"github.com/openmax/openmax/core/tool"
	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/clock"
	"github.com/openmax/openmax/provider/script"
)

// recorder collects a turn's events.
type recorder struct{ events []wire.Event }

func (r *recorder) emit(e wire.Event) { r.events = append(r.events, e) }

func (r *recorder) types() string {
	var out []string
	for _, e := range r.events {
		out = append(out, e.EventType())
	}
	return strings.Join(out, " ")
}

func mustScript(t *testing.T, yaml string) *script.Provider {
	t.Helper()
	sc, err := script.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return script.New(sc, nil)
}

func echoTool() tool.Tool {
	return tool.Func{
		ToolSpec: provider.ToolSpec{Name: "echo_args", Schema: json.RawMessage(`{"type":"object"}`)},
		Fn: func(_ context.Context, args json.RawMessage) tool.Result {
			return tool.Result{OK: true, Output: string(args)}
		},
	}
}

func newEngine(t *testing.T, p provider.Provider, tools ...tool.Tool) *core.Engine {
	t.Helper()
	reg, err := tool.NewRegistry(tools...)
	if err != nil {
		t.Fatal(err)
	}
	return &core.Engine{Provider: p, Tools: reg, Model: "m"}
}

func TestToolLoopFeedsResultsBack(t *testing.T) {
	p := mustScript(t, `
replies:
  - chunks:
      - thinking: "plan"
      - signature: "sig1"
      - text: "Looking."
      - tool_call: {id: c1, name: echo_args, args: {a: 1}}
      - tool_call: {id: c2, name: missing, args: {}}
      - finish: tool_calls
  - text: "Done."
`)
	e := newEngine(t, p, echoTool())
	s := core.NewSession("s")
	var rec recorder
	stop := e.RunTurn(context.Background(), s, "go", rec.emit)
	if stop != "stop" {
		t.Fatalf("stop %q", stop)
	}
	if got, want := rec.types(), "budget thinking token message_done tool_start tool_end tool_start tool_end token message_done"; got != want {
		t.Errorf("events\n got %s\nwant %s", got, want)
	}
	reqs := p.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	want := []provider.Message{
		{Role: provider.RoleUser, Text: "go"},
		{Role: provider.RoleAssistant, Text: "Looking.", Thinking: []provider.Thinking{{Text: "plan", Signature: "sig1"}},
			ToolCalls: []provider.ToolCall{{ID: "c1", Name: "echo_args", Args: json.RawMessage(`{"a":1}`)}, {ID: "c2", Name: "missing", Args: json.RawMessage(`{}`)}}},
		{Role: provider.RoleTool, CallID: "c1", Text: `{"a":1}`},
		{Role: provider.RoleTool, CallID: "c2", Text: `unknown tool "missing"`, IsError: true},
	}
	if !reflect.DeepEqual(reqs[1].Messages, want) {
		t.Errorf("second request messages\n got %+v\nwant %+v", reqs[1].Messages, want)
	}
	if len(reqs[0].Tools) != 1 || reqs[0].Tools[0].Name != "echo_args" || reqs[0].Model != "m" {
		t.Errorf("request tools/model: %+v", reqs[0])
	}
	if n := len(s.Messages()); n != 5 {
		t.Errorf("session has %d messages, want 5", n)
	}
}

func TestTruncationKeepsPartialTextAndRefusesTools(t *testing.T) {
	p := mustScript(t, `
replies:
  - chunks:
      - text: "partial"
      - tool_call: {id: c1, name: echo_args, args: {}}
      - died: "connection reset by peer"
`)
	ran := false
	tl := tool.Func{ToolSpec: provider.ToolSpec{Name: "echo_args"}, Fn: func(context.Context, json.RawMessage) tool.Result {
		ran = true
		return tool.Result{OK: true}
	}}
	e := newEngine(t, p, tl)
	s := core.NewSession("s")
	var rec recorder
	if stop := e.RunTurn(context.Background(), s, "go", rec.emit); stop != wire.StopTruncated {
		t.Fatalf("stop %q", stop)
	}
	if ran {
		t.Error("a tool call from a truncated stream was dispatched")
	}
	if got := rec.types(); got != "budget token message_done error" {
		t.Errorf("events %s", got)
	}
	msg := rec.events[len(rec.events)-1].(wire.Error).Message
	if !strings.Contains(msg, "connection reset by peer") || !strings.Contains(msg, "1 tool call(s) not run") {
		t.Errorf("error message %q", msg)
	}
	msgs := s.Messages()
	if last := msgs[len(msgs)-1]; last.Role != provider.RoleAssistant || last.Text != "partial" || len(last.ToolCalls) != 0 {
		t.Errorf("partial text not kept as the last message: %+v", last)
	}
}

func TestStreamErrorDropsPartialText(t *testing.T) {
	p := mustScript(t, `
replies:
  - chunks:
      - text: "partial"
      - error: "overloaded"
`)
	e := newEngine(t, p)
	s := core.NewSession("s")
	var rec recorder
	if stop := e.RunTurn(context.Background(), s, "go", rec.emit); stop != wire.StopError {
		t.Fatalf("stop %q", stop)
	}
	if got := rec.types(); got != "budget token error" {
		t.Errorf("events %s", got)
	}
	if msgs := s.Messages(); len(msgs) != 1 || msgs[0].Role != provider.RoleUser {
		t.Errorf("partial text of a failed stream was kept: %+v", msgs)
	}
}

func TestCancelMidStreamEndsPromptly(t *testing.T) {
	p := mustScript(t, `
replies:
  - chunks:
      - text: "so far"
      - stall: true
`)
	e := newEngine(t, p)
	s := core.NewSession("s")
	ctx, cancel := context.WithCancel(context.Background())
	var rec recorder
	stop := e.RunTurn(ctx, s, "go", func(ev wire.Event) {
		rec.emit(ev)
		if _, ok := ev.(wire.Token); ok {
			cancel()
		}
	})
	if stop != wire.StopCancelled {
		t.Fatalf("stop %q", stop)
	}
	if got := rec.types(); got != "budget token message_done" {
		t.Errorf("events %s", got)
	}
}

func TestCancelMidToolGivesEveryCallAResult(t *testing.T) {
	p := mustScript(t, `
replies:
  - tool_calls: [{id: c1, name: wait}, {id: c2, name: echo_args}]
`)
	wait := tool.Func{ToolSpec: provider.ToolSpec{Name: "wait"}, Fn: func(ctx context.Context, _ json.RawMessage) tool.Result {
		<-ctx.Done()
		return tool.Result{}
	}}
	e := newEngine(t, p, wait, echoTool())
	s := core.NewSession("s")
	ctx, cancel := context.WithCancel(context.Background())
	var rec recorder
	stop := e.RunTurn(ctx, s, "go", func(ev wire.Event) {
		rec.emit(ev)
		if _, ok := ev.(wire.ToolStart); ok {
			cancel()
		}
	})
	if stop != wire.StopCancelled {
		t.Fatalf("stop %q", stop)
	}
	if got := rec.types(); got != "budget tool_start tool_end" {
		t.Errorf("events %s", got)
	}
	if end := rec.events[2].(wire.ToolEnd); end.OK || end.Output != "cancelled" {
		t.Errorf("tool_end %+v", end)
	}
	msgs := s.Messages()
	var results []string
	for _, m := range msgs {
		if m.Role == provider.RoleTool {
			results = append(results, m.CallID)
		}
	}
	if !reflect.DeepEqual(results, []string{"c1", "c2"}) {
		t.Errorf("tool results for %v, want c1 and c2", results)
	}
}

func TestPanickingProviderBecomesError(t *testing.T) {
	var stack []byte
	p := provider.Func(func(context.Context, provider.Request) iter.Seq[provider.Part] {
		return func(yield func(provider.Part) bool) {
			yield(provider.TextDelta{Text: "x"})
			panic("provider bug")
		}
	})
	e := newEngine(t, p)
	e.OnPanic = func(r any, st []byte) { stack = st }
	var rec recorder
	if stop := e.RunTurn(context.Background(), core.NewSession("s"), "go", rec.emit); stop != wire.StopError {
		t.Fatalf("stop %q", stop)
	}
	if got := rec.types(); got != "budget token error" {
		t.Errorf("events %s", got)
	}
	if !strings.Contains(rec.events[2].(wire.Error).Message, "provider bug") || len(stack) == 0 {
		t.Errorf("error %+v, stack %d bytes", rec.events[2], len(stack))
	}
}

func TestRetryRules(t *testing.T) {
	tests := []struct {
		name  string
		parts []provider.Part
		stop  string
		types string
	}{
		{"retry before text voids thinking",
			[]provider.Part{provider.ThinkingDelta{Text: "a"}, provider.Retry{Attempt: 2, MaxAttempts: 3, Reason: "r"}, provider.TextDelta{Text: "b"}, provider.Finish{Reason: "stop"}},
			"stop", "budget thinking retry token message_done"},
		{"retry after text is a provider bug",
			[]provider.Part{provider.TextDelta{Text: "a"}, provider.Retry{Attempt: 2, MaxAttempts: 3, Reason: "r"}, provider.TextDelta{Text: "b"}, provider.Finish{Reason: "stop"}},
			"error", "budget token error"},
		{"empty finish reason is stop",
			[]provider.Part{provider.TextDelta{Text: "a"}, provider.Finish{}},
			"stop", "budget token message_done"},
		{"finish passes through verbatim",
			[]provider.Part{provider.TextDelta{Text: "a"}, provider.Finish{Reason: "length"}},
			"length", "budget token message_done"},
		{"nil error still fails",
			[]provider.Part{provider.Error{}},
			"error", "budget error"},
		{"no completion and no text",
			[]provider.Part{provider.ThinkingDelta{Text: "a"}},
			"truncated", "budget thinking error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []provider.Message
			p := provider.Func(func(_ context.Context, req provider.Request) iter.Seq[provider.Part] {
				return func(yield func(provider.Part) bool) {
					for _, part := range tt.parts {
						if !yield(part) {
							return
						}
					}
				}
			})
			s := core.NewSession("s")
			var rec recorder
			if stop := newEngine(t, p).RunTurn(context.Background(), s, "go", rec.emit); stop != tt.stop {
				t.Errorf("stop %q, want %q", stop, tt.stop)
			}
			if rec.types() != tt.types {
				t.Errorf("events %s, want %s", rec.types(), tt.types)
			}
			got = s.Messages()
			if tt.name == "retry before text voids thinking" && len(got[1].Thinking) != 0 {
				t.Errorf("voided thinking kept: %+v", got[1].Thinking)
			}
		})
	}
}

func TestMaxIterations(t *testing.T) {
	calls := 0
	p := provider.Func(func(context.Context, provider.Request) iter.Seq[provider.Part] {
		calls++
		n := calls
		return func(yield func(provider.Part) bool) {
			yield(provider.ToolCallPart{Call: provider.ToolCall{ID: fmt.Sprint("c", n), Name: "echo_args", Args: json.RawMessage(`{}`)}})
			yield(provider.Finish{Reason: "tool_calls"})
		}
	})
	e := newEngine(t, p, echoTool())
	e.MaxIterations = 3
	var rec recorder
	if stop := e.RunTurn(context.Background(), core.NewSession("s"), "go", rec.emit); stop != wire.StopMaxIterations {
		t.Fatalf("stop %q", stop)
	}
	if calls != 3 {
		t.Errorf("%d requests, want 3", calls)
	}
}

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

func TestInvalidToolArgs(t *testing.T) {
	for _, args := range []string{`[1]`, `null`, `{"a":`, `"s"`} {
		p := provider.Func(func(context.Context, provider.Request) iter.Seq[provider.Part] {
			return func(yield func(provider.Part) bool) {
				yield(provider.ToolCallPart{Call: provider.ToolCall{ID: "c", Name: "echo_args", Args: json.RawMessage(args)}})
				yield(provider.Finish{Reason: "tool_calls"})
			}
		})
		e := newEngine(t, p, echoTool())
		e.MaxIterations = 1
		var rec recorder
		e.RunTurn(context.Background(), core.NewSession("s"), "go", rec.emit)
		start := rec.events[1].(wire.ToolStart)
		end := rec.events[2].(wire.ToolEnd)
		if string(start.Args) != "{}" || end.OK || !strings.HasPrefix(end.Output, "invalid arguments") {
			t.Errorf("args %s: start %+v end %+v", args, start, end)
		}
	}
}

func TestToolRegistryRejectsDuplicates(t *testing.T) {
	if _, err := tool.NewRegistry(echoTool(), echoTool()); err == nil {
		t.Error("duplicate tool accepted")
	}
	if _, err := tool.NewRegistry(tool.Func{}); err == nil {
		t.Error("nameless tool accepted")
	}
}

func TestMissingToolCallIDsAreFilledIn(t *testing.T) {
	p := provider.Func(func(_ context.Context, req provider.Request) iter.Seq[provider.Part] {
		return func(yield func(provider.Part) bool) {
			if len(req.Messages) > 1 {
				yield(provider.Finish{Reason: "stop"})
				return
			}
			yield(provider.ToolCallPart{Call: provider.ToolCall{Name: "echo_args"}})
			yield(provider.ToolCallPart{Call: provider.ToolCall{Name: "echo_args"}})
			yield(provider.Finish{Reason: "tool_calls"})
		}
	})
	s := core.NewSession("s")
	var rec recorder
	newEngine(t, p, echoTool()).RunTurn(context.Background(), s, "go", rec.emit)
	var ids []string
	for _, e := range rec.events {
		if st, ok := e.(wire.ToolStart); ok {
			ids = append(ids, st.CallID)
		}
	}
	if !reflect.DeepEqual(ids, []string{"call_1_1", "call_1_2"}) {
		t.Errorf("tool_start ids %v", ids)
	}
	msgs := s.Messages()
	if msgs[1].ToolCalls[1].ID != "call_1_2" || msgs[3].CallID != "call_1_2" {
		t.Errorf("transcript ids: %+v", msgs)
	}
}

func TestToolDiffsBecomeDiffEvents(t *testing.T) {
	p := mustScript(t, "replies:\n  - tool_calls: [{id: c1, name: write}]\n  - text: done\n")
	write := tool.Func{ToolSpec: provider.ToolSpec{Name: "write"}, Fn: func(context.Context, json.RawMessage) tool.Result {
		return tool.Result{OK: true, Output: "wrote a.txt", Diffs: []tool.FileDiff{{Path: "a.txt", Unified: "--- a/a.txt\n+++ b/a.txt\n@@ -0,0 +1 @@\n+hi\n", Added: 1}}}
	}}
	var rec recorder
	newEngine(t, p, write).RunTurn(context.Background(), core.NewSession("s"), "go", rec.emit)
	if got := rec.types(); got != "budget tool_start diff tool_end token message_done" {
		t.Fatalf("events %s", got)
	}
	if d := rec.events[2].(wire.Diff); d.CallID != "c1" || d.Path != "a.txt" || d.Added != 1 {
		t.Errorf("diff %+v", d)
	}
}

// TestMessagesArePersistedBeforeTheirEvents: each message reaches persist
// before the event that reports it, and a persist failure fails the turn.
func TestMessagesArePersistedBeforeTheirEvents(t *testing.T) {
	p := mustScript(t, "replies:\n  - text: Looking.\n    tool_calls: [{id: c1, name: echo_args}]\n  - text: Done.\n")
	var rec recorder
	var seen []string // for each persisted message: role, and the events out so far
	s := core.NewSessionFrom("s", []provider.Message{{Role: provider.RoleUser, Text: "earlier"}}, func(m provider.Message) error {
		seen = append(seen, fmt.Sprintf("%s@%d", m.Role, len(rec.events)))
		return nil
	})
	newEngine(t, p, echoTool()).RunTurn(context.Background(), s, "go", rec.emit)
	// user before budget (0 events); assistant before its message_done (1:
	// budget, 2: token); the tool result before tool_end (4: +message_done,
	// tool_start); the last reply before its message_done.
	if got, want := strings.Join(seen, " "), "user@0 assistant@2 tool@4 assistant@6"; got != want {
		t.Errorf("persist order %s, want %s (events %s)", got, want, rec.types())
	}
	if n := len(s.Messages()); n != 5 {
		t.Errorf("%d messages with the history", n)
	}

	failing := core.NewSessionFrom("s", nil, func(provider.Message) error { return errors.New("disk full") })
	var rec2 recorder
	if stop := newEngine(t, mustScript(t, "replies:\n  - text: x\n")).RunTurn(context.Background(), failing, "go", rec2.emit); stop != wire.StopError {
		t.Fatalf("stop %q", stop)
	}
	if got := rec2.types(); got != "budget error" || !strings.Contains(rec2.events[1].(wire.Error).Message, "disk full") {
		t.Errorf("events %s %+v", got, rec2.events)
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

// stuckTool blocks, ignoring its context, until release is closed; runs
// counts its calls, each of which sends on started (when it has room).
func stuckTool(release <-chan struct{}, started chan<- struct{}, runs *atomic.Int32) tool.Tool {
	return tool.Func{ToolSpec: provider.ToolSpec{Name: "stuck"}, Fn: func(context.Context, json.RawMessage) tool.Result {
		runs.Add(1)
		select {
		case started <- struct{}{}:
		default:
		}
		<-release
		return tool.Result{OK: true, Output: "finally"}
	}}
}

// TestCancelAbandonsAToolThatIgnoresIt: a tool that ignores its context
// cannot hold a cancelled turn past the grace period; its result is
// recorded as cancelled, and until it returns the session refuses to run
// it again (one stuck goroutine at most), after which it runs as before.
func TestCancelAbandonsAToolThatIgnoresIt(t *testing.T) {
	p := mustScript(t, `
replies:
  - tool_calls: [{id: c1, name: stuck}, {id: c2, name: echo_args}]
  - tool_calls: [{id: c3, name: stuck}]
  - text: "refused, fine"
  - tool_calls: [{id: c4, name: stuck}]
  - text: "ran"
`)
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	var runs atomic.Int32
	e := newEngine(t, p, stuckTool(release, started, &runs), echoTool())
	fake := clock.NewFake(time.Unix(0, 0))
	e.Clock, e.ToolGrace = fake, 3*time.Second
	s := core.NewSession("s")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var rec recorder
	stopc := make(chan string, 1)
	go func() { stopc <- e.RunTurn(ctx, s, "go", rec.emit) }()
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	select {
	case <-started:
	case <-wctx.Done():
		t.Fatal("the stuck tool never ran")
	}
	cancel()
	if err := fake.BlockUntil(wctx, 1); err != nil {
		t.Fatal("the engine never started the grace wait:", err)
	}
	select {
	case <-stopc:
		t.Fatal("the turn ended before the grace period")
	default:
	}
	fake.Advance(3 * time.Second)
	var stop string
	select {
	case stop = <-stopc:
	case <-wctx.Done():
		t.Fatal("the cancelled turn still waits for the stuck tool")
	}
	if stop != wire.StopCancelled {
		t.Fatalf("stop %q", stop)
	}
	if got := rec.types(); got != "budget tool_start tool_end" {
		t.Errorf("events %s", got)
	}
	end := rec.events[2].(wire.ToolEnd)
	if end.OK || !strings.HasPrefix(end.Output, "cancelled: stuck did not stop within 3s") {
		t.Errorf("tool_end %+v", end)
	}
	var results []string
	for _, m := range s.Messages() {
		if m.Role == provider.RoleTool {
			results = append(results, m.CallID+"="+m.Text)
		}
	}
	if len(results) != 2 || !strings.HasPrefix(results[0], "c1=cancelled:") || results[1] != "c2=not run: the turn was cancelled" {
		t.Errorf("tool results %q", results)
	}

	// The stuck call is still running: the next call of that tool is
	// refused at once, without starting another.
	var second recorder
	if stop := e.RunTurn(context.Background(), s, "again", second.emit); stop != "stop" {
		t.Fatalf("second turn: stop %q", stop)
	}
	if end := second.events[2].(wire.ToolEnd); end.OK || end.Output != "not run: an earlier stuck call ignored its cancellation and is still running" {
		t.Errorf("second turn's tool_end %+v", end)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("the stuck tool was started %d times, want 1", n)
	}

	// Once it returns, the tool runs again.
	close(release)
	if err := s.WaitAbandoned(wctx); err != nil {
		t.Fatal("the released tool call never ended:", err)
	}
	var third recorder
	if stop := e.RunTurn(context.Background(), s, "once more", third.emit); stop != "stop" {
		t.Fatalf("third turn: stop %q", stop)
	}
	if end := third.events[2].(wire.ToolEnd); !end.OK || end.Output != "finally" {
		t.Errorf("third turn's tool_end %+v", end)
	}
}

// TestCancelledToolResultWithinGraceIsKept: a tool that stops when
// cancelled keeps the result it returns (run_command's output and kill note).
func TestCancelledToolResultWithinGraceIsKept(t *testing.T) {
	p := mustScript(t, "replies:\n  - tool_calls: [{id: c1, name: wait}]\n")
	wait := tool.Func{ToolSpec: provider.ToolSpec{Name: "wait"}, Fn: func(ctx context.Context, _ json.RawMessage) tool.Result {
		<-ctx.Done()
		return tool.Result{Output: "partial\n[killed: cancelled]"}
	}}
	e := newEngine(t, p, wait)
	e.Clock = clock.NewFake(time.Unix(0, 0)) // the grace never runs out
	ctx, cancel := context.WithCancel(context.Background())
	var rec recorder
	stop := e.RunTurn(ctx, core.NewSession("s"), "go", func(ev wire.Event) {
		rec.emit(ev)
		if _, ok := ev.(wire.ToolStart); ok {
			cancel()
		}
	})
	if stop != wire.StopCancelled {
		t.Fatalf("stop %q", stop)
	}
	if end := rec.events[2].(wire.ToolEnd); end.OK || end.Output != "partial\n[killed: cancelled]" {
		t.Errorf("tool_end %+v", end)
	}
}

// TestStuckToolCancelGivesExactlyOneDone drives the stdio server: cancel
// during a tool that ignores its context still ends the turn with exactly
// one done (cancelled), and EOF then ends the session.
func TestStuckToolCancelGivesExactlyOneDone(t *testing.T) {
	p := mustScript(t, "replies:\n  - tool_calls: [{id: c1, name: stuck}]\n")
	release := make(chan struct{})
	defer close(release)
	var runs atomic.Int32
	e := newEngine(t, p, stuckTool(release, nil, &runs))
	fake := clock.NewFake(time.Unix(0, 0))
	e.Clock = fake
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		_, err := stdio.Serve(context.Background(), inR, outW, stdio.Options{Engine: e, SessionID: "s1"})
		outW.Close()
		served <- err
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			out <- sc.Text()
		}
		close(out)
	}()
	var lines []string
	next := func(typ string) {
		t.Helper()
		for {
			select {
			case l, ok := <-out:
				if !ok {
					t.Fatalf("no %s line; got:\n%s", typ, strings.Join(lines, "\n"))
				}
				lines = append(lines, l)
				if strings.Contains(l, `"type":"`+typ+`"`) {
					return
				}
			case <-ctx.Done():
				t.Fatalf("no %s line in time; got:\n%s", typ, strings.Join(lines, "\n"))
			}
		}
	}
	fmt.Fprintln(inW, `{"cmd":"user","text":"go"}`)
	next("tool_start")
	fmt.Fprintln(inW, `{"cmd":"cancel"}`)
	if err := fake.BlockUntil(ctx, 1); err != nil {
		t.Fatal("no grace wait:", err)
	}
	fake.Advance(core.DefaultToolGrace)
	next("done")
	inW.Close()
	for l := range out {
		lines = append(lines, l)
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	dones := 0
	for _, l := range lines {
		if strings.Contains(l, `"type":"done"`) {
			dones++
			if !strings.Contains(l, `"stop_reason":"cancelled"`) {
				t.Errorf("done %s", l)
			}
		}
	}
	if dones != 1 {
		t.Errorf("%d done lines, want 1:\n%s", dones, strings.Join(lines, "\n"))
	}
	if _, err := wire.CheckStream(strings.NewReader(strings.Join(lines, "\n")), func(v wire.Verdict) {
		if v.Err != nil {
			t.Errorf("line %d: %v", v.Line, v.Err)
		}
	}); err != nil {
		t.Fatal(err)
	}
}

// TestHugeToolArgsAreCutForDisplay: a call whose arguments pass 1 MiB is
// shown (tool_start) with its long members cut and a note, while the tool
// gets them whole.
func TestHugeToolArgsAreCutForDisplay(t *testing.T) {
	big := strings.Repeat("é", 600<<10) // 1.2 MB of two-byte characters
	args, _ := json.Marshal(map[string]any{"path": "a.txt", "content": big, "list": []string{big}})
	p := mustScript(t, "replies:\n  - tool_calls: [{id: c1, name: echo_args, args_json: '"+string(args)+"'}]\n  - text: ok\n")
	e := newEngine(t, p, echoTool())
	var rec recorder
	if stop := e.RunTurn(context.Background(), core.NewSession("s"), "go", rec.emit); stop != "stop" {
		t.Fatalf("stop %q", stop)
	}
	start := rec.events[1].(wire.ToolStart)
	if len(start.Args) > 200<<10 {
		t.Errorf("tool_start args are %d bytes", len(start.Args))
	}
	var shown map[string]any
	if err := json.Unmarshal(start.Args, &shown); err != nil {
		t.Fatal(err)
	}
	content, _ := shown["content"].(string)
	cut := strings.Repeat("é", 32<<10)
	if want := cut + fmt.Sprintf("\n[cut for display: %d bytes, showing the first %d]", len(big), len(cut)); content != want {
		t.Errorf("content shown as %d bytes ending %q", len(content), content[max(0, len(content)-80):])
	}
	if shown["path"] != "a.txt" || shown["list"] != fmt.Sprintf("[cut for display: %d bytes of JSON]", len(big)+4) {
		t.Errorf("path %v, list %.80v", shown["path"], shown["list"])
	}
	end := rec.events[2].(wire.ToolEnd)
	if end.Output != string(args) {
		t.Errorf("the tool got %d bytes of arguments, want %d", len(end.Output), len(args))
	}
}

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
			Fn: func(context.Context, json.RawMessage) tool.Result { runs++; return tool.Result{OK: true, Output: "touched"} }}}
		e := newEngine(t, mustScript(t, `
replies:
  - tool_calls: [{id: c1, name: touch, args: {}}]
  - text: ok
`), tl)
		mode := tt.mode
		e.Mode = func() string { return mode }
		var rec recorder
		e.RunTurn(context.Background(), core.NewSession("s"), "go", rec.emit)
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
