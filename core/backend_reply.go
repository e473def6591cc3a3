package core

import (
	"errors"

	"github.com/openmax/openmax/provider"
)

// BackendReply is one run of a backend's reply text while it streams,
// kept as the engine keeps its own replies (replytext.go): encoded once,
// piece by piece, and written to the session's record as it grows, so
// saving it at the end writes only its last piece and syncs. Done then
// writes message_done from that encoding, after the save: the reply is on
// disk before the event that reports it goes out.
//
// A BackendReply is used from one goroutine (the backend's loop); its
// record is written under the session's lock.
type BackendReply struct {
	h     *TurnHost
	text  replyText
	saved bool
}

// NewReply begins a run of reply text.
func (h *TurnHost) NewReply() *BackendReply {
	return &BackendReply{h: h, text: replyText{s: h.t.s}}
}

// Add appends a piece of the text (the backend emits its token itself).
// Nothing goes to the record before the prompt is written.
func (r *BackendReply) Add(text string) {
	if !r.h.open() {
		r.text.whole = true // the turn ended: Save refuses anyway
	}
	r.text.add(text)
}

// Len is the length of the text so far.
func (r *BackendReply) Len() int { return r.text.Len() }

// String is the text so far.
func (r *BackendReply) String() string { return r.text.String() }

// Saved reports whether Save succeeded.
func (r *BackendReply) Saved() bool { return r.saved }

// Save keeps the text in the session as an assistant message: the rest of
// its record written and synced. It is done once; text added afterwards is
// not kept.
func (r *BackendReply) Save() error {
	if r.saved {
		return nil
	}
	if !r.h.open() {
		r.text.drop()
		return errors.New("the turn ended: its prompt could not be written to the session")
	}
	if err := r.text.save(provider.Message{Role: provider.RoleAssistant, Text: r.text.String()}); err != nil {
		return err
	}
	r.saved = true
	return nil
}

// Done emits the message_done of the saved text, written from the
// encoding made on the way. It emits nothing for a reply not saved.
func (r *BackendReply) Done() {
	if r.saved {
		r.h.Emit(r.text.done())
	}
}

// Drop abandons a reply that is not kept: a record still streaming is cut
// off. A saved reply stays saved.
func (r *BackendReply) Drop() {
	if !r.saved {
		r.text.drop()
	}
}
