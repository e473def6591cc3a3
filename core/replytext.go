package core

import (
	"slices"
	"strings"

	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/internal/jsonstr"
	"github.com/openmax/openmax/provider"
)

// streamChunk is how much encoded text a reply gathers before it is
// written to the session's record: the bound on what is left to write when
// the reply completes, and on what a streamed reply holds back from the
// disk while it streams. A reply shorter than that is appended whole.
const streamChunk = 64 << 10

// replyText is the text of one reply while it streams. It keeps the text
// (the transcript's copy), encodes it once, piece by piece, as JSON string
// content (what message_done carries and the session's record holds), and
// writes that encoding to a record of the session (Session.StreamRecords)
// every streamChunk bytes. So when the reply completes, what remains
// before message_done is its last piece and the fsync, whatever its
// length, and message_done's line is written from the encoding already
// made. The encoding is kept in the pieces the record was given, never
// joined: a long reply's is not copied as it grows, nor at its end (the
// stdio writer hands message_done's line on in those pieces).
type replyText struct {
	s      *Session
	raw    strings.Builder
	esc    jsonstr.Escaper
	pieces [][]byte     // the encoding of raw, written to rec (unless whole)
	quoted []byte       // the rest of the encoding, but for a held-back cut character
	rec    RecordStream // the record being streamed, once begun
	whole  bool         // streaming is off (no StreamRecords, or it failed): save appends the message whole
}

// Len is the length of the text so far.
func (r *replyText) Len() int { return r.raw.Len() }

// String is the text so far.
func (r *replyText) String() string { return r.raw.String() }

// add appends a piece of the text.
func (r *replyText) add(text string) {
	// raw doubles when full: append alone grows a long slice by a quarter,
	// copying a long reply several times over.
	if r.raw.Cap()-r.raw.Len() < len(text) {
		r.raw.Grow(len(text)) // to twice its capacity and text
	}
	r.raw.WriteString(text)
	if need := 6 * len(text); cap(r.quoted)-len(r.quoted) < need { // \u00XX: at most 6 bytes a byte
		// Up to streamChunk quoted doubles; a piece after the first starts
		// at that size.
		grow := max(cap(r.quoted), need)
		if len(r.pieces) > 0 && len(r.quoted) == 0 {
			grow = max(streamChunk+4<<10, need)
		}
		r.quoted = slices.Grow(r.quoted, grow)
	}
	r.quoted = r.esc.Append(r.quoted, text)
	if len(r.quoted) >= streamChunk {
		r.cut()
	}
}

// cut ends the current piece of the encoding: it is written to the
// record (unless streaming is off) and kept, and a new one begins.
func (r *replyText) cut() {
	if !r.whole {
		r.write(r.quoted)
	}
	r.pieces = append(r.pieces, r.quoted)
	r.quoted = nil
}

// write hands the record a piece of the encoding, beginning the record
// first. On a failure streaming stops, and save appends the whole message
// instead (which reports the failure if the disk still fails).
func (r *replyText) write(piece []byte) {
	if r.rec == nil {
		begin := r.s.streamer()
		if begin == nil {
			r.whole = true
			return
		}
		rec, err := begin(provider.RoleAssistant)
		if err != nil {
			r.whole = true
			return
		}
		r.rec = rec
	}
	if err := r.rec.Write(piece); err != nil {
		r.rec, r.whole = nil, true // the record is cut off already
	}
}

// save adds m, the completed reply whose text is this one, to the
// session: by completing the streamed record, or whole when none was
// begun.
func (r *replyText) save(m provider.Message) error {
	r.quoted = r.esc.Flush(r.quoted)
	if rec := r.rec; rec != nil {
		r.rec = nil
		return r.s.commit(rec, r.quoted, m)
	}
	return r.s.append(m)
}

// done is the message_done of the saved text, its line written from the
// encoding already made.
func (r *replyText) done() wire.MessageDone {
	return wire.MessageDoneQuoted(r.raw.String(), append(r.pieces, r.quoted)...)
}

// drop abandons a record still streaming: a reply that is not kept.
func (r *replyText) drop() {
	if r.rec != nil {
		r.rec.Abort()
		r.rec = nil
	}
}
