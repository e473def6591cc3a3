package core_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/openmax/openmax/core"
	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/provider"
)

// fakeHooks is an in-memory core.Hooks: intercept and observe decide each
// call, and every call is logged in order.
type fakeHooks struct {
	mu        sync.Mutex
	calls     []hookCall
	intercept func(n int, event core.HookEvent, payload any) (core.HookVerdict, []core.HookFailure)
	observe   func(event core.HookEvent, payload any) []core.HookFailure
	log       *[]string // shared with the test's emit and persist, when set
}

type hookCall struct {
	event   core.HookEvent
	payload any
}

func (f *fakeHooks) record(event core.HookEvent, payload any) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, hookCall{event, payload})
	if f.log != nil {
		*f.log = append(*f.log, "hook "+string(event))
	}
	n := 0
	for _, c := range f.calls {
		if c.event == event {
			n++
		}
	}
	return n
}

func (f *fakeHooks) Intercept(_ context.Context, event core.HookEvent, payload any) (core.HookVerdict, []core.HookFailure) {
	n := f.record(event, payload)
	if f.intercept == nil {
		return core.HookVerdict{}, nil
	}
	return f.intercept(n, event, payload)
}

func (f *fakeHooks) Observe(_ context.Context, event core.HookEvent, payload any) []core.HookFailure {
	f.record(event, payload)
	if f.observe == nil {
		return nil
	}
	return f.observe(event, payload)
}

func (f *fakeHooks) Close() error { return nil }

func (f *fakeHooks) events() []core.HookEvent {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []core.HookEvent
	for _, c := range f.calls {
		out = append(out, c.event)
	}
	return out
}

// refuseTurnEnd refuses turn_end the first times calls, then allows.
func refuseTurnEnd(times int) func(int, core.HookEvent, any) (core.HookVerdict, []core.HookFailure) {
	return func(n int, event core.HookEvent, _ any) (core.HookVerdict, []core.HookFailure) {
		if event == core.HookTurnEnd && n <= times {
			return core.HookVerdict{Refused: true, Hook: "verify", Reason: fmt.Sprintf("run the tests (%d)", n)}, nil
		}
		return core.HookVerdict{}, nil
	}
}

// replies is a script of n plain text replies.
func replies(n int) string {
	var b strings.Builder
	b.WriteString("replies:\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "  - text: \"reply %d\"\n", i)
	}
	return b.String()
}

// checkWire frames the turn's events as a stdio transcript closed by done
// and runs the wire checker over it.
func checkWire(t *testing.T, events []wire.Event, stop string) {
	t.Helper()
	c := wire.NewChecker(wire.Strict())
	hello, err := wire.AppendLine(nil, wire.Hello{Proto: "openmax-stdio/6", ProtocolVersion: 6, SessionID: "s", Project: "/p"})
	if err != nil {
		t.Fatal(err)
	}
	lines := [][]byte{hello}
	for _, e := range append(events, wire.Done{StopReason: stop}) {
		l, err := wire.AppendEvent(nil, "s", e)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, l)
	}
	for i, l := range lines {
		if err := c.Line(bytes.TrimSuffix(l, []byte("\n"))); err != nil {
			t.Fatalf("checker rejects line %d %s: %v", i+1, l, err)
		}
	}
	if err := c.End(); err != nil {
		t.Fatalf("checker: %v", err)
	}
}

