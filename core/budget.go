package core

import (
	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/provider"
)

// budget estimates how full the window is: about four bytes per token over
// the transcript and the tool schemas sent with every request.
func (e *Engine) budget(s *Session) wire.Budget {
	return wire.Budget{UsedTokens: s.scaled(e.estimate(s)), ContextTokens: e.window()}
}

// estimate is the token estimate of the next request: about four bytes a
// token over the transcript and the tool schemas sent with every request.
func (e *Engine) estimate(s *Session) int { return e.estimateOf(s.view()) }

// estimateOf estimates a request carrying msgs.
func (e *Engine) estimateOf(msgs []provider.Message) int {
	return EstimateTokens(e.System, msgs, e.Tools.Specs())
}

// EstimateTokens is the estimate of a request carrying system, msgs and
// tools that budget reports (before the session's scale): about four
// bytes a token over the system prompt, the messages' text, tool calls and
// thinking, and the tools' names, descriptions and schemas.
func EstimateTokens(system string, msgs []provider.Message, tools []provider.ToolSpec) int {
	n := len(system)
	for _, m := range msgs {
		n += len(m.Text) + len(m.CallID)
		for _, th := range m.Thinking {
			n += len(th.Text)
		}
		for _, c := range m.ToolCalls {
			n += len(c.Name) + len(c.Args)
		}
	}
	for _, sp := range tools {
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

// window is the model's context window in tokens.
func (e *Engine) window() int {
	if e.ContextTokens <= 0 {
		return DefaultContextTokens
	}
	return e.ContextTokens
}

// schemaTokens estimates what the frozen tool schemas cost every request.
func (e *Engine) schemaTokens() int {
	n := 0
	for _, sp := range e.Tools.Specs() {
		n += (len(sp.Name) + len(sp.Description) + len(sp.Schema) + 3) / 4
	}
	return n
}

// scaled is estimate corrected by the session's scale, as budget reports it.
func (s *Session) scaled(estimate int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.scale > 1 {
		return int(float64(estimate)*s.scale + 0.5)
	}
	return estimate
}

// compact prunes the oldest exchanges (a user message and everything up to
// the next one) when the next request nears the window, or when a
// compaction was requested (Session.RequestCompaction), and reports it with
// a compacted receipt. It never drops the latest exchange. The estimate is
// the one budget reports (scaled when the server counted more).
//
// The tool schemas cost every request the same. When they take half the
// window or more the client is told once per session (schemas_over_budget,
// kept across --continue by SessionState) and compaction starts earlier: as
// soon as the estimate passes the prune target rather than compactAt, since
// what the transcript may use is small. Once the schemas alone reach the
// target, pruning cannot pay for them and automatic compaction stops; a
// requested one still prunes what it can and says so.
//
// A requested compaction always gets its receipt: compacted_messages is 0
// when the transcript was already at or under the target (or is only the
// latest exchange, which is never dropped).
func (t *turn) compact() {
	window := t.e.window()
	schema := t.e.schemaTokens()
	target := int(float64(window) * compactTo)
	heavy := schema*2 >= window
	if heavy && !t.s.warnedOnce() {
		t.emit(wire.SchemasOverBudget{SchemaTokens: schema, BudgetTokens: target})
	}
	forced := t.s.takeForcedCompaction()
	before := t.s.scaled(t.e.estimate(t.s))
	start := float64(window) * compactAt
	if heavy {
		start = float64(target)
	}
	if !forced && (float64(before) < start || schema >= target) {
		return
	}
	t.s.mu.Lock()
	msgs := t.s.messages
	dropped := 0
	for t.scaledEstimate(msgs) > target {
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
	if dropped == 0 && !forced {
		return // nothing could go: no receipt for a compaction that did not happen
	}
	t.emit(wire.Compacted{TokensBefore: before, TokensAfter: t.s.scaled(t.e.estimate(t.s)), CompactedMessages: dropped})
}

// scaledEstimate is estimateOf msgs scaled by the session's scale; the
// caller holds t.s.mu.
func (t *turn) scaledEstimate(msgs []provider.Message) int {
	n := t.e.estimateOf(msgs)
	if t.s.scale > 1 {
		return int(float64(n)*t.s.scale + 0.5)
	}
	return n
}

// warnedOnce reports whether schemas_over_budget already went out in this
// session, and records (and saves) that it goes out now when it did not.
func (s *Session) warnedOnce() bool {
	s.mu.Lock()
	was := s.warnedSchemas
	s.warnedSchemas = true
	s.mu.Unlock()
	if !was {
		s.stateChanged()
	}
	return was
}
