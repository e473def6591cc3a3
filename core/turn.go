package core

import (
	"context"
	"errors"
	"fmt"

	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/provider"
)

type turn struct {
	e        *Engine
	s        *Session
	emit     Emit
	token    func(text string) // emits a token (Emitter.Token)
	requests int               // model requests made so far
	spent    int               // tokens this turn has spent
	refusals int               // turn_end refusals honored (hooks.go)
	opened   bool              // budget, the turn's first line, went out
	// refusal is the reason of the last turn_end refusal honored, as
	// the transcript holds it (a Backend continues its thread with it).
	refusal string
	// notes are the harness notes written before this turn's prompt.
	notes []string
	// host is the TurnHost of a Backend's turn (backend.go), nil for the
	// engine's own.
	host *TurnHost
}

func (t *turn) run(ctx context.Context) string {
	max := t.e.MaxIterations
	if max <= 0 {
		max = DefaultMaxIterations
	}
	for i := 1; ; i++ {
		if ctx.Err() != nil {
			return wire.StopCancelled
		}
		if cap := t.e.MaxAgentTokens; cap > 0 && t.spent >= cap {
			return wire.StopBudgetExhausted
		}
		t.compact()
		r := t.stream(ctx)
		if r.stop != "" {
			return r.stop
		}
		if len(r.calls) == 0 {
			stop := r.finish
			if stop == "" {
				stop = "stop"
			}
			if t.e.Hooks == nil {
				return stop
			}
			if again, end := t.turnEnd(ctx, r, stop); !again {
				return end
			}
			continue
		}
		if stop := t.runTools(ctx, r.calls); stop != "" {
			return stop
		}
		if i >= max {
			return wire.StopMaxIterations
		}
	}
}

// reply is the outcome of one model request.
type reply struct {
	stop   string // set when the turn ends here
	finish string
	text   string // the reply's text
	calls  []provider.ToolCall
}

// stream sends one request and turns its parts into events and a
// transcript entry, applying the turn guarantees for truncation, stream
// failures and cancellation.
func (t *turn) stream(ctx context.Context) reply {
	t.requests++
	estimate := t.e.estimate(t.s)
	reported := false
	defer func() {
		if !reported {
			t.spent += estimate
		}
	}()
	req := provider.Request{
		Model:    t.e.Model,
		System:   t.e.System,
		Messages: t.s.view(),
		Tools:    t.e.Tools.Specs(),
	}
	text := &replyText{s: t.s}
	defer text.drop() // a reply not saved below (a failure, a panic) leaves no record
	var (
		thinking []provider.Thinking
		phase    string
		calls    []provider.ToolCall
		unrun    []provider.UnrunCall
		finish   string
		finished bool
		failure  error
	)
	for part := range t.e.Provider.Stream(ctx, req) {
		if failure != nil {
			continue // nothing after an error counts
		}
		switch p := part.(type) {
		case provider.TextDelta:
			if p.Text == "" {
				continue
			}
			t.token(p.Text)
			text.add(p.Text)
		case provider.ThinkingDelta:
			thinking = addThinking(thinking, p)
			if p.Text != "" {
				t.emit(wire.Thinking{Text: p.Text})
			}
		case provider.MessagePhase:
			phase = p.Phase
		case provider.ToolCallPart:
			c := p.Call
			if c.ID == "" {
				// Some servers send no id; the wire and the transcript need one.
				c.ID = fmt.Sprintf("call_%d_%d", t.requests, len(calls)+1)
			}
			calls = append(calls, c)
		case provider.UnrunCall:
			if p.Call.ID == "" {
				p.Call.ID = fmt.Sprintf("call_%d_%d", t.requests, len(calls)+len(unrun)+1)
			}
			unrun = append(unrun, p)
		case provider.Usage:
			reported = true
			t.spent += p.PromptTokens + p.CompletionTokens
			if estimate > 0 {
				t.s.mu.Lock()
				t.s.scale = float64(p.PromptTokens) / float64(estimate)
				t.s.mu.Unlock()
				t.s.stateChanged()
			}
			t.emit(wire.Usage{PromptTokens: p.PromptTokens, CompletionTokens: p.CompletionTokens, CachedTokens: p.CachedTokens})
		case provider.Finish:
			finish, finished = p.Reason, true
		case provider.Error:
			failure = p.Err
			if failure == nil {
				failure = errors.New("provider failed without saying why")
			}
		case provider.Retry:
			if text.Len() > 0 {
				failure = fmt.Errorf("provider retried a reply after sending text (%s)", p.Reason)
				continue
			}
			thinking, phase, calls, unrun, finish, finished = nil, "", nil, nil, "", false
			t.emit(wire.Retry{Attempt: p.Attempt, MaxAttempts: p.MaxAttempts, Reason: p.Reason})
		}
	}
	partial := text.String()
	switch {
	case ctx.Err() != nil:
		// Cancelled: what streamed is closed and kept, as the client saw it.
		if partial != "" {
			if err := text.save(provider.Message{Role: provider.RoleAssistant, Text: partial}); err != nil {
				return t.fail(err)
			}
			t.emit(text.done())
		}
		return reply{stop: wire.StopCancelled}
	case failure != nil && !errors.Is(failure, provider.ErrIncomplete):
		// The provider reported a failure: the partial text is not kept.
		t.emit(wire.Error{Message: failure.Error()})
		return reply{stop: wire.StopError}
	case failure != nil || !finished:
		// No completion signal: keep what streamed, refuse its tool calls.
		if partial != "" {
			if err := text.save(provider.Message{Role: provider.RoleAssistant, Text: partial}); err != nil {
				return t.fail(err)
			}
			t.emit(text.done())
		}
		msg := provider.ErrIncomplete.Error()
		if failure != nil {
			msg = failure.Error()
		}
		if len(calls) > 0 {
			msg += fmt.Sprintf("; %d tool call(s) not run", len(calls))
		}
		t.emit(wire.Error{Message: "reply truncated: " + msg})
		return reply{stop: wire.StopTruncated}
	}
	if err := text.save(provider.Message{Role: provider.RoleAssistant, Text: partial, Thinking: thinking, ToolCalls: calls, Phase: phase}); err != nil {
		return t.fail(err)
	}
	if partial != "" {
		t.emit(text.done())
	}
	for _, u := range unrun {
		// Shown as the reply made it, run never: not in the transcript.
		args, _ := objectArgs(u.Call.Args)
		t.emit(wire.ToolStart{CallID: u.Call.ID, Name: u.Call.Name, Args: displayArgs(args)})
		t.emit(wire.ToolEnd{CallID: u.Call.ID, OK: false, Output: "not run: " + u.Reason})
	}
	return reply{finish: finish, text: partial, calls: calls}
}

// fail ends the turn on a failure of the harness itself.
func (t *turn) fail(err error) reply {
	t.emit(wire.Error{Message: err.Error()})
	return reply{stop: wire.StopError}
}

// addThinking folds a delta into the reasoning blocks: a signature closes
// the current block.
func addThinking(blocks []provider.Thinking, d provider.ThinkingDelta) []provider.Thinking {
	if n := len(blocks); n == 0 || blocks[n-1].Signature != "" {
		blocks = append(blocks, provider.Thinking{})
	}
	b := &blocks[len(blocks)-1]
	b.Text += d.Text
	b.Signature = d.Signature
	return blocks
}