func TestHookPromptBlockedSendsNothing(t *testing.T) {
	p := mustScript(t, replies(1))
	e := newEngine(t, p)
	h := &fakeHooks{intercept: func(_ int, event core.HookEvent, _ any) (core.HookVerdict, []core.HookFailure) {
		if event == core.HookUserPromptSubmit {
			return core.HookVerdict{Refused: true, Hook: "guard", Reason: "no secrets"}, nil
		}
		return core.HookVerdict{}, nil
	}}
	e.Hooks = h
	var persisted []provider.Message
	s := core.NewSessionFrom("s", nil, func(m provider.Message) error { persisted = append(persisted, m); return nil })
	var rec recorder
	stop := e.RunTurn(context.Background(), s, "my password is hunter2", rec.emit)
	if stop != wire.StopBlocked {
		t.Fatalf("stop %q, want blocked", stop)
	}
	if got, want := rec.types(), "budget harness_note"; got != want {
		t.Errorf("events %q, want %q", got, want)
	}
	if n := len(p.Requests()); n != 0 {
		t.Errorf("%d model requests, want none", n)
	}
	want := []provider.Message{{Role: provider.RoleUser, Text: `[openmax] A user prompt was blocked by hook "guard" and was not sent: no secrets`}}
	if !reflect.DeepEqual(persisted, want) || !reflect.DeepEqual(s.Messages(), want) {
		t.Errorf("session record\n got %+v / %+v\nwant %+v", persisted, s.Messages(), want)
	}
	if note := rec.events[1].(wire.HarnessNote); note.CallID != "" || note.Text != want[0].Text {
		t.Errorf("harness_note %+v", note)
	}
	if got := fmt.Sprint(h.events()); got != "[user_prompt_submit turn_done]" {
		t.Errorf("hook calls %s", got)
	}
	if pl := h.calls[0].payload.(core.PromptPayload); pl.Prompt != "my password is hunter2" || pl.SessionID != "s" {
		t.Errorf("payload %+v", pl)
	}
	if pl := h.calls[1].payload.(core.TurnDonePayload); pl.StopReason != wire.StopBlocked {
		t.Errorf("turn_done payload %+v", pl)
	}
	checkWire(t, rec.events, stop)
}

func TestHookTurnEndRefusalsContinueTheTurn(t *testing.T) {
	var log []string
	p := mustScript(t, replies(3))
	e := newEngine(t, p)
	h := &fakeHooks{intercept: refuseTurnEnd(2), log: &log}
	e.Hooks = h
	s := core.NewSessionFrom("s", nil, func(m provider.Message) error {
		log = append(log, "persist "+string(m.Role)+": "+m.Text)
		return nil
	})
	emit := func(ev wire.Event) {
		log = append(log, "emit "+ev.EventType())
	}
	var rec recorder
	stop := e.RunTurn(context.Background(), s, "fix it", func(ev wire.Event) { emit(ev); rec.emit(ev) })
	if stop != "stop" {
		t.Fatalf("stop %q", stop)
	}
	want := []string{
		"hook user_prompt_submit", "persist user: fix it", "emit budget", "hook turn_start",
		"emit token", "persist assistant: reply 1", "emit message_done", "hook turn_end",
		"persist user: run the tests (1)", "emit turn_refused",
		"emit token", "persist assistant: reply 2", "emit message_done", "hook turn_end",
		"persist user: run the tests (2)", "emit turn_refused",
		"emit token", "persist assistant: reply 3", "emit message_done", "hook turn_end",
		"hook turn_done",
	}
	if !reflect.DeepEqual(log, want) {
		t.Errorf("order\n got %q\nwant %q", log, want)
	}
	var refused []wire.TurnRefused
	for _, ev := range rec.events {
		if r, ok := ev.(wire.TurnRefused); ok {
			refused = append(refused, r)
		}
	}
	wantRefused := []wire.TurnRefused{
		{Hook: "verify", Reason: "run the tests (1)", Continuation: 0, ContinuationsLeft: 8},
		{Hook: "verify", Reason: "run the tests (2)", Continuation: 1, ContinuationsLeft: 7},
	}
	if !reflect.DeepEqual(refused, wantRefused) {
		t.Errorf("turn_refused\n got %+v\nwant %+v", refused, wantRefused)
	}
	// The payload carries the same numbers and the reply.
	var payloads []core.TurnEndPayload
	for _, c := range h.calls {
		if c.event == core.HookTurnEnd {
			payloads = append(payloads, c.payload.(core.TurnEndPayload))
		}
	}
	wantPayloads := []core.TurnEndPayload{
		{SessionID: "s", Text: "reply 1", StopReason: "stop", Continuation: 0, ContinuationsLeft: 8},
		{SessionID: "s", Text: "reply 2", StopReason: "stop", Continuation: 1, ContinuationsLeft: 7},
		{SessionID: "s", Text: "reply 3", StopReason: "stop", Continuation: 2, ContinuationsLeft: 6},
	}
	if !reflect.DeepEqual(payloads, wantPayloads) {
		t.Errorf("turn_end payloads\n got %+v\nwant %+v", payloads, wantPayloads)
	}
	// The third request carries both refusals as user messages.
	reqs := p.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	last := reqs[2].Messages
	if got := last[len(last)-1]; got.Role != provider.RoleUser || got.Text != "run the tests (2)" {
		t.Errorf("last message of the third request %+v", got)
	}
	checkWire(t, rec.events, stop)
}

