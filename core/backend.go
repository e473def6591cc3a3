package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/openmax/openmax/core/tool"
	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/redact"
)

// Backend runs the agent loop of a turn outside the engine, in a program
// that talks to the model and runs tools of its own (codex app-server).
// The engine keeps what belongs to openmax: the session and its
// persistence, the hooks at the turn's edges, the budget line that opens
// the turn, and openmax's own tools with their gates, which the backend
// reaches through the TurnHost.
type Backend interface {
	// RunTurn runs one turn for text. It emits every event of the turn
	// through the host except done, and returns the stop reason.
	// Cancelling ctx must end the turn promptly with wire.StopCancelled.
	//
	// The session is writing text as its last user message while RunTurn
	// starts, so the backend may hand the turn to its program at once;
	// every host method that reports or decides something (Emit,
	// CallTool, Gate, ToolStarted, ToolEnded, Note, TurnEnd, Reply,
	// SetThread) first waits until the message is written and the turn
	// has opened (budget, the harness notes, the turn_start hooks: as soon
	// as the message is written), so nothing the backend reports reaches
	// the client, the session or a hook before the prompt is on disk. When it cannot be written, the turn ends with error: ctx
	// is cancelled and the host drops what the backend reports from then
	// on.
	RunTurn(ctx context.Context, h *TurnHost, text string) string
}

// runBackend runs the turn in e.Backend while the session writes the
// prompt and notes (see Backend.RunTurn).
func (t *turn) runBackend(ctx context.Context, text string, notes []provider.Message) string {
	for _, n := range notes {
		t.notes = append(t.notes, n.Text)
	}
	bctx, cancel := context.WithCancel(ctx)
	defer cancel()
	h := newTurnHost(ctx, t)
	t.host = h
	h.modeOf, _ = t.s.approvals() // fixed while a turn runs; append holds the session's lock
	h.cancel, h.text = cancel, text
	written := make(chan error, 1)
	h.written = written
	go func() {
		func() {
			defer func() {
				if r := recover(); r != nil {
					written <- fmt.Errorf("could not write the session record: %v", r)
				}
			}()
			written <- t.s.append(append(notes, provider.Message{Role: provider.RoleUser, Text: text})...)
		}()
		// The turn opens as soon as the prompt is written, whatever the
		// backend is waiting for (its program's start, its first event).
		defer func() {
			if r := recover(); r != nil {
				t.e.panicked(r)
			}
		}()
		h.open()
	}()
	stop := t.e.Backend.RunTurn(bctx, h, text)
	if !h.open() { // waits for the turn to have opened
		return wire.StopError
	}
	return stop
}

// TurnHost is what a Backend may use of the turn it runs. Its methods are
// safe for concurrent use: the backend's tool calls may come from
// goroutines of its own.
type TurnHost struct {
	t   *turn
	ctx context.Context // the turn's: hooks observe under it (backend_rules.go)
	mu  chan struct{}   // one event or tool call at a time, in order

	modeOf  func() string      // the session's approval mode (Mode)
	text    string             // the prompt (turn_start's payload)
	cancel  context.CancelFunc // ends the backend's turn
	written <-chan error       // the prompt's write; nil: written before RunTurn
	opening sync.Once
	failed  bool // the prompt could not be written: the turn ended with error
}

// open waits, once, for the prompt's write and opens the turn: budget,
// then either the write's error (and the backend's turn is cancelled) or
// the harness notes and the turn_start hooks. It reports whether the turn
// goes on.
func (h *TurnHost) open() bool {
	h.opening.Do(func() {
		if h.written == nil {
			return
		}
		t := h.t
		err := <-h.written
		t.emit(t.e.budget(t.s))
		t.opened = true
		if err != nil {
			h.failed = true
			h.cancel()
			t.emit(wire.Error{Message: err.Error()})
			return
		}
		for _, n := range t.notes {
			t.emit(wire.HarnessNote{Text: n})
		}
		t.observe(h.ctx, HookTurnStart, PromptPayload{SessionID: t.s.ID, Prompt: h.text})
	})
	return !h.failed
}

// enter takes the host's lock once the turn has opened; false (and no
// lock) when the turn ended because the prompt could not be written.
func (h *TurnHost) enter() bool {
	if !h.open() {
		return false
	}
	h.lock()
	return true
}

func newTurnHost(ctx context.Context, t *turn) *TurnHost {
	return &TurnHost{t: t, ctx: ctx, mu: make(chan struct{}, 1)}
}

func (h *TurnHost) lock()   { h.mu <- struct{}{} }
func (h *TurnHost) unlock() { <-h.mu }

// SessionID is the id of the session the turn belongs to.
func (h *TurnHost) SessionID() string { return h.t.s.ID }

// Emit sends one event of the turn. The result of a tool the backend ran
// itself (tool_end, diff) is scrubbed of openmax's secrets first, as
// CallTool's results are.
func (h *TurnHost) Emit(ev wire.Event) {
	if secrets := h.t.e.Secrets; len(secrets) > 0 {
		switch e := ev.(type) {
		case wire.ToolEnd:
			e.Output = redact.String(e.Output, secrets)
			ev = e
		case wire.Diff:
			e.Path, e.Diff = redact.String(e.Path, secrets), redact.String(e.Diff, secrets)
			ev = e
		}
	}
	if !h.enter() {
		return
	}
	defer h.unlock()
	h.t.emit(ev)
}

// Tools lists openmax's own tools, as the model should be offered them.
func (h *TurnHost) Tools() []provider.ToolSpec {
	if h.t.e.Tools == nil {
		return nil
	}
	return h.t.e.Tools.Specs()
}

// CallTool runs one call of openmax's tool name through the same path as
// the engine's own calls (tool_start, deny rules, approval, the tool,
// diffs, tool_end, the harness note of a refusal) and returns its result
// for the backend to hand back to its model. The result is not written to
// the session: the backend's program holds the conversation.
func (h *TurnHost) CallTool(ctx context.Context, callID, name string, args json.RawMessage) tool.Result {
	if !h.enter() {
		return tool.Failed("not run: the turn ended (its prompt could not be written to the session)")
	}
	defer h.unlock()
	res, _, crash := h.t.dispatch(ctx, provider.ToolCall{ID: callID, Name: name, Args: args}, func(tool.Result) error { return nil })
	if crash != nil && res.OK {
		res = tool.Failed("tool crashed: %v", crash)
	}
	return res
}

// Thread is the id the backend keeps this session's conversation under,
// as SetThread saved it (also by an earlier process, for a continued
// session); "" when none yet.
func (h *TurnHost) Thread() string {
	h.t.s.mu.Lock()
	defer h.t.s.mu.Unlock()
	return h.t.s.backendThread
}

// SetThread saves the backend's id for this session's conversation with
// the session's state, so --continue resumes it.
func (h *TurnHost) SetThread(id string) {
	h.open() // after the prompt; the thread is kept even when the turn failed
	h.t.s.mu.Lock()
	h.t.s.backendThread = id
	h.t.s.mu.Unlock()
	h.t.s.stateChanged()
}

// Reply keeps the model's final text of the turn in the session, so a
// continued session shows it.
func (h *TurnHost) Reply(text string) error {
	if !h.open() {
		return errors.New("the turn ended: its prompt could not be written to the session")
	}
	return h.t.s.append(provider.Message{Role: provider.RoleAssistant, Text: text})
}
