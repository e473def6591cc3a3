package core

import (
	"context"
	"encoding/json"

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
	// RunTurn runs one turn for text, which the session already holds as
	// its last user message. It emits every event of the turn through
	// the host except done, and returns the stop reason. Cancelling ctx
	// must end the turn promptly with wire.StopCancelled.
	RunTurn(ctx context.Context, h *TurnHost, text string) string
}

// TurnHost is what a Backend may use of the turn it runs. Its methods are
// safe for concurrent use: the backend's tool calls may come from
// goroutines of its own.
type TurnHost struct {
	t   *turn
	ctx context.Context // the turn's: hooks observe under it (backend_rules.go)
	mu  chan struct{}   // one event or tool call at a time, in order
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
	h.lock()
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
	h.lock()
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
	h.t.s.mu.Lock()
	h.t.s.backendThread = id
	h.t.s.mu.Unlock()
	h.t.s.stateChanged()
}

// Reply keeps the model's final text of the turn in the session, so a
// continued session shows it.
func (h *TurnHost) Reply(text string) error {
	return h.t.s.append(provider.Message{Role: provider.RoleAssistant, Text: text})
}
