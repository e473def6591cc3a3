// Package sse reads Server-Sent Events streams by the WHATWG rules: fields
// data, event and id; comments; LF, CRLF or CR line ends; data lines joined
// with newlines; and an event only when a blank line ends it, so an
// unterminated last event at EOF is not an event.
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
type Reader struct {
	br       *bufio.Reader
	typ      string
	data     bytes.Buffer
	hasData  bool
	lastID   string
	pending  [][]byte // lines split off a chunk at lone CRs
	maxLine  int
	maxEvent int
}

// NewReader reads events from r.
func NewReader(r io.Reader) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 32<<10), maxLine: MaxLine, maxEvent: MaxEvent}
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
		if len(line) == 0 {
			if !r.hasData {
				r.typ = ""
				continue
			}
			ev := Event{Type: r.typ, Data: string(bytes.TrimSuffix(r.data.Bytes(), []byte("\n"))), ID: r.lastID}
			if ev.Type == "" {
				ev.Type = "message"
			}
			r.typ, r.hasData = "", false
			r.data.Reset()
			return ev, nil
		}
		if line[0] == ':' {
			continue // comment
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			value = bytes.TrimPrefix(value, []byte(" "))
		}
		switch string(field) {
		case "data":
			if r.data.Len()+len(value)+1 > r.maxEvent {
				r.data = bytes.Buffer{} // let the memory go
				return Event{}, ErrEventTooLong
			}
			r.data.Write(value)
			r.data.WriteByte('\n')
			r.hasData = true
		case "event":
			r.typ = string(value)
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				r.lastID = string(value)
			}
		}
	}
}

// line returns the next line without its terminator.
func (r *Reader) line() ([]byte, error) {
	if len(r.pending) > 0 {
		l := r.pending[0]
		r.pending = r.pending[1:]
		return l, nil
	}
	var buf []byte
	for {
		chunk, err := r.br.ReadSlice('\n')
		buf = append(buf, chunk...)
		if len(buf) > r.maxLine {
			return nil, ErrLineTooLong
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				// An unterminated line at EOF cannot end an event.
				return nil, io.EOF
			}
			if errors.Is(err, provider.ErrLimit) {
				return nil, err // it names its limit
			}
			return nil, fmt.Errorf("sse: read: %w", err)
		}
		break
	}
	buf = bytes.TrimSuffix(buf[:len(buf)-1], []byte("\r"))
	if bytes.IndexByte(buf, '\r') < 0 {
		return buf, nil
	}
	parts := bytes.Split(buf, []byte("\r"))
	r.pending = append(r.pending, parts[1:]...)
	return parts[0], nil
}
