// Package core is the turn engine: a session holding the transcript, and the
// loop that streams a reply from a provider, runs the tool calls of a
// completed reply, feeds their results back and repeats until the model
// stops. It reports what happens as protocol events but knows nothing of how
// they are framed; the stdio server (core/stdio) does that.
package core

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/openmax/openmax/core/runconfig"
	"github.com/openmax/openmax/core/tool"
	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/clock"
)

// Defaults for an Engine's zero fields.
const (
	DefaultMaxIterations = runconfig.DefaultMaxIterations
	DefaultContextTokens = 128_000
	// DefaultToolGrace is how long a cancelled tool call may take to return
	// before the turn stops waiting for it. It is longer than run_command
	// needs to kill its process group and collect its output.
	DefaultToolGrace = 5 * time.Second
)

// Engine runs turns. Its fields are configuration and must not change while a
// turn runs; one Engine may serve many sessions.
type Engine struct {
	Provider provider.Provider
	Tools    *tool.Registry
	Model    string
	System   string
	// MaxIterations caps the model requests of one turn: when the reply to
	// the last allowed request asks for tools, they run and the turn ends
	// with stop_reason max_iterations. Zero means DefaultMaxIterations.
	MaxIterations int
	// ContextTokens is the model's window, reported by budget.
	ContextTokens int
	// MaxAgentTokens caps the tokens one turn may spend (prompt plus
	// completion, as the provider reports them, or as estimated when it
	// does not): once reached, the next request is refused before it is
	// sent and the turn ends budget_exhausted. Zero means no cap.
	MaxAgentTokens int
	// OnPanic, when set, receives a panic recovered inside a turn with its
	// stack (the binary logs it to stderr). The turn itself reports error.
	OnPanic func(r any, stack []byte)
	// ToolGrace is how long a tool call may go on once the turn is
	// cancelled. A tool still running then is abandoned: its result is
	// recorded as cancelled and the turn ends; the call's goroutine is left
	// to finish on its own, and until it does the session refuses further
	// calls of that tool. Zero means DefaultToolGrace.
	ToolGrace time.Duration
	// Clock times ToolGrace; nil means the wall clock.
	Clock clock.Clock
	// Deny refuses tool calls in every approval mode, before any approval
	// is asked (the deny rules, deny.go); nil refuses nothing.
	Deny Denier
	// Hooks runs the configured hooks at the points of a turn named by
	// HookEvent (see hooks.go); nil means no hooks.
	Hooks Hooks
	// Secrets are openmax's own credential values (redact.Secrets): every
	// tool result is scrubbed of them (tool.Result.Redacted) before it is
	// emitted, kept in the session, shown to a hook or sent to the model,
	// as replies are by the provider chain. Nil scrubs nothing.
	Secrets []string
	// Backend, when set, runs each turn's agent loop instead of the engine
	// (backend.go): Provider, MaxIterations and MaxAgentTokens are then
	// the backend's business.
	Backend Backend
}

func (e *Engine) panicked(r any) {
	if e.OnPanic != nil {
		e.OnPanic(r, debug.Stack())
	}
}

// Emit receives the events of a turn in order. It is called from the turn's
// goroutine only.
type Emit func(wire.Event)

// Emitter receives the events of a turn in order, as an Emit does, with a
// way of its own for the busiest: Token(text) stands for
// Event(wire.Token{Text: text}), and must do what that does. It spares
// the turn making an Event of each token (an allocation per token of a
// reply). Its methods are called from the turn's goroutine only.
type Emitter interface {
	Event(wire.Event)
	Token(text string)
}

// emitFunc is the Emitter of an Emit.
type emitFunc Emit

func (f emitFunc) Event(e wire.Event) { f(e) }
func (f emitFunc) Token(text string)  { f(wire.Token{Text: text}) }

// RunTurn runs one admitted turn for text and returns its stop_reason. It
// emits every event of the turn except done, which the caller sends once it
// has released its own per-turn state. A panic anywhere in the turn becomes
// an error event and stop_reason error. Cancelling ctx ends the turn with
// stop_reason cancelled.
func (e *Engine) RunTurn(ctx context.Context, s *Session, text string, emit Emit) (stop string) {
	return e.RunTurnTo(ctx, s, text, emitFunc(emit))
}

// RunTurnTo is RunTurn emitting to out.
func (e *Engine) RunTurnTo(ctx context.Context, s *Session, text string, out Emitter) (stop string) {
	emit := out.Event
	t := &turn{e: e, s: s, emit: emit, token: out.Token}
	if e.Hooks != nil {
		// Runs after the recover below has settled stop.
		defer t.turnDone(ctx, &stop)
	}
	defer func() {
		if r := recover(); r != nil {
			e.panicked(r)
			if t.host != nil {
				t.host.open() // a backend's turn opens when its prompt is written
			} else if !t.opened { // a hook crashed before the turn opened
				t.emit(e.budget(s))
			}
			t.emit(wire.Error{Message: fmt.Sprintf("internal error: %v", r)})
			stop = wire.StopError
		}
	}()
	if e.Hooks != nil {
		if stop := t.submit(ctx, text); stop != "" {
			return stop
		}
	}
	notes := s.takeNotes()
	if e.Backend != nil {
		return t.runBackend(ctx, text, notes) // backend.go
	}
	err := s.append(append(notes, provider.Message{Role: provider.RoleUser, Text: text})...)
	emit(e.budget(s))
	t.opened = true
	if err != nil {
		emit(wire.Error{Message: err.Error()})
		return wire.StopError
	}
	for _, n := range notes {
		emit(wire.HarnessNote{Text: n.Text})
		t.notes = append(t.notes, n.Text)
	}
	t.observe(ctx, HookTurnStart, PromptPayload{SessionID: s.ID, Prompt: text})
	return t.run(ctx)
}
