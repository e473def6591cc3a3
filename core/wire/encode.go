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
	dst = append(dst, `,"type":`...)
	dst = appendString(dst, e.EventType())
	return appendFields(dst, e)
}

// AppendLine appends the JSON line (with its newline) for a non-event line:
// type, then the line's fields in definition order.
func AppendLine(dst []byte, l Line) ([]byte, error) {
	dst = append(dst, `{"type":`...)
	dst = appendString(dst, l.LineType())
	return appendFields(dst, l)
}

func appendFields(dst []byte, v any) ([]byte, error) {
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

func appendString(dst []byte, s string) []byte {
	b, _ := json.Marshal(s) // a string always marshals
	return append(dst, b...)
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
	buf       []byte
	err       error
	failed    chan struct{}
}

// NewWriter returns a Writer to lw stamping events with sessionID.
func NewWriter(lw LineWriter, sessionID string) *Writer {
	return &Writer{lw: lw, sessionID: sessionID, failed: make(chan struct{})}
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
	var err error
	w.buf, err = AppendEvent(w.buf[:0], w.sessionID, e)
	return w.flushLocked(err)
}

// Line writes one non-event line.
func (w *Writer) Line(l Line) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	var err error
	w.buf, err = AppendLine(w.buf[:0], l)
	return w.flushLocked(err)
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
		w.err = fmt.Errorf("wire: write: %w", err)
		close(w.failed)
		return w.err
	}
	if cap(w.buf) > 1<<20 {
		w.buf = nil // do not pin a huge line's buffer
	}
	return nil
}
