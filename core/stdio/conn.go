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
// A Conn may hold the lines it is given and write them later, as
// StreamConn does to batch them. Such a Conn also has the methods of
// Batching, and ServeConn uses them: it flushes before it returns, and
// watches Failed so that a client gone while the session is quiet (the
// turn waiting on the model) ends the session as a failed WriteLine does.
// A wrapper that does not pass them on still works, but learns of such a
// failure only at its next WriteLine or at Close.
//
// Concurrency: ServeConn calls ReadLine from one goroutine and WriteLine
// (and Flush) from one goroutine at a time (it serialises its writes), and
// a ReadLine and a WriteLine may be running at the same moment. Close may
// be called at any moment from any goroutine, concurrently with both, and
// more than once. An implementation must allow exactly that, and need not
// allow more.
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
	// gone: EPIPE), whether this line or one queued before failed:
	// ServeConn then writes nothing more, logs it, cancels the running
	// turn, declines pending approvals, and returns the error (wrapped;
	// openmax exits 1 on it).
	WriteLine(line []byte) error

	// Close ends the connection: later calls of ReadLine and WriteLine
	// return ErrClosed, and a ReadLine waiting for the client returns
	// ErrClosed at once (except on a stream Conn, which cannot interrupt a
	// Read in progress: see NewStreamConn). Lines handed on before Close
	// still reach the client: a Conn that queues them writes them out
	// before Close returns. ServeConn closes its Conn before it returns.
	Close() error
}

// Batching is what a Conn that queues lines (StreamConn) offers beyond
// Conn; see Conn.
type Batching interface {
	// Flush returns once every line handed on before it is written, with
	// the first write error, if any.
	Flush() error
	// Failed is closed once a write has failed.
	Failed() <-chan struct{}
}

// StreamConn is the framing of the openmax-stdio wire over byte streams:
// a Conn reading newline-terminated lines (an optional carriage return
// before the newline, a last line without one, at most wire.MaxLine bytes
// each) from an io.Reader, and writing protocol lines, each with its
// newline, to an io.Writer.
//
// Writes are batched and flushed when the writer goes idle: WriteLine
// queues the line and returns, and a flusher goroutine, started when the
// first line is queued and ending once the queue is empty, writes
// everything queued in one Write, then whatever was queued during that
// Write, and so on. A line therefore never waits for more lines: one that
// comes while nothing is being written goes out at once, alone, and the
// lines that come while a Write is under way go out together right after
// it. Every Write holds whole lines, but for a long line given in pieces
// (WriteLinePieces: a long message_done), which goes out in a Write per
// piece, one after the other with nothing between them. At most maxQueued
// bytes wait behind a Write under way (a longer line, alone); WriteLine
// waits for room beyond that, so a client that stops reading stops the
// session's output as before.
//
// A failed Write is reported by the next WriteLine, by Flush and by Close,
// and closes Failed at once; nothing more is written after it.
type StreamConn struct {
	lr     *wire.LineReader
	closed atomic.Bool

	w      io.Writer
	mu     sync.Mutex
	cond   sync.Cond // on mu: a batch was taken, or the flusher stopped
	queued []byte    // lines not yet taken by the flusher, each with its newline
	spare  []byte    // the last batch written, reused for the next queue
	active bool      // a flusher goroutine is running; it alone uses w
	err    error     // the first write error
	failed chan struct{}
}

// maxQueued is how many bytes of lines may wait while a Write is under
// way before WriteLine waits for the flusher.
const maxQueued = 64 << 10

// maxKept is the largest batch buffer kept for reuse.
const maxKept = 1 << 20

