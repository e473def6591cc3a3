// Package session replays a recorded harness session: the real stdio server
// and turn engine run against a cassette's traffic while the client's
// recorded commands are delivered at the same points of the conversation
// they were sent at, and every wait (backoff, Retry-After) passes on a
// virtual clock, so a replay takes no wall time and gives the same bytes
// every time.
package session

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/openmax/openmax/core"
	"github.com/openmax/openmax/core/stdio"
	"github.com/openmax/openmax/provider/clock"
	"github.com/openmax/openmax/recorder/cassette"
)

// Build makes the engine for a replay: the provider named by the recorded
// args, sending through transport and waiting on clk, its jitter seeded
// with seed.
type Build func(transport http.RoundTripper, clk clock.Clock, seed uint64, args []string) (*core.Engine, error)

// Options configure Run.
type Options struct {
	Cassette  *cassette.File
	Transport http.RoundTripper // serves the cassette's traffic
	Build     Build
	Version   string
	// Project reports the project directory hello prints; it is called
	// after Build, which may learn it from the recorded flags.
	Project func() string
	Stdout  io.Writer // receives the transcript
	Log     io.Writer // diagnostics
}

// Epoch is the virtual clock's start, fixed so replays are identical.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// ErrNoSession reports a cassette without a recorded harness session.
var ErrNoSession = errors.New("the cassette holds no recorded session (a proxy recording?); serve it with `openmax fake-provider --cassette` instead")

// Run replays the session and returns the harness's exit code.
func Run(ctx context.Context, o Options) (int, error) {
	sess := o.Cassette.Session
	if sess == nil {
		return 0, ErrNoSession
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	f := newFeeder(sess.Commands)
	clk := &gatedClock{now: Epoch, f: f}
	eng, err := o.Build(o.Transport, clk, sess.Seed, sess.Args)
	if err != nil {
		return 0, err
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	copied := make(chan error, 1)
	go func() { copied <- f.copyOut(outR, o.Stdout) }()
	go f.feed(inW)
	code, err := stdio.Serve(ctx, inR, outW, stdio.Options{
		Engine: eng, SessionID: sess.SessionID, Version: o.Version, Project: o.Project(),
		Log: o.Log, Handled: f.handled,
	})
	outW.Close()
	f.stop()
	inR.Close()
	if cerr := <-copied; err == nil && cerr != nil {
		err = cerr
	}
	return code, err
}

// feeder delivers the recorded commands: command i goes out once the
// transcript has as many lines as it had when the command arrived during
// recording, or once the harness is idle (nothing more would come).
type feeder struct {
	cmds []cassette.Command

	mu      sync.Mutex
	cond    *sync.Cond
	lines   int  // stdout lines so far
	next    int  // index of the next command to deliver
	idle    bool // the harness reported no turn running
	inAck   bool // a command was written and not yet acted on
	stopped bool
}

func newFeeder(cmds []cassette.Command) *feeder {
	f := &feeder{cmds: cmds, idle: true}
	f.cond = sync.NewCond(&f.mu)
	return f
}

// dueLocked reports whether the next command should go out now.
func (f *feeder) dueLocked() bool {
	if f.next >= len(f.cmds) || f.inAck {
		return false
	}
	return f.lines >= f.cmds[f.next].AfterLines || f.idle
}

// quietLocked reports that no command is due or in flight, so virtual time
// may pass.
func (f *feeder) quietLocked() bool { return f.stopped || (!f.inAck && !f.dueLocked()) }

func (f *feeder) feed(w *io.PipeWriter) {
	defer w.Close()
	for {
		f.mu.Lock()
		for !f.stopped && f.next < len(f.cmds) && !f.dueLocked() {
			f.cond.Wait()
		}
		if f.stopped || f.next >= len(f.cmds) {
			f.mu.Unlock()
			return
		}
		line := f.cmds[f.next].Line
		f.next++
		f.inAck = true
		f.mu.Unlock()
		if _, err := io.WriteString(w, line+"\n"); err != nil {
			return
		}
	}
}

// handled is the server's acknowledgement of a command or a finished turn.
func (f *feeder) handled(idle bool) {
	f.mu.Lock()
	f.idle = idle
	f.inAck = false
	f.cond.Broadcast()
	f.mu.Unlock()
}

func (f *feeder) stop() {
	f.mu.Lock()
	f.stopped = true
	f.cond.Broadcast()
	f.mu.Unlock()
}

// copyOut forwards the transcript line by line, counting lines.
func (f *feeder) copyOut(r io.Reader, w io.Writer) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var werr error
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			if werr == nil {
				_, werr = w.Write(line)
			}
			f.mu.Lock()
			f.lines++
			f.cond.Broadcast()
			f.mu.Unlock()
		}
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) {
				return werr
			}
			return fmt.Errorf("replay: reading the transcript: %w", err)
		}
	}
}

// gatedClock is virtual time that only passes while no recorded command is
// due: a wait during which the client sent a command (a cancel during a
// backoff) sees that command first, exactly as in the recording.
type gatedClock struct {
	mu  sync.Mutex
	now time.Time
	f   *feeder
}

func (c *gatedClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *gatedClock) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	go func() {
		c.f.mu.Lock()
		for !c.f.quietLocked() {
			c.f.cond.Wait()
		}
		c.f.mu.Unlock()
		c.mu.Lock()
		if d > 0 {
			c.now = c.now.Add(d)
		}
		now := c.now
		c.mu.Unlock()
		ch <- now
	}()
	return ch
}
