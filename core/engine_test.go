package core_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"strings"
	"testing"

	"github.com/openmax/openmax/core"
	"github.com/openmax/openmax/core/tool"
	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/provider"
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