func TestHookTurnEndNinthRefusalIsUnverified(t *testing.T) {
	p := mustScript(t, replies(core.MaxContinuations+1))
	e := newEngine(t, p)
	e.Hooks = &fakeHooks{intercept: refuseTurnEnd(1000)}
	s := core.NewSession("s")
	var rec recorder
	stop := e.RunTurn(context.Background(), s, "go", rec.emit)
	if stop != wire.StopUnverified {
		t.Fatalf("stop %q, want unverified", stop)
	}
	if n := len(p.Requests()); n != core.MaxContinuations+1 {
		t.Errorf("%d requests, want %d", n, core.MaxContinuations+1)
	}
	var conts []string
	for _, ev := range rec.events {
		if r, ok := ev.(wire.TurnRefused); ok {
			conts = append(conts, fmt.Sprintf("%d/%d", r.Continuation, r.ContinuationsLeft))
		}
	}
	if got, want := strings.Join(conts, " "), "0/8 1/7 2/6 3/5 4/4 5/3 6/2 7/1"; got != want {
		t.Errorf("continuations %q, want %q", got, want)
	}
	// The ninth refusal is not written: the reply stands as the last message.
	msgs := s.Messages()
	if last := msgs[len(msgs)-1]; last.Role != provider.RoleAssistant || last.Text != "reply 9" {
		t.Errorf("last message %+v", last)
	}
	if last := rec.events[len(rec.events)-1]; last.EventType() != "message_done" {
		t.Errorf("last event %s, want message_done", last.EventType())
	}
	checkWire(t, rec.events, stop)
}

