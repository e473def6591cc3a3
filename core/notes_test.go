package core_test

import (
	"context"
	"testing"

	"github.com/openmax/openmax/core"
	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/provider"
)

// TestQueuedNoteBeforeThePrompt: a queued harness note is written into the
// transcript just before the next prompt (persisted first), reported by a
// harness_note with an empty call_id right after budget, sent to the model,
// and only once.
func TestQueuedNoteBeforeThePrompt(t *testing.T) {
	p := mustScript(t, "replies:\n  - text: a\n  - text: b\n")
	e := newEngine(t, p)
	var persisted []provider.Message
	s := core.NewSessionFrom("s", nil, func(m provider.Message) error { persisted = append(persisted, m); return nil })
	s.QueueNote("note one")
	var first, second recorder
	e.RunTurn(context.Background(), s, "hi", first.emit)
	if got := first.types(); got != "budget harness_note token message_done" {
		t.Fatalf("first turn: %s", got)
	}
	if n := first.events[1].(wire.HarnessNote); n.Text != "note one" || n.CallID != "" {
		t.Errorf("note %+v", n)
	}
	if len(persisted) < 2 || persisted[0].Text != "note one" || persisted[1].Text != "hi" || persisted[0].Role != provider.RoleUser {
		t.Errorf("persisted %+v", persisted)
	}
	if req := p.Requests()[0].Messages; len(req) != 2 || req[0].Text != "note one" {
		t.Errorf("request %+v", req)
	}
	e.RunTurn(context.Background(), s, "again", second.emit)
	if got := second.types(); got != "budget token message_done" {
		t.Errorf("second turn: %s (the note went out twice?)", got)
	}
}
