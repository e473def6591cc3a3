package core

import (
	"context"
	"encoding/json"

	"github.com/openmax/openmax/core/wire"
)

// The rules of a turn that a Backend's own program must meet too: the
// approval mode and the deny rules on the actions it takes itself (codex's
// shell commands and file changes), the tool hooks on them, the notes of
// the turn, and the turn_end intercept on its finished reply. Each runs
// the engine's own code path, so a backend turn meets them exactly as an
// engine turn does.

// Mode is the session's approval mode now: auto, ask, readonly, or a
// value openmax does not know (which Gate treats as refusing).
func (h *TurnHost) Mode() string {
	modeOf := h.modeOf
	if h.written == nil {
		modeOf, _ = h.t.s.approvals()
	}
	if modeOf == nil {
		return "auto"
	}
	return modeOf()
}

// Notes are the harness notes written into the session just before this
// turn's prompt (and already reported as harness_note): a backend whose
// program holds the conversation sends them along with the prompt, so the
// model reads what the client was told it reads.
func (h *TurnHost) Notes() []string {
	return append([]string(nil), h.t.notes...)
}

// Gate decides an action that the backend's program asks to take and
// that changes the project, named name (the tool_start name of callID)
// with arguments args (a JSON object: matched by the deny rules and shown
// to the human): a deny rule refuses it in every mode, then the approval
// mode decides (auto: it runs; readonly: refused; ask: approval_request,
// approval_settled, and the client's answer). It returns why the action
// must not run, or "" to let it run.
func (h *TurnHost) Gate(ctx context.Context, callID, name string, args json.RawMessage) string {
	if !h.enter() {
		return "the turn ended: its prompt could not be written to the session"
	}
	defer h.unlock()
	if why := h.denied(name, args); why != "" {
		return why
	}
	return h.t.approve(ctx, callID, name, displayArgs(args))
}

// Denied is the refusal of the first deny rule matching the action name
// with arguments args, or "" when none does: for an action the backend's
// program took without asking, which can no longer be refused, so that the
// wire can say a rule matched it.
func (h *TurnHost) Denied(name string, args json.RawMessage) string {
	return h.denied(name, args)
}

func (h *TurnHost) denied(name string, args json.RawMessage) string {
	if h.t.e.Deny == nil {
		return ""
	}
	full, err := objectArgs(args)
	if err != nil {
		full = args
	}
	return h.t.e.Deny.Deny(name, full)
}

// ToolStarted reports a tool call the backend's program runs itself:
// tool_start, then the tool_start hooks.
func (h *TurnHost) ToolStarted(callID, name string, args json.RawMessage) {
	if !h.enter() {
		return
	}
	defer h.unlock()
	shown := displayArgs(args)
	h.t.emit(wire.ToolStart{CallID: callID, Name: name, Args: shown})
	h.t.observe(h.ctx, HookToolStart, ToolStartPayload{SessionID: h.t.s.ID, CallID: callID, Name: name, Args: shown})
}

// ToolEnded reports the end of such a call: tool_end, then note (when not
// empty) as the harness_note riding it (a refusal, or why a rule could not
// apply), then the tool_end hooks, in the engine's order.
func (h *TurnHost) ToolEnded(callID, name string, ok bool, output, note string) {
	if !h.enter() {
		return
	}
	defer h.unlock()
	h.t.emit(wire.ToolEnd{CallID: callID, OK: ok, Output: output})
	if note != "" {
		h.t.emit(wire.HarnessNote{CallID: callID, Text: note})
	}
	h.t.observe(h.ctx, HookToolEnd, ToolEndPayload{SessionID: h.t.s.ID, CallID: callID, Name: name, OK: ok, Output: output})
}

// Note reports a harness_note riding call callID ("" for none): a rule of
// openmax's that could not apply to what the backend's program did.
func (h *TurnHost) Note(callID, text string) {
	h.Emit(wire.HarnessNote{CallID: callID, Text: text})
}

// TurnEnd runs the turn_end hooks on the program's finished reply (text,
// the reply's final run of text; stop, how the program ended it), as the
// engine does for its own replies. On a refusal it honors, the reason is
// in the session as a user message and turn_refused went out: again is
// true, and the backend continues its conversation with reason as the next
// user input. Otherwise end is the turn's stop_reason: stop, or
// unverified once MaxContinuations refusals were honored (or a refusal
// could not be saved), or cancelled.
func (h *TurnHost) TurnEnd(ctx context.Context, text, stop string) (again bool, reason, end string) {
	if !h.open() {
		return false, "", wire.StopError
	}
	if h.t.e.Hooks == nil {
		return false, "", stop
	}
	h.lock()
	defer h.unlock()
	again, end = h.t.turnEnd(ctx, reply{text: text}, stop)
	if again {
		return true, h.t.refusal, ""
	}
	return false, "", end
}
