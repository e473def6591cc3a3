package stdio

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"

	"github.com/openmax/openmax/core/wire"
)

// NewPipe returns the two ends of an in-memory connection, for tests and
// for driving a session from Go: server, the Conn to hand to ServeConn, and
// client, which plays the process on the other side of stdin and stdout.
//
// What the client writes reaches the server as bytes and is framed as
// stdin is (so a carriage return before the newline, a last line without
// one and an over-long line behave exactly as on a real stdin); what the
// server writes reaches the client as whole lines. Neither direction blocks
// the writer: each holds what is written until it is read.
func NewPipe() (server *PipeConn, client *PipeClient) {
	in, out := newQueue(), newQueue()
	server = &PipeConn{in: in, out: out, lr: wire.NewLineReader(&queueReader{q: in}, wire.MaxLine)}
	return server, &PipeClient{in: in, out: out}
}

// PipeConn is the server's end of NewPipe. It is a Conn.
type PipeConn struct {
	in     *queue // the client's bytes
	lr     *wire.LineReader
	out    *queue // protocol lines for the client
	closed atomic.Bool
}

// errNewline refuses a line that would read as more than one.
var errNewline = errors.New("stdio: a line must not hold a newline")

// ReadLine returns the client's next line. Once the client has closed its
// writing side it returns the lines still held, then io.EOF.
func (c *PipeConn) ReadLine() ([]byte, error) {
	if c.closed.Load() {
		return nil, ErrClosed // and not a line the framing still holds
	}
	return c.lr.Next()
}

// WriteLine queues a copy of line for the client. After the client has
// closed its end it returns io.ErrClosedPipe (as a write to a closed stdout
// fails with EPIPE).
func (c *PipeConn) WriteLine(line []byte) error {
	if bytes.IndexByte(line, '\n') >= 0 {
		return errNewline
	}
	return c.out.push(line)
}

// Close ends the server's end: the client reads the lines already written,
// then io.EOF, and its later writes fail with io.ErrClosedPipe; a ReadLine
// waiting for the client returns ErrClosed.
func (c *PipeConn) Close() error {
	c.closed.Store(true)
	c.in.closeRead()
	c.out.closeWrite()
	return nil
}

// PipeClient is the client's end of NewPipe: its writes are the server's
// stdin, and it reads the server's protocol lines one at a time. Its
// methods may be called concurrently.
type PipeClient struct {
	in  *queue
	out *queue
}

// Write sends p to the server as stdin bytes: any number of lines, or part
// of one.
func (c *PipeClient) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if err := c.in.push(p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// WriteLine sends one command line, which must not hold a newline; the
// client adds it.
func (c *PipeClient) WriteLine(line []byte) error {
	if bytes.IndexByte(line, '\n') >= 0 {
		return errNewline
	}
	return c.in.push(append(line[:len(line):len(line)], '\n'))
}

// CloseWrite closes the client's stdin: the server reads what was written,
// then io.EOF. The client can still read.
func (c *PipeClient) CloseWrite() error {
	c.in.closeWrite()
	return nil
}

// ReadLine returns the server's next protocol line without its newline. It
// waits until a line comes, the server closes its end (io.EOF, once every
// line written before has been read), the client closes (ErrClosed), or ctx
// is done (ctx.Err(), and no line is lost).
func (c *PipeClient) ReadLine(ctx context.Context) ([]byte, error) {
	return c.out.pop(ctx)
}

// Close closes both directions of the client's end: the server reads EOF
// after what was written, and its writes from now on fail with
// io.ErrClosedPipe, as when a client process goes away.
func (c *PipeClient) Close() error {
	c.in.closeWrite()
	c.out.closeRead()
	return nil
}

// queue carries byte slices one way, in order, without a bound. Its writer
// closes it with closeWrite (the reader gets io.EOF after what was pushed),
// its reader with closeRead (pushes fail with io.ErrClosedPipe, pops with
// ErrClosed). It is safe for concurrent use.
type queue struct {
	mu      sync.Mutex
	items   [][]byte
	wclosed bool
	rclosed bool
	wake    chan struct{} // closed, and replaced, when any of the above change
}

func newQueue() *queue { return &queue{wake: make(chan struct{})} }

// signalLocked wakes every pop waiting for a change.
func (q *queue) signalLocked() {
	close(q.wake)
	q.wake = make(chan struct{})
}

func (q *queue) push(b []byte) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case q.wclosed:
		return ErrClosed
	case q.rclosed:
		return io.ErrClosedPipe
	}
	q.items = append(q.items, bytes.Clone(b))
	q.signalLocked()
	return nil
}

func (q *queue) pop(ctx context.Context) ([]byte, error) {
	for {
		q.mu.Lock()
		switch {
		case q.rclosed:
			q.mu.Unlock()
			return nil, ErrClosed
		case len(q.items) > 0:
			b := q.items[0]
			q.items[0] = nil
			q.items = q.items[1:]
			q.mu.Unlock()
			return b, nil
		case q.wclosed:
			q.mu.Unlock()
			return nil, io.EOF
		}
		wake := q.wake
		q.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (q *queue) closeWrite() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.wclosed {
		q.wclosed = true
		q.signalLocked()
	}
}

func (q *queue) closeRead() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.rclosed {
		q.rclosed = true
		q.items = nil
		q.signalLocked()
	}
}

// queueReader reads a queue of byte slices as one stream.
type queueReader struct {
	q    *queue
	rest []byte
}

func (r *queueReader) Read(p []byte) (int, error) {
	if len(r.rest) == 0 {
		b, err := r.q.pop(context.Background())
		if err != nil {
			return 0, err
		}
		r.rest = b
	}
	n := copy(p, r.rest)
	r.rest = r.rest[n:]
	return n, nil
}
