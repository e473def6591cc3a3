package codexbackend

import (
	"context"

	"github.com/openmax/openmax/core"
	"github.com/openmax/openmax/provider/codex"
)

// runTurns runs one openmax turn on the thread s: a codex turn for text,
// then, when codex completes it, the turn_end hooks on its reply through
// the engine's own path (core.TurnHost.TurnEnd). A refusal the harness
// honors is in the session and on the wire (turn_refused) already; the
// codex thread continues with its reason as the next user input
// (turn/start on the same thread), until a hook allows the reply or the
// refusals run out (unverified). Every codex turn/start carries the
// approval mode's policy (approval.go) and, the first one, the harness
// notes the session wrote before the prompt.
func (b *Backend) runTurns(ctx context.Context, h *core.TurnHost, s *codex.Session, text string) string {
	if notes := h.Notes(); len(notes) > 0 {
		s.Prepend(notes...)
	}
	for {
		s.SetPolicy(policy(h.Mode()))
		r := newTurnRun(b, h, s)
		stop := r.run(ctx, text)
		if stop != string(codex.TurnStatusCompleted) {
			return stop
		}
		again, reason, end := h.TurnEnd(ctx, r.reply, stop)
		if !again {
			return end
		}
		text = reason
	}
}
