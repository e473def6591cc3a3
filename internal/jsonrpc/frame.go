package jsonrpc

import (
	"io"

	"github.com/openmax/openmax/internal/lines"
)

// Framing: one message a line, each line ended by '\n' (a CR before it
// is dropped), no line longer than a cap the reader is given. Encode
// writes lines that hold no newline; the writer adds it.

// TooLongError is a line Reader skipped for passing its cap (the framing
// of internal/lines, which every line protocol of openmax shares).
type TooLongError = lines.TooLongError

// Reader cuts a stream into lines of at most max bytes, so a peer cannot
// make its reader hold more: a longer line is dropped, never buffered
// whole, and reported as a *TooLongError; reading goes on with the next
// line. It is for one goroutine at a time.
type Reader struct{ lr *lines.Reader }

// NewReader reads r. A line over max bytes is consumed to its newline and
// then reported, with its size.
func NewReader(r io.Reader, max int) *Reader { return &Reader{lr: lines.NewReader(r, max)} }

// NewEarlyReader reads r, for a peer that may never end a line: a line is
// reported as soon as it passes max bytes, and the next ReadLine drops
// the rest of it first.
func NewEarlyReader(r io.Reader, max int) *Reader { return &Reader{lr: lines.NewEarlyReader(r, max)} }

// ReadLine returns the next line, without its newline, in a slice of its
// own; io.EOF at the end of the stream (a last line without a newline is
// still a line), a read failure as it came.
func (r *Reader) ReadLine() ([]byte, error) { return r.lr.Next() }