// NewStreamConn returns a Conn reading the client's lines from r and
// writing protocol lines to w. Closing it closes neither r nor w (their
// owner does that), so Close cannot interrupt a ReadLine blocked in a Read
// of r: that ReadLine returns ErrClosed when the Read does.
func NewStreamConn(r io.Reader, w io.Writer) *StreamConn {
	c := &StreamConn{lr: wire.NewLineReader(r, wire.MaxLine), w: w, failed: make(chan struct{})}
	c.cond.L = &c.mu
	return c
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

// WriteLine queues line and its newline for w and returns; the flusher
// writes it without waiting for more. The error is that of an earlier
// Write to w, as w returned it (nothing is queued then), or ErrClosed.
func (c *StreamConn) WriteLine(line []byte) error {
	c.mu.Lock()
	for c.err == nil && c.active && len(c.queued) >= maxQueued && !c.closed.Load() {
		c.cond.Wait() // the client reads slower than the session writes
	}
	if err := c.unusableLocked(); err != nil {
		c.mu.Unlock()
		return err
	}
	c.queued = append(append(c.queued, line...), '\n')
	if !c.active {
		c.active = true
		go c.flush()
	}
	c.mu.Unlock()
	return nil
}

// unusableLocked is why nothing more can be written: ErrClosed, or the
// error of an earlier Write to w; nil while writes go on. c.mu is held.
func (c *StreamConn) unusableLocked() error {
	if c.closed.Load() {
		return ErrClosed
	}
	return c.err
}

// WriteLinePieces is WriteLine of the concatenation of pieces (a
// wire.PieceWriter), for a long line made of parts built beforehand: a
// line that fits the queue is queued as WriteLine queues one, and a longer
// one is written from its pieces as they are, after the lines queued
// before it, without being copied into the queue. That write is made by
// the caller, so WriteLinePieces returns once such a line is written (or
// its Write failed), and lines given meanwhile wait behind it.
func (c *StreamConn) WriteLinePieces(pieces [][]byte) error {
	n := 0
	for _, p := range pieces {
		n += len(p)
	}
	if n < maxQueued {
		line := make([]byte, 0, n)
		for _, p := range pieces {
			line = append(line, p...)
		}
		return c.WriteLine(line)
	}
	c.mu.Lock()
	for c.err == nil && c.active && !c.closed.Load() {
		c.cond.Wait() // the flusher alone writes to w while it runs
	}
	if err := c.unusableLocked(); err != nil {
		c.mu.Unlock()
		return err
	}
	// Writing from here on, as the flusher would: the pieces, the last
	// with the newline, each in one Write. (The queue is empty: a flusher
	// stops only once it is.)
	c.active = true
	c.mu.Unlock()
	last := len(pieces) - 1
	tail := append(append(make([]byte, 0, len(pieces[last])+1), pieces[last]...), '\n')
	var err error
	for _, p := range append(pieces[:last:last], tail) {
		if len(p) == 0 {
			continue
		}
		if _, err = c.w.Write(p); err != nil {
			break
		}
	}
	c.mu.Lock()
	if err != nil {
		c.err = err
		c.queued = nil
		close(c.failed)
	}
	if len(c.queued) > 0 && c.err == nil {
		go c.flush() // lines given meanwhile; the flusher takes over
	} else {
		c.active = false
		c.cond.Broadcast()
	}
	c.mu.Unlock()
	return err
}

// flush writes the queue to w, batch after batch, until it is empty or a
// Write fails.
func (c *StreamConn) flush() {
	c.mu.Lock()
	for len(c.queued) > 0 && c.err == nil {
		batch := c.queued
		c.queued = c.spare[:0]
		c.cond.Broadcast() // room for a WriteLine waiting
		c.mu.Unlock()
		_, err := c.w.Write(batch)
		c.mu.Lock()
		if err != nil {
			c.err = err
			c.queued = nil
			close(c.failed)
		}
		if cap(batch) > maxKept {
			batch = nil // do not pin a huge line's buffer
		}
		c.spare = batch[:0]
	}
	c.active = false
	c.cond.Broadcast()
	c.mu.Unlock()
}

// Flush returns once every line queued before it is written, with the
// error of the first Write that failed, if any.
func (c *StreamConn) Flush() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.active {
		c.cond.Wait()
	}
	return c.err
}

// Failed is closed once a Write to w has failed: a session watching it
// learns that its client is gone even while it has nothing more to write.
func (c *StreamConn) Failed() <-chan struct{} { return c.failed }

// Close marks the connection closed, then waits, as Flush does, for the
// lines queued before it to be written, and returns the first write error
// if there was one. r and w stay open.
func (c *StreamConn) Close() error {
	c.closed.Store(true)
	c.mu.Lock()
	c.cond.Broadcast() // a WriteLine waiting for room returns ErrClosed
	c.mu.Unlock()
	return c.Flush()
}
