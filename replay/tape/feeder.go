package tape

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/openmax/openmax/core/stdio"
	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/provider/clock"
	"github.com/openmax/openmax/recorder/cassette"
)

// Epoch is the virtual clock's start, fixed so replays are identical.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// hooks are what the player needs from the server it drives: stdio.Options'
// Handled and Stepped, and the virtual clock every wait uses.
type hooks struct {
	clock   clock.Clock
	handled func(read int, idle bool)
	stepped func()
}

// serveFunc serves one session over conn with the player's hooks,
// returning the exit code.
type serveFunc func(ctx context.Context, conn stdio.Conn, h hooks) (int, error)

// player is how the recorded client is played back.
type player struct {
	cmds []cassette.Command
	// stdout receives the transcript; stdin, when set, a copy of every
	// command line delivered, in order.
	stdout, stdin io.Writer
	// refused, when set, is told of every recorded command the harness
	// refused (a protocol_error answering it) although it was accepted
	// when recorded. index is the command's place in the cassette's list.
	refused func(index int, cmd cassette.Command, message string)
}

// play drives serve with the recorded commands and returns its exit code.
//
// How it stays deterministic: the player is the server's connection
// (stdio.Conn), so it sees each line as the harness writes it, and the
// player always knows exactly which protocol point the session is at.
// After every event a turn emits, the turn waits (stdio's Stepped hook)
// until every recorded command that point makes due has been written to
// the harness and acted on (Handled). And virtual time passes only while no
// command is due or in flight, while a context cancelled by a delivered
// command wins over a wait that ends at the same moment (clock.Sleep).
// Nothing is left to goroutine scheduling.
func (p player) play(ctx context.Context, serve serveFunc) (int, error) {
	f := newFeeder(p.cmds, p.stdin)
	clk := &gatedClock{now: Epoch, f: f}
	conn := &playerConn{f: f, stdout: p.stdout, refused: p.refused}
	code, err := serve(ctx, conn, hooks{clock: clk, handled: f.handled, stepped: f.step})
	f.stop()
	return code, err
}

// feeder delivers the recorded commands in order, each once the session
// has reached its anchor (or once the harness is idle with nothing more
// to say, so a command whose point never came still goes out).
type feeder struct {
	cmds  []cassette.Command
	stdin io.Writer // a copy of what is delivered; nil for none

	mu        sync.Mutex
	cond      *sync.Cond
	pos       cassette.Position
	next      int  // index of the next command to deliver
	delivered int  // stdin lines written
	read      int  // stdin lines the harness has acted on
	idle      bool // the harness reported no turn running
	stopped   bool
}

func newFeeder(cmds []cassette.Command, stdin io.Writer) *feeder {
	f := &feeder{cmds: cmds, stdin: stdin, idle: true}
	f.cond = sync.NewCond(&f.mu)
	return f
}

// inFlightLocked reports a command written and not yet acted on.
func (f *feeder) inFlightLocked() bool { return f.read < f.delivered }

// dueLocked reports whether the next command should go out now.
func (f *feeder) dueLocked() bool {
	if f.next >= len(f.cmds) || f.inFlightLocked() {
		return false
	}
	return f.pos.Due(f.cmds[f.next]) || f.idle
}

// quietLocked reports that no command is due or in flight, so the turn
// may go on and virtual time may pass.
func (f *feeder) quietLocked() bool { return f.stopped || (!f.inFlightLocked() && !f.dueLocked()) }

// next waits until the next recorded command is due and hands it out; ok
// is false once every command went out or the player stopped.
func (f *feeder) nextCommand() (cassette.Command, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for !f.stopped && f.next < len(f.cmds) && !f.dueLocked() {
		f.cond.Wait()
	}
	if f.stopped || f.next >= len(f.cmds) {
		return cassette.Command{}, false
	}
	c := f.cmds[f.next]
	f.next++
	f.delivered++
	return c, true
}

// handled is the server's acknowledgement of the stdin lines it has acted
// on, or of a finished turn.
func (f *feeder) handled(read int, idle bool) {
	f.mu.Lock()
	f.read, f.idle = read, idle
	f.cond.Broadcast()
	f.mu.Unlock()
}

// step holds the turn until the commands due at this point are acted on.
func (f *feeder) step() {
	f.mu.Lock()
	for !f.quietLocked() {
		f.cond.Wait()
	}
	f.mu.Unlock()
}

func (f *feeder) stop() {
	f.mu.Lock()
	f.stopped = true
	f.cond.Broadcast()
	f.mu.Unlock()
}

// playerConn is the recorded client as the server's stdio.Conn: reading
// from it gives each recorded command once it is due, and each protocol
// line written to it moves the feeder's position along the conversation
// before the write returns. Lines cross it whole: no framing.
type playerConn struct {
	f       *feeder
	stdout  io.Writer
	refused func(int, cassette.Command, string)
}

// ReadLine gives the next recorded command when it is due, io.EOF after
// the last one. A command recorded as refused for its length comes back
// as that refusal, as the stream framing would have reported it.
func (c *playerConn) ReadLine() ([]byte, error) {
	cmd, ok := c.f.nextCommand()
	if !ok {
		return nil, io.EOF
	}
	if c.f.stdin != nil {
		io.WriteString(c.f.stdin, cmd.Line+"\n")
	}
	line := strings.TrimSuffix(cmd.Line, "\r")
	switch {
	case cmd.TooLong > 0:
		return nil, &wire.LineTooLongError{Size: cmd.TooLong}
	case len(line) > wire.MaxLine: // recorded before TooLong existed: the line's first bytes
		return nil, &wire.LineTooLongError{Size: int64(len(line))}
	}
	return []byte(line), nil
}

// WriteLine appends line to the transcript and observes it.
func (c *playerConn) WriteLine(line []byte) error {
	_, err := c.stdout.Write(append(line[:len(line):len(line)], '\n'))
	f := c.f
	f.mu.Lock()
	f.pos.Observe(line)
	if c.refused != nil {
		// Commands are delivered one per line, so line N is command N-1.
		if k, ok := wire.AnswersLine(line); ok && k <= len(f.cmds) && !f.cmds[k-1].Refused {
			var pe wire.ProtocolError
			json.Unmarshal(line, &pe)
			c.refused(k-1, f.cmds[k-1], pe.Message)
		}
	}
	f.cond.Broadcast()
	f.mu.Unlock()
	return err
}

// Close is a no-op: the player stops the feeder itself when the server
// returns.
func (c *playerConn) Close() error { return nil }

// gatedClock is virtual time that only passes while no recorded command is
// due or in flight: a wait during which the client sent a command (a cancel
// during a backoff) sees that command first, exactly as in the recording.
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

// After passes d of virtual time once the player is quiet. When it is
// quiet already, the time passes before After returns: that is what the
// waiting goroutine would do if it ran at once, one of the orders the
// wait always allowed, without starting a goroutine and waking another
// core to run it (most waits of a replay: every retry backoff).
func (c *gatedClock) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	c.f.mu.Lock()
	quiet := c.f.quietLocked()
	c.f.mu.Unlock()
	if quiet {
		ch <- c.pass(d)
		return ch
	}
	go func() {
		c.f.mu.Lock()
		for !c.f.quietLocked() {
			c.f.cond.Wait()
		}
		c.f.mu.Unlock()
		ch <- c.pass(d)
	}()
	return ch
}

// pass moves virtual time on by d (none when d <= 0) and returns it.
func (c *gatedClock) pass(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d > 0 {
		c.now = c.now.Add(d)
	}
	return c.now
}
