package core

import (
	"fmt"

	"github.com/openmax/openmax/provider"
)

// QueueNote queues a harness note (a refreeze receipt, a policy or
// settings notice) for the session's next turn: it is written into the
// transcript as a user message just before that turn's prompt, persisted
// like every message before any event reports it, and reported by a
// harness_note with an empty call_id right after the turn's budget.
func (s *Session) QueueNote(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.notes = append(s.notes, text)
}

// takeNotes returns the queued notes as transcript messages and clears
// the queue.
func (s *Session) takeNotes() []provider.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var msgs []provider.Message
	for _, n := range s.notes {
		msgs = append(msgs, provider.Message{Role: provider.RoleUser, Text: n})
	}
	s.notes = nil
	return msgs
}

// ModeNote is the settings notice written into the transcript when a
// client changes the approval mode from one mode to another during a
// session (queued with QueueNote): what the model's calls now meet.
func ModeNote(from, to string) string {
	var now string
	switch to {
	case "auto":
		now = "calls run without asking (deny rules still apply)"
	case "ask":
		now = "calls that change the project, and external tools, wait for a human's approval"
	case "readonly":
		now = "calls that change the project are refused without asking"
	default:
		now = "calls that change the project are refused (a mode openmax does not know)"
	}
	return fmt.Sprintf("[openmax] The approval mode of this project was changed from %s to %s: %s.", from, to, now)
}