func TestHookRefusalThatCannotBePersistedIsUnverified(t *testing.T) {
	p := mustScript(t, replies(2))
	e := newEngine(t, p)
	e.Hooks = &fakeHooks{intercept: refuseTurnEnd(1)}
	s := core.NewSessionFrom("s", nil, func(m provider.Message) error {
		if m.Role == provider.RoleUser && strings.HasPrefix(m.Text, "run the tests") {
			return errors.New("disk full")
		}
		return nil
	})
	var rec recorder
	stop := e.RunTurn(context.Background(), s, "go", rec.emit)
	if stop != wire.StopUnverified {
		t.Fatalf("stop %q, want unverified", stop)
	}
	if got, want := rec.types(), "budget token message_done"; got != want {
		t.Errorf("events %q, want %q", got, want)
	}
	if msgs := s.Messages(); len(msgs) != 2 || msgs[1].Text != "reply 1" {
		t.Errorf("transcript %+v: the refusal must not be kept in memory either", msgs)
	}
	if n := len(p.Requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
	checkWire(t, rec.events, stop)
}

func TestHookRefusalOfAnEmptyReplyClosesItFirst(t *testing.T) {
	p := mustScript(t, `
replies:
  - chunks:
      - finish: stop
  - text: "ok"
`)
	e := newEngine(t, p)
	e.Hooks = &fakeHooks{intercept: refuseTurnEnd(1)}
	var rec recorder
	stop := e.RunTurn(context.Background(), core.NewSession("s"), "go", rec.emit)
	if got, want := rec.types(), "budget message_done turn_refused token message_done"; got != want {
		t.Errorf("events %q, want %q", got, want)
	}
	checkWire(t, rec.events, stop)
}

func TestHookFailuresAreReportedAndTheTurnProceeds(t *testing.T) {
	p := mustScript(t, `
replies:
  - chunks:
      - tool_call: {id: c1, name: echo_args, args: {a: 1}}
      - finish: tool_calls
  - text: "Done."
`)
	e := newEngine(t, p, echoTool())
	h := &fakeHooks{
		intercept: func(_ int, event core.HookEvent, _ any) (core.HookVerdict, []core.HookFailure) {
			return core.HookVerdict{}, []core.HookFailure{{Hook: "slow", Event: event, Detail: "timed out after 5s"}}
		},
		observe: func(event core.HookEvent, _ any) []core.HookFailure {
			return []core.HookFailure{{Hook: "audit", Event: event, Detail: "exited 2"}}
		},
	}
	e.Hooks = h
	var rec recorder
	stop := e.RunTurn(context.Background(), core.NewSession("s"), "go", rec.emit)
	if stop != "stop" {
		t.Fatalf("stop %q", stop)
	}
	var failed []string
	for _, ev := range rec.events {
		if f, ok := ev.(wire.HookFailed); ok {
			failed = append(failed, f.Hook+":"+f.Event)
		}
	}
	want := "slow:user_prompt_submit audit:turn_start audit:tool_start audit:tool_end slow:turn_end audit:turn_done"
	if got := strings.Join(failed, " "); got != want {
		t.Errorf("hook_failed\n got %s\nwant %s", got, want)
	}
	if got, want := rec.types(), "hook_failed budget hook_failed tool_start hook_failed tool_end hook_failed token message_done hook_failed hook_failed"; got != want {
		t.Errorf("events\n got %s\nwant %s", got, want)
	}
	var tp []any
	for _, c := range h.calls {
		if c.event == core.HookToolStart || c.event == core.HookToolEnd {
			tp = append(tp, c.payload)
		}
	}
	wantTP := []any{
		core.ToolStartPayload{SessionID: "s", CallID: "c1", Name: "echo_args", Args: []byte(`{"a":1}`)},
		core.ToolEndPayload{SessionID: "s", CallID: "c1", Name: "echo_args", OK: true, Output: `{"a":1}`},
	}
	if !reflect.DeepEqual(tp, wantTP) {
		t.Errorf("tool payloads\n got %+v\nwant %+v", tp, wantTP)
	}
	checkWire(t, rec.events, stop)
}

func TestHookEventKinds(t *testing.T) {
	for _, tc := range []struct {
		e         core.HookEvent
		intercept bool
	}{
		{core.HookUserPromptSubmit, true}, {core.HookTurnEnd, true},
		{core.HookTurnStart, false}, {core.HookToolStart, false}, {core.HookToolEnd, false}, {core.HookTurnDone, false},
	} {
		if got := tc.e.Intercept(); got != tc.intercept {
			t.Errorf("%s.Intercept() = %v", tc.e, got)
		}
	}
}

// A crash of the hook runner is a failure of that call like any other: a
// hook_failed, the stack to OnPanic, and the turn goes on (intercepts fail
// open).
func TestHookRunnerCrashIsAFailure(t *testing.T) {
	for _, tc := range []struct {
		at    core.HookEvent
		types string
	}{
		{core.HookUserPromptSubmit, "hook_failed budget tool_start tool_end token message_done"},
		{core.HookToolStart, "budget tool_start hook_failed tool_end token message_done"},
		{core.HookTurnEnd, "budget tool_start tool_end token message_done hook_failed"},
		{core.HookTurnDone, "budget tool_start tool_end token message_done hook_failed"},
	} {
		t.Run(string(tc.at), func(t *testing.T) {
			e := newEngine(t, mustScript(t, `
replies:
  - chunks:
      - tool_call: {id: c1, name: echo_args, args: {}}
      - finish: tool_calls
  - text: "Done."
`), echoTool())
			crash := func(event core.HookEvent) {
				if event == tc.at {
					panic("hook bug")
				}
			}
			e.Hooks = &fakeHooks{
				intercept: func(_ int, event core.HookEvent, _ any) (core.HookVerdict, []core.HookFailure) {
					crash(event)
					return core.HookVerdict{}, nil
				},
				observe: func(event core.HookEvent, _ any) []core.HookFailure { crash(event); return nil },
			}
			var panics int
			e.OnPanic = func(any, []byte) { panics++ }
			var rec recorder
			stop := e.RunTurn(context.Background(), core.NewSession("s"), "go", rec.emit)
			if stop != "stop" || rec.types() != tc.types || panics != 1 {
				t.Errorf("stop %q events %q panics %d; want stop %q 1", stop, rec.types(), panics, tc.types)
			}
			for _, ev := range rec.events {
				if f, ok := ev.(wire.HookFailed); ok && (f.Event != string(tc.at) || !strings.Contains(f.Detail, "hook bug")) {
					t.Errorf("hook_failed %+v", f)
				}
			}
			checkWire(t, rec.events, stop)
		})
	}
}
