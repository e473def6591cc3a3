package core

import (
	"context"
	"fmt"
	"sync"

	"github.com/openmax/openmax/provider"
)

// Session is one conversation: its id and transcript. A session runs at
// most one turn at a time; Messages must not be read while a turn runs.
type Session struct {
	ID string

	mu       sync.Mutex
	messages []provider.Message
	persist  func(provider.Message) error
	// stream starts a record written while a reply streams in
	// (StreamRecords); nil appends every message whole through persist.
	stream func(provider.Role) (RecordStream, error)
	// scale corrects the estimate when the server counted more prompt
	// tokens than estimated for the last request.
	scale float64
	// warnedSchemas records that schemas_over_budget went out.
	warnedSchemas bool
	// backendThread is the Backend's id for the conversation (TurnHost).
	backendThread string
	// saveState persists scale and warnedSchemas (SetState); nil keeps
	// them in memory.
	saveState func(SessionState) error
	// forceCompact asks the next turn for a compaction (RequestCompaction).
	forceCompact bool
	// notes are harness notes queued for the next turn (QueueNote).
	notes []string
	// abandoned holds, by tool name, the end of a call that ignored its
	// cancellation and is still running; closed when it returns.
	abandoned map[string]chan struct{}
	// mode and approver gate mutating tool calls (SetApprovals).
	mode     func() string
	approver Approver
}

// SetApprovals sets how the session's mutating tool calls are gated: mode
// reports the approval mode ("auto" runs them, "ask" asks approver first,
// "readonly" refuses them; nil means auto) and approver answers the
// requests of ask mode (nil declines them). Approval state belongs to the
// session, never to the Engine, which many sessions may share. Call it
// before the session's first turn; it must not change while a turn runs.
func (s *Session) SetApprovals(mode func() string, approver Approver) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mode, s.approver = mode, approver
}

// approvals returns the session's mode and approver.
func (s *Session) approvals() (func() string, Approver) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mode, s.approver
}

// NewSession returns an empty session kept in memory only.
func NewSession(id string) *Session { return &Session{ID: id} }

// NewSessionFrom returns a session continuing history. Every message the
// engine adds is handed to persist (when set) before any event reporting it
// goes out; a persist failure ends the turn with an error.
func NewSessionFrom(id string, history []provider.Message, persist func(provider.Message) error) *Session {
	return &Session{ID: id, messages: append([]provider.Message(nil), history...), persist: persist}
}

// RecordStream is one message written to the session's record while its
// text streams in (core/store's Stream is one). Write takes the next piece
// of the text encoded as JSON string content (internal/jsonstr, no HTML
// escaping, no quotes); Commit the last piece and the whole message (its
// text is what the pieces hold), and returns once the message is as
// durable as persist makes it; Abort drops the record. After a failed
// Write the record is gone and the message is appended whole instead.
type RecordStream interface {
	Write(quoted []byte) error
	Commit(quoted []byte, m provider.Message) error
	Abort() error
}

// StreamRecords makes long replies go to the session's record as they
// stream, through records begin starts, instead of whole through persist
// once complete: so a long reply's end waits for its last piece, not for
// the whole of it to be encoded and written. Call it before the session's
// first turn.
func (s *Session) StreamRecords(begin func(provider.Role) (RecordStream, error)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stream = begin
}

// streamer returns the session's StreamRecords function, or nil.
func (s *Session) streamer() func(provider.Role) (RecordStream, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stream
}

// commit completes a streamed record of m, the last piece of its text
// being quoted, and adds m, as append does.
func (s *Session) commit(rec RecordStream, quoted []byte, m provider.Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := rec.Commit(quoted, m); err != nil {
		return fmt.Errorf("could not write the session record: %w", err)
	}
	s.messages = append(s.messages, m)
	return nil
}

// Messages returns a copy of the transcript.
func (s *Session) Messages() []provider.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]provider.Message(nil), s.messages...)
}

// view returns the transcript without copying it, for the engine's own
// reads (every turn's request and estimate: a copy there made a T-turn
// session cost O(T²) in copies). It is safe because the session never
// writes a message in place: it only appends, or replaces the whole slice
// (compaction). The view's capacity is its length, so appending to it
// copies; its elements must not be modified.
func (s *Session) view() []provider.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.messages[:len(s.messages):len(s.messages)]
}

// WaitAbandoned waits until every tool call the session abandoned on a
// cancel (see Engine.ToolGrace) has returned, or until ctx ends, and
// reports ctx's error then.
func (s *Session) WaitAbandoned(ctx context.Context) error {
	s.mu.Lock()
	var pending []chan struct{}
	for _, ch := range s.abandoned {
		pending = append(pending, ch)
	}
	s.mu.Unlock()
	for _, ch := range pending {
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// append adds messages, writing each through persist first.
func (s *Session) append(m ...provider.Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, msg := range m {
		if s.persist != nil {
			if err := s.persist(msg); err != nil {
				return fmt.Errorf("could not write the session record: %w", err)
			}
		}
		s.messages = append(s.messages, msg)
	}
	return nil
}
