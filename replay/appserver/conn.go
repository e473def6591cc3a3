package appserver

import (
	"context"
	"errors"
	"io"
)

// ErrEnded is what a client's write to Conn.Stdin fails with once the
// replay has ended, as a write to a process that exited fails.
var ErrEnded = errors.New("the fake app-server has ended")

// Conn is a replay served in process over pipes, behaving as the
// app-server process would over its stdio: the client writes its lines to
// Stdin and reads the app-server's from Stdout (codex.Connect takes
// them as they are). When the replay ends (the client closed Stdin, a
// miss, ctx done) Stdout reaches EOF after the last line, and later writes
// to Stdin fail with ErrEnded.
type Conn struct {
	Stdin  io.WriteCloser
	Stdout io.ReadCloser

	done chan struct{}
	err  error
}

// Start serves t in a goroutine of its own over a new Conn.
func Start(ctx context.Context, t *Transcript, opts Options) *Conn {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &Conn{Stdin: inW, Stdout: outR, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		c.err = Serve(ctx, t, inR, outW, opts)
		// Like a process exiting: its stdout ends, its stdin is gone.
		outW.Close()
		inR.CloseWithError(ErrEnded)
	}()
	return c
}

// Wait waits for the replay to end and returns what Serve returned.
func (c *Conn) Wait() error {
	<-c.done
	return c.err
}
