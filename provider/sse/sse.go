// Package sse reads Server-Sent Events streams by the WHATWG rules: fields
// data, event and id; comments; LF, CRLF or CR line ends; data lines joined
// with newlines; and an event only when a blank line ends it, so an
// unterminated last event at EOF is not an event. A Reader reads a live
// stream; Split reads a whole recorded body by the same rules and says
// where in it each event ends.
//
// Memory is bounded: a line over MaxLine and an event whose data passes
// MaxEvent end the stream with an error matching provider.ErrLimit (and so
// provider.ErrIncomplete), whatever the chunking of the body.
package sse

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/openmax/openmax/provider"
)

// Event is one dispatched event.
type Event struct {
	Type string // "message" when the stream named none
	Data string
	ID   string
}

// MaxLine caps one line of the stream.
const MaxLine = 16 << 20

// MaxEvent caps the data of one event, all its data lines together: a body
// of data lines that no blank line ever ends cannot grow without bound.
const MaxEvent = 16 << 20

// Reader parses events from a stream. It is not safe for concurrent use.
//
// A line ends at a CR, an LF or a CRLF. A line that ends in a CR is taken
// as soon as the CR is read, without waiting for the byte after it: on a
// live stream the event it ends goes out at once, and a stream that ends
// right after the CR loses nothing. When the next byte, in this read or a
// later one, is an LF, it belongs to that line end and does not make an
// empty line.
type Reader struct {
	fields
	br      *bufio.Reader
	afterCR bool // the last line ended in a CR: an LF next ends no line
	maxLine int
}

// fields gathers the field lines of an event and dispatches it at the
// blank line that ends it: the rules a Reader and Split share.
type fields struct {
	typ      string
	data     bytes.Buffer
	hasData  bool
	lastID   string
	open     bool // a field line since the last blank line
	maxEvent int  // 0: no cap
}

// line takes one line, its terminator removed. It returns ok when the line
// dispatches an event, named when an event field gave the event its type.
func (f *fields) line(line []byte) (ev Event, named, ok bool, err error) {
	if len(line) == 0 {
		f.open = false
		if !f.hasData {
			f.typ = ""
			return Event{}, false, false, nil
		}
		ev = Event{Type: f.typ, Data: string(bytes.TrimSuffix(f.data.Bytes(), []byte("\n"))), ID: f.lastID}
		named = ev.Type != ""
		if !named {
			ev.Type = "message"
		}
		f.typ, f.hasData = "", false
		f.data.Reset()
		return ev, named, true, nil
	}
	if line[0] == ':' {
		return Event{}, false, false, nil // comment
	}
	f.open = true
	field, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		field, value = line[:i], line[i+1:]
		value = bytes.TrimPrefix(value, []byte(" "))
	}
	switch string(field) {
	case "data":
		if f.maxEvent > 0 && f.data.Len()+len(value)+1 > f.maxEvent {
			f.data = bytes.Buffer{} // let the memory go
			return Event{}, false, false, ErrEventTooLong
		}
		f.data.Write(value)
		f.data.WriteByte('\n')
		f.hasData = true
	case "event":
		f.typ = string(value)
	case "id":
		if bytes.IndexByte(value, 0) < 0 {
			f.lastID = string(value)
		}
	}
	return Event{}, false, false, nil
}

// readBuf is a Reader's read buffer. A line longer than it is gathered
// over several reads (up to MaxLine), so it bounds no line: it is only how
// much one read asks for, and a reply of a few KiB (a replay's, a test's)
// should not allocate and clear much more than that.
const readBuf = 4 << 10

// NewReader reads events from r.
func NewReader(r io.Reader) *Reader {
	return &Reader{fields: fields{maxEvent: MaxEvent}, br: bufio.NewReaderSize(r, readBuf), maxLine: MaxLine}
}

// ErrLineTooLong reports a line over MaxLine. It matches provider.ErrLimit
// and provider.ErrIncomplete.
var ErrLineTooLong error = &provider.LimitError{Limit: "SSE line cap", Detail: fmt.Sprintf("one line of the event stream passed %d MiB", MaxLine>>20)}

