package stdio

import (
	"errors"
	"io"
	"sync"
	"sync/atomic"

	"github.com/openmax/openmax/core/wire"
)

// ErrClosed is returned by a Conn's methods once it is closed.
var ErrClosed = errors.New("stdio: connection closed")

// Conn is the server's end of a connection to one client, carrying
// openmax-stdio lines whole: the client's command lines in, protocol lines
// out. How a line is framed on the way (newline-terminated on a byte stream,
// as NewStreamConn does, or handed over in memory, as NewPipe does) is the
// Conn's business; ServeConn sees only lines.
//
// Concurrency: ServeConn calls ReadLine from one goroutine and WriteLine
// from one goroutine at a time (it serialises its writes), and a ReadLine
// and a WriteLine may be running at the same moment. Close may be called at
// any moment from any goroutine, concurrently with both, and more than once.
// An implementation must allow exactly that, and need not allow more.
type Conn interface {
	// ReadLine returns the next line from the client without its line
	// ending; the slice is the caller's to keep. A line that breaks the
	// framing (one longer than wire.MaxLine) is reported by a
	// *wire.LineTooLongError for that line alone, and the next call reads
	// the line after it. At the end of input ReadLine returns io.EOF, and
	// after Close ErrClosed; any other error ends the input too.
	ReadLine() ([]byte, error)

	// WriteLine sends one whole protocol line, given without its newline
	// (it holds none), and returns once the line is handed on: written to
	// the stream, or queued for the client. It does not keep line. An error
	// means the client can no longer follow the session (its stdout is
	// gone: EPIPE): ServeConn then writes nothing more, logs it, cancels
	// the running turn, declines pending approvals, and returns the error
	// (wrapped; openmax exits 1 on it).
	WriteLine(line []byte) error

	// Close ends the connection: later calls of ReadLine and WriteLine
	// return ErrClosed, and a ReadLine waiting for the client returns
	// ErrClosed at once (except on a stream Conn, which cannot interrupt a
	// Read in progress: see NewStreamConn). ServeConn closes its Conn
	// before it returns.
	Close() error
}

// StreamConn is the framing of the openmax-stdio wire over byte streams:
// a Conn reading newline-terminated lines (an optional carriage return
// before the newline, a last line without one, at most wire.MaxLine bytes
// each) from an io.Reader, and writing each protocol line and its newline
// to an io.Writer in a single Write, unbuffered.
type StreamConn struct {
	lr     *wire.LineReader
	closed atomic.Bool

	wmu sync.Mutex
	w   io.Writer
	buf []byte // the line being written, with its newline
}

// NewStreamConn returns a Conn reading the client's lines from r and
// writing protocol lines to w. Closing it closes neither r nor w (their
// owner does that), so Close cannot interrupt a ReadLine blocked in a Read
// of r: that ReadLine returns ErrClosed when the Read does.
func NewStreamConn(r io.Reader, w io.Writer) *StreamConn {
	return &StreamConn{lr: wire.NewLineReader(r, wire.MaxLine), w: w}
}

// ReadLine reads the next line from r.
func (c *StreamConn) ReadLine() ([]byte, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	line, err := c.lr.Next()
	if c.closed.Load() {
		return nil, ErrClosed
	}
	return line, err
}

// WriteLine writes line and its newline to w in one Write. The error is
// w's, as it returned it.
func (c *StreamConn) WriteLine(line []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.closed.Load() {
		return ErrClosed
	}
	c.buf = append(append(c.buf[:0], line...), '\n')
	_, err := c.w.Write(c.buf)
	if cap(c.buf) > 1<<20 {
		c.buf = nil // do not pin a huge line's buffer
	}
	return err
}

// Close marks the connection closed; r and w stay open.
func (c *StreamConn) Close() error {
	c.closed.Store(true)
	return nil
}
