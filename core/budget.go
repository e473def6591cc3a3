package core

import (
	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/provider"
)

// budget estimates how full the window is: about four bytes per token over
// the transcript and the tool schemas sent with every request.
func (e *Engine) budget(s *Session) wire.Budget {
	used := e.estimate(s)
	s.mu.Lock()
	if s.scale > 1 {
		used = int(float64(used)*s.scale + 0.5)
	}
	s.mu.Unlock()
	window := e.ContextTokens
	if window <= 0 {
		window = DefaultContextTokens
	}
	return wire.Budget{UsedTokens: used, ContextTokens: window}
}

// estimate is the token estimate of the next request: about four bytes a
// token over the transcript and the tool schemas sent with every request.
func (e *Engine) estimate(s *Session) int { return e.estimateOf(s.Messages()) }

// estimateOf estimates a request carrying msgs.
func (e *Engine) estimateOf(msgs []provider.Message) int {
	n := len(e.System)
	for _, m := range msgs {
		n += len(m.Text) + len(m.CallID)
		for _, th := range m.Thinking {
			n += len(th.Text)
		}
		for _, c := range m.ToolCalls {
			n += len(c.Name) + len(c.Args)
		}
	}
	for _, sp := range e.Tools.Specs() {
		n += len(sp.Name) + len(sp.Description) + len(sp.Schema)
	}
	return (n + 3) / 4
}

// Compaction thresholds, as fractions of the window: past compactAt the
// oldest exchanges are dropped until the estimate is under compactTo.
const (
	compactAt = 0.8
	compactTo = 0.6
)

// compact prunes the oldest exchanges (a user message and everything up to
// the next one) when the next request nears the window, and reports it with
// a compacted receipt. It never drops the latest exchange. The tool schemas
// cost every request the same: when they take half the window or more the
// client is told once (schemas_over_budget), and once they take all that
// compaction could leave, pruning stops.
func (t *turn) compact() {
	window := t.e.ContextTokens
	if window <= 0 {
		window = DefaultContextTokens
	}
	schema := 0
	for _, sp := range t.e.Tools.Specs() {
		schema += (len(sp.Name) + len(sp.Description) + len(sp.Schema) + 3) / 4
	}
	target := int(float64(window) * compactTo)
	if schema*2 >= window && !t.s.warnedSchemas {
		t.s.warnedSchemas = true
		t.emit(wire.SchemasOverBudget{SchemaTokens: schema, BudgetTokens: target})
	}
	before := t.e.estimate(t.s)
	if float64(before) < float64(window)*compactAt || schema >= target {
		return
	}
	t.s.mu.Lock()
	msgs := t.s.messages
	dropped := 0
	for t.e.estimateOf(msgs) > target {
		next := -1
		for i := 1; i < len(msgs); i++ {
			if msgs[i].Role == provider.RoleUser {
				next = i
				break
			}
		}
		if next < 0 {
			break // only the latest exchange is left
		}
		dropped += next
		msgs = msgs[next:]
	}
	t.s.messages = append([]provider.Message(nil), msgs...)
	t.s.mu.Unlock()
	t.emit(wire.Compacted{TokensBefore: before, TokensAfter: t.e.estimate(t.s), CompactedMessages: dropped})
}