// ErrEventTooLong reports an event whose data passed MaxEvent before a blank
// line ended it. It matches provider.ErrLimit and provider.ErrIncomplete.
var ErrEventTooLong error = &provider.LimitError{Limit: "SSE event cap", Detail: fmt.Sprintf("one event of the stream passed %d MiB with no blank line to end it", MaxEvent>>20)}

// Next returns the next event. At the end of the stream it returns io.EOF,
// discarding an event that no blank line ended; a read failure is returned
// as is (wrapped), so a reset stream surfaces here.
func (r *Reader) Next() (Event, error) {
	for {
		line, err := r.line()
		if err != nil {
			return Event{}, err
		}
		ev, _, ok, err := r.fields.line(line)
		if err != nil || ok {
			return ev, err
		}
	}
}

// line returns the next line without its line end, valid until the next
// call. It reads no further than the line end: a CR ends the line at once, and the LF that may
// follow it is skipped when the next line is read.
func (r *Reader) line() ([]byte, error) {
	var buf []byte
	for {
		if r.br.Buffered() == 0 {
			if _, err := r.br.Peek(1); err != nil {
				return nil, readFailure(err)
			}
		}
		avail, _ := r.br.Peek(r.br.Buffered()) // no error: all buffered
		if r.afterCR {
			r.afterCR = false
			if avail[0] == '\n' {
				_, _ = r.br.Discard(1) // the LF of a CRLF split after its CR
				continue
			}
		}
		i := bytes.IndexAny(avail, "\r\n")
		if i < 0 {
			i = len(avail)
		}
		if buf == nil && i < len(avail) && i <= r.maxLine {
			// The whole line is buffered: hand it out where it lies. The
			// caller is done with it before the next read moves the
			// buffer (fields.line copies what it keeps).
			r.afterCR = avail[i] == '\r'
			_, _ = r.br.Discard(i + 1)
			return avail[:i], nil
		}
		buf = append(buf, avail[:i]...)
		if len(buf) > r.maxLine {
			return nil, ErrLineTooLong
		}
		if i == len(avail) {
			_, _ = r.br.Discard(i)
			continue
		}
		r.afterCR = avail[i] == '\r'
		_, _ = r.br.Discard(i + 1)
		return buf, nil
	}
}

// readFailure is the error of a read that gave no byte: io.EOF at the end
// of the stream (a line with no line end, cut there, cannot end an event),
// a client limit as it is (it names its limit), any other failure wrapped.
func readFailure(err error) error {
	switch {
	case errors.Is(err, io.EOF):
		return io.EOF
	case errors.Is(err, provider.ErrLimit):
		return err
	}
	return fmt.Errorf("sse: read: %w", err)
}

// Span is an event of a whole body and where it ends.
type Span struct {
	Event
	// Named reports whether an event field named the event; Type is
	// "message" when none did.
	Named bool
	// End is the offset in the body just past the blank line that
	// dispatched the event.
	End int
}

// Split parses a whole body, already in memory, by the rules a Reader
// follows, and says where each event ends: for a recorded stream, to tell
// which of its chunks an event arrived in. Rest is the size of the body's
// tail after the last point where no event was open: an event that no
// blank line ends, or a last line with no line end; 0 when the body ends at
// an event boundary or in blank lines and comments between events.
//
// Split finds the events a Reader reads from the same bytes, however they
// arrive; unlike a Reader, it applies neither MaxLine nor MaxEvent.
func Split(body string) (spans []Span, rest int) {
	var f fields
	last := 0 // offset past the last event, blank line or comment outside an event
	for i := 0; i < len(body); {
		j := strings.IndexAny(body[i:], "\r\n")
		if j < 0 {
			break // a line with no line end
		}
		line := body[i : i+j]
		next := i + j + 1
		if body[i+j] == '\r' && next < len(body) && body[next] == '\n' {
			next++
		}
		i = next
		open := f.open
		ev, named, ok, _ := f.line([]byte(line)) // no cap, so no error
		switch {
		case ok:
			spans = append(spans, Span{Event: ev, Named: named, End: i})
			last = i
		case line == "", line[0] == ':' && !open:
			last = i
		}
	}
	return spans, len(body) - last
}
