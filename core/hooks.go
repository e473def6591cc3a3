package core

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/provider"
)

// HookEvent names a point of a turn where hooks run. Two events are
// intercepts, whose hooks may refuse what is about to happen; the others
// are observe-only notifications, whose hooks can never change the turn.
type HookEvent string

// The hook events.
const (
	// HookUserPromptSubmit is an intercept run on a user prompt before it
	// reaches the model (payload PromptPayload). A refusal ends the turn
	// with stop_reason blocked and nothing is sent to the model.
	HookUserPromptSubmit HookEvent = "user_prompt_submit"
	// HookTurnEnd is an intercept run on a completed model reply that
	// asks for no tools (payload TurnEndPayload). A refusal puts its
	// reason in the transcript as a user message and the turn continues.
	HookTurnEnd HookEvent = "turn_end"

	// HookTurnStart is observed once a prompt is admitted into the
	// transcript, before the first model request (payload PromptPayload).
	HookTurnStart HookEvent = "turn_start"
	// HookToolStart is observed before a tool call runs (ToolStartPayload).
	HookToolStart HookEvent = "tool_start"
	// HookToolEnd is observed after a tool call returned (ToolEndPayload).
	HookToolEnd HookEvent = "tool_end"
	// HookTurnDone is observed when the turn has ended, before done goes
	// out (payload TurnDonePayload).
	HookTurnDone HookEvent = "turn_done"
)

// Intercept reports whether hooks of the event may refuse (an intercept)
// rather than only observe.
func (e HookEvent) Intercept() bool {
	return e == HookUserPromptSubmit || e == HookTurnEnd
}

// MaxContinuations is how many turn_end refusals one turn honors; the
// next one ends the turn with stop_reason unverified.
const MaxContinuations = 8

// HookVerdict is the outcome of an intercept. The zero value allows.
type HookVerdict struct {
	Refused bool
	Reason  string // the refusal as the model will read it
	Hook    string // the refusing hook's name
}

// HookFailure is a hook that did not run or did not answer usably; the
// engine reports each one as hook_failed and the turn proceeds.
type HookFailure struct {
	Hook   string
	Event  HookEvent
	Detail string
}

// Hooks runs the configured hooks of a session. Implementations (package
// core/hook) decide how a failing intercept hook counts: fail-open means
// a HookFailure and an allowing verdict; fail-closed means a HookFailure
// and a refusing verdict. The engine reports every failure as hook_failed
// and honors the verdict as given.
type Hooks interface {
	// Intercept runs the hooks of an intercept event in order until one
	// refuses. payload is one of the *Payload types of this package.
	Intercept(ctx context.Context, event HookEvent, payload any) (HookVerdict, []HookFailure)
	// Observe notifies the hooks of an event; it cannot refuse.
	Observe(ctx context.Context, event HookEvent, payload any) []HookFailure
	// Close stops any persistent hook processes.
	Close() error
}

// PromptPayload is the payload of user_prompt_submit and turn_start.
type PromptPayload struct {
	SessionID string `json:"session_id"`
	Prompt    string `json:"prompt"`
}

// TurnEndPayload is the payload of turn_end: the completed reply, and how
// many refusals were honored before this attempt and how many are left.
type TurnEndPayload struct {
	SessionID         string `json:"session_id"`
	Text              string `json:"text"`
	StopReason        string `json:"stop_reason"`
	Continuation      int    `json:"continuation"`
	ContinuationsLeft int    `json:"continuations_left"`
}

// ToolStartPayload is the payload of tool_start.
type ToolStartPayload struct {
	SessionID string          `json:"session_id"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Args      json.RawMessage `json:"args"`
}

// ToolEndPayload is the payload of tool_end.
type ToolEndPayload struct {
	SessionID string `json:"session_id"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	OK        bool   `json:"ok"`
	Output    string `json:"output"`
}

// TurnDonePayload is the payload of turn_done.
type TurnDonePayload struct {
	SessionID  string `json:"session_id"`
	StopReason string `json:"stop_reason"`
}

// hookFailed reports each failure as hook_failed.
func (t *turn) hookFailed(fs []HookFailure) {
	for _, f := range fs {
		t.emit(wire.HookFailed{Hook: f.Hook, Event: string(f.Event), Detail: f.Detail})
	}
}

