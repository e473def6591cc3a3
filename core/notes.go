package core

import "github.com/openmax/openmax/provider"

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
