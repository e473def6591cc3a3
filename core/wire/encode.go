package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
)

// AppendEvent appends the JSON line (with its newline) for an event of the
// given session: session_id, type, then the event's fields in definition
// order.
func AppendEvent(dst []byte, sessionID string, e Event) ([]byte, error) {
	dst = append(dst, `{"session_id":`...)
	dst = appendString(dst, sessionID)
	return appendEventAfterID(dst, e)
}

// AppendLine appends the JSON line (with its newline) for a non-event line:
// type, then the line's fields in definition order.
func AppendLine(dst []byte, l Line) ([]byte, error) {
	dst = append(dst, `{"type":`...)
	dst = appendString(dst, l.LineType())
	return appendFields(dst, l)
}

// appendFields appends v's fields after a line's type, then the closing
// brace and the newline: by v's plan when it has one (encode_fast.go),
// else through encoding/json.
func appendFields(dst []byte, v any) ([]byte, error) {
	if out, ok := appendFieldsFast(dst, v); ok {
		return out, nil
	}
	return appendFieldsReflect(dst, v)
}

// appendFieldsReflect is appendFields through encoding/json: the reference
// the fast path is held to, and the path of the types it does not plan.
func appendFieldsReflect(dst []byte, v any) ([]byte, error) {
	v = withDefaults(v)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return dst, fmt.Errorf("wire: encode %T: %w", v, err)
	}
	body := bytes.TrimSuffix(buf.Bytes(), []byte("\n")) // {...}
	if len(body) > 2 {
		dst = append(dst, ',')
		dst = append(dst, body[1:]...) // fields and the closing brace
	} else {
		dst = append(dst, '}')
	}
	return append(dst, '\n'), nil
}

// withDefaults returns v with every nil required array made empty and every
// empty object field made {}, so a zero value still encodes to a legal line.
func withDefaults(v any) any {
	rv := reflect.ValueOf(v)
	d := defByType[rv.Type()]
	if d == nil {
		return v
	}
	var cp reflect.Value
	for _, f := range d.Fields {
		fv := rv.Field(f.index)
		var repl reflect.Value
		switch {
		case f.Kind == KindArray && !f.Optional && fv.IsNil():
			repl = reflect.MakeSlice(fv.Type(), 0, 0)
		case f.Kind == KindObject && f.Object == nil && fv.Len() == 0:
			repl = reflect.ValueOf(json.RawMessage("{}"))
		default:
			continue
		}
		if !cp.IsValid() {
			cp = reflect.New(rv.Type()).Elem()
			cp.Set(rv)
		}
		cp.Field(f.index).Set(repl)
	}
	if cp.IsValid() {
		return cp.Interface()
	}
	return v
}

// appendString appends s as json.Marshal encodes it (HTML escaping on).
func appendString(dst []byte, s string) []byte {
	return appendQuoted(dst, s, true)
}

// LineWriter takes protocol lines one at a time, each whole and without its
// newline: how lines are framed on the way to the client is its business.
type LineWriter interface {
	WriteLine(line []byte) error
}

// Writer encodes protocol lines and hands each, whole, to a LineWriter in
// one call, so lines from concurrent emitters never interleave. It is safe
// for concurrent use and never calls its LineWriter concurrently. After the
// first write error every later call reports that error.
type Writer struct {
	mu        sync.Mutex
	lw        LineWriter
	sessionID string
	idPrefix  []byte // `{"session_id":"…"`, how every event line starts
	buf       []byte
	err       error
	failed    chan struct{}
}

// NewWriter returns a Writer to lw stamping events with sessionID.
func NewWriter(lw LineWriter, sessionID string) *Writer {
	return &Writer{lw: lw, sessionID: sessionID, failed: make(chan struct{}),
		idPrefix: appendString([]byte(`{"session_id":`), sessionID)}
}

// Failed is closed once a write has failed.
func (w *Writer) Failed() <-chan struct{} { return w.failed }

// Err returns the first write error, if any.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// SessionID is the id stamped on events.
func (w *Writer) SessionID() string { return w.sessionID }

// Event writes one event line.
func (w *Writer) Event(e Event) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if d, ok := e.(MessageDone); ok && d.quoted != nil {
		if pw, ok := w.lw.(PieceWriter); ok {
			if p := textPlans().messageDone; p != nil && len(*d.quoted) > 1 {
				return w.piecesLocked(pw, p, *d.quoted)
			}
		}
	}
	var err error
	w.buf, err = appendEventAfterID(append(w.buf[:0], w.idPrefix...), e)
	return w.flushLocked(err)
}

// Token writes the line of Token{Text: text}: what Event does with it,
// without making an Event of it (boxing the value costs an allocation, per
// token of a reply).
func (w *Writer) Token(text string) error {
	p := textPlans().token
	if p == nil {
		return w.Event(Token{Text: text})
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = appendText(append(w.buf[:0], w.idPrefix...), p, text)
	return w.flushLocked(nil)
}

// PieceWriter is implemented by a LineWriter that takes a line in pieces
// (core/stdio's StreamConn), so that a long line made of parts built
// beforehand (a message_done's text encoded while it streamed) is handed
// on without being joined into one buffer first. WriteLinePieces is
// WriteLine of the pieces' concatenation, which holds no newline; it may
// return only once they are written, and does not keep them.
type PieceWriter interface {
	WriteLinePieces(pieces [][]byte) error
}

// piecesLocked writes the line of a text event whose plan is p and whose
// text's encoding is quoted through pw, the pieces handed on as they are.
func (w *Writer) piecesLocked(pw PieceWriter, p *plan, quoted [][]byte) error {
	if w.err != nil {
		return w.err
	}
	head := appendQuotedHead(append(w.buf[:0], w.idPrefix...), p)
	w.buf = head
	pieces := make([][]byte, 0, len(quoted)+2)
	pieces = append(append(append(pieces, head), quoted...), []byte(quotedTail[:len(quotedTail)-1]))
	if err := pw.WriteLinePieces(pieces); err != nil {
		return w.failLocked(err)
	}
	return nil
}

// Line writes one non-event line.
func (w *Writer) Line(l Line) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	var err error
	w.buf, err = AppendLine(w.buf[:0], l)
	return w.flushLocked(err)
}

// Flusher is implemented by a LineWriter that may hold the lines it is
// given and write them later (core/stdio's StreamConn batches them). Flush
// returns once every line given before it is written, with the first
// error writing any of them.
type Flusher interface {
	Flush() error
}

// Flush makes a LineWriter that holds lines back (a Flusher) write them
// out now, and returns once it has. Its failure counts as a failed write:
// Failed closes and every later call reports it. With any other
// LineWriter, Flush only reports an earlier failure.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if f, ok := w.lw.(Flusher); ok {
		if err := f.Flush(); err != nil {
			return w.failLocked(err)
		}
	}
	return nil
}

func (w *Writer) flushLocked(err error) error {
	if w.err != nil {
		return w.err
	}
	if err != nil {
		return err
	}
	line := w.buf[:len(w.buf)-1] // Append* end every line with its newline
	if err := w.lw.WriteLine(line); err != nil {
		return w.failLocked(err)
	}
	if cap(w.buf) > 1<<20 {
		w.buf = nil // do not pin a huge line's buffer
	}
	return nil
}

// failLocked records the first write error and closes Failed.
func (w *Writer) failLocked(err error) error {
	w.err = fmt.Errorf("wire: write: %w", err)
	close(w.failed)
	return w.err
}