// observe notifies the observe-only hooks of event; their failures are
// reported and never change the turn.
func (t *turn) observe(ctx context.Context, event HookEvent, payload any) {
	if t.e.Hooks == nil {
		return
	}
	var fails []HookFailure
	func() {
		defer t.hookCrash(event, &fails)
		fails = t.e.Hooks.Observe(ctx, event, payload)
	}()
	t.hookFailed(fails)
}

// intercept runs the intercept hooks of event, a crash counting as a
// failure (fail-open) like any other.
func (t *turn) intercept(ctx context.Context, event HookEvent, payload any) (v HookVerdict) {
	var fails []HookFailure
	func() {
		defer t.hookCrash(event, &fails)
		v, fails = t.e.Hooks.Intercept(ctx, event, payload)
	}()
	t.hookFailed(fails)
	return v
}

// hookCrash, deferred around a call of the hooks, turns a panic of the
// hook runner into a failure of the call (reported as hook_failed, the
// stack to OnPanic): a hook, working or not, never breaks a turn.
func (t *turn) hookCrash(event HookEvent, fails *[]HookFailure) {
	if r := recover(); r != nil {
		t.e.panicked(r)
		*fails = append(*fails, HookFailure{Hook: "hooks", Event: event, Detail: fmt.Sprintf("the hook runner crashed: %v", r)})
	}
}

// turnDone notifies the turn_done observers once the turn's stop_reason is
// settled (even by a crash), whatever the turn's context says.
func (t *turn) turnDone(ctx context.Context, stop *string) {
	t.observe(context.WithoutCancel(ctx), HookTurnDone, TurnDonePayload{SessionID: t.s.ID, StopReason: *stop})
}

// submit runs the user_prompt_submit intercept on text. When a hook
// refuses, the prompt never enters the transcript (it is not sent to the
// model, now or later); a harness note saying that a prompt was blocked,
// by which hook and why, is written to the session instead, then budget
// opens the turn, harness_note reports the note and the turn ends blocked.
// It returns "" when the prompt may go on.
func (t *turn) submit(ctx context.Context, text string) (stop string) {
	v := t.intercept(ctx, HookUserPromptSubmit, PromptPayload{SessionID: t.s.ID, Prompt: text})
	if !v.Refused {
		return ""
	}
	note := blockedNote(v)
	err := t.s.append(provider.Message{Role: provider.RoleUser, Text: note})
	t.emit(t.e.budget(t.s))
	t.opened = true
	if err != nil {
		t.emit(wire.Error{Message: err.Error()})
		return wire.StopError
	}
	t.emit(wire.HarnessNote{Text: note})
	return wire.StopBlocked
}

// blockedNote is the transcript's record of a blocked prompt.
func blockedNote(v HookVerdict) string {
	reason := v.Reason
	if reason == "" {
		reason = "no reason given"
	}
	return fmt.Sprintf("[openmax] A user prompt was blocked by hook %q and was not sent: %s", v.Hook, reason)
}

// turnEnd runs the turn_end intercept on a completed reply that asks for
// no tools. On a refusal the reason goes into the transcript as a user
// message, persisted before turn_refused goes out, and again is true: the
// turn makes another model request. The refusal after MaxContinuations
// honored ones, or one that cannot be persisted, ends the turn
// unverified. Otherwise stop is the turn's stop_reason.
func (t *turn) turnEnd(ctx context.Context, r reply, stop string) (again bool, _ string) {
	left := MaxContinuations - t.refusals
	v := t.intercept(ctx, HookTurnEnd, TurnEndPayload{
		SessionID: t.s.ID, Text: r.text, StopReason: stop,
		Continuation: t.refusals, ContinuationsLeft: left,
	})
	switch {
	case !v.Refused:
		return false, stop
	case ctx.Err() != nil:
		return false, wire.StopCancelled
	case left <= 0:
		return false, wire.StopUnverified
	}
	reason := v.Reason
	if reason == "" {
		reason = fmt.Sprintf("hook %q refused the reply without a reason", v.Hook)
	}
	if r.text == "" {
		// turn_refused follows the refused completion's message_done.
		t.emit(wire.MessageDone{})
	}
	if err := t.s.append(provider.Message{Role: provider.RoleUser, Text: reason}); err != nil {
		// The stop_reason says it all: an error line would claim the
		// turn failed (the checker and the spec allow one only before
		// error or truncated), while the reply stands, unverified.
		return false, wire.StopUnverified
	}
	t.emit(wire.TurnRefused{Hook: v.Hook, Reason: reason, Continuation: t.refusals, ContinuationsLeft: left})
	t.refusals++
	t.refusal = reason
	return true, ""
}
