// Package stdio serves a session over the openmax-stdio/6 wire: the
// client's command lines in, protocol lines out, over a Conn that carries
// lines whole (NewStreamConn frames them on stdin and stdout, NewPipe keeps
// them in memory for tests). It owns the turn lifecycle (admission, cancel,
// quit, exactly one done per user command) and the answers to bad input;
// line reading, decoding and encoding are core/wire's, and the turn itself
// is core.Engine's.
package stdio

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/openmax/openmax/core"
	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/provider/clock"
)

// Options configure a Server.
type Options struct {
	Engine    *core.Engine
	SessionID string
	// Session, when set, is the conversation to serve (a continued one, or
	// one that persists its messages); nil starts an empty in-memory one.
	Session *core.Session
	// Transcript, when set, marks the session as continued: hello says so
	// and this line follows it.
	Transcript *wire.Transcript
	// Untrusted refuses every user command (protocol_error, then done
	// refused): turns run only in a trusted project.
	Untrusted bool
	// ApprovalTimeout settles an unanswered approval request as timed_out
	// after this long on Clock; zero waits for as long as it takes.
	ApprovalTimeout time.Duration
	// Clock times approval timeouts; nil means real time.
	Clock   clock.Clock
	Version string
	Project string // absolute project directory, reported by hello
	// Modes persists approval_mode; nil keeps the mode in memory only.
	Modes ModeStore
	// AgentSpawned refuses every approval_mode with a protocol_error: this
	// process was started by one of openmax's tools (it found
	// OPENMAX_AGENT_SPAWNED), and an agent must not change its own gate.
	// An untrusted project refuses approval_mode too. It is asked only
	// when an approval_mode arrives (finding out may walk the process
	// tree); nil means not spawned by an agent.
	AgentSpawned func() bool
	// Refreeze answers reload: it re-reads tools, skills and the system
	// prompt from the current configuration and returns the engine the
	// next turns use (nil keeps the current one), the refrozen receipt,
	// and the harness note written into the transcript before the next
	// prompt ("" for none). Nil answers with the current tools and no
	// change.
	Refreeze func() (*core.Engine, wire.Refrozen, string)
	// The server settles the session's approval requests itself: it gives
	// the session its approver and the mode from Modes, and never changes
	// the Engine, which may be shared.
	// Log receives diagnostics (never protocol lines); nil discards them.
	Log io.Writer
	// Handled, when set, is called from the serve loop after each stdin
	// line has been acted on and after each turn's done, with read the
	// number of stdin lines acted on so far and idle true when no turn is
	// running (so nothing more will be written until the next command). A
	// replay uses it to deliver each recorded command at the same point of
	// the conversation.
	Handled func(read int, idle bool)
	// Acting, when set, is called from the serve loop just before it acts
	// on stdin line n (the lines are read ahead of being acted on). A
	// recording anchors each command at the protocol point of this call,
	// which is where a replay must deliver it to reproduce what followed.
	Acting func(n int)
	// Stepped, when set, is called on the turn's goroutine after each event
	// the turn emits has been handed to the Conn (written, or queued by a
	// batching one), with no lock held; the turn goes on
	// when it returns. A replay blocks in it until the recorded commands
	// that event makes due have been acted on (Handled), which keeps the
	// turn in step with the recorded client: a cancel recorded after the
	// third token lands after the third token, every time.
	Stepped func()
}

// ModeStore persists the approval mode of the project.
type ModeStore interface {
	// Mode returns the current mode.
	Mode() string
	// SetMode persists mode; on error the mode must be unchanged.
	SetMode(mode string) error
}

// MemoryModes is a ModeStore that keeps the mode in memory. It is safe
// for concurrent use.
type MemoryModes struct {
	mu   sync.Mutex
	mode string
}

// NewMemoryModes returns a store starting at mode.
func NewMemoryModes(mode string) *MemoryModes { return &MemoryModes{mode: mode} }

// Mode returns the mode.
func (m *MemoryModes) Mode() string { m.mu.Lock(); defer m.mu.Unlock(); return m.mode }

// SetMode sets the mode.
func (m *MemoryModes) SetMode(mode string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.mode = mode
	return nil
}

// approvals holds the pending approval requests of a session. Once
// shutdown starts (quit, EOF, a signal) pending and later requests are
// declined so the drain ends promptly. It is safe for concurrent use.
type approvals struct {
	mu        sync.Mutex
	pending   map[string]chan string
	declining bool
	timeout   time.Duration
	clock     clock.Clock
}

func newApprovals(timeout time.Duration, c clock.Clock) *approvals {
	if c == nil {
		c = clock.Real{}
	}
	return &approvals{pending: map[string]chan string{}, timeout: timeout, clock: c}
}

// Ask implements core.Approver.
func (a *approvals) Ask(ctx context.Context, id string, announce func()) string {
	a.mu.Lock()
	if a.declining {
		a.mu.Unlock()
		announce()
		return core.OutcomeDeclined
	}
	ch := make(chan string, 1)
	a.pending[id] = ch
	a.mu.Unlock()
	announce()
	waitCtx, stop := context.WithCancel(ctx)
	defer stop()
	timedOut := make(chan struct{})
	if a.timeout > 0 {
		go func() {
			if clock.Sleep(waitCtx, a.clock, a.timeout) == nil {
				close(timedOut)
			}
		}()
	}
	giveUp := func(outcome string) string {
		a.mu.Lock()
		delete(a.pending, id)
		a.mu.Unlock()
		select { // an answer that raced still wins
		case o := <-ch:
			return o
		default:
			return outcome
		}
	}
	select {
	case outcome := <-ch:
		return outcome
	case <-ctx.Done():
		return giveUp(core.OutcomeCancelled)
	case <-timedOut:
		return giveUp(core.OutcomeTimedOut)
	}
}

// answer settles a pending request from an approve command.
func (a *approvals) answer(id string, approved bool) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	ch, ok := a.pending[id]
	if !ok {
		return fmt.Errorf("approval_id %s was never issued or has already settled", quote(id))
	}
	delete(a.pending, id)
	if approved {
		ch <- core.OutcomeApproved
	} else {
		ch <- core.OutcomeDeclined
	}
	return nil
}

// cancelAll settles what is pending as cancelled: the turn that asked was
// cancelled. It settles them at once, so a quit or end of input read
// right after the cancel cannot decline them first.
func (a *approvals) cancelAll() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for id, ch := range a.pending {
		ch <- core.OutcomeCancelled
		delete(a.pending, id)
	}
}

// declineAll declines what is pending and everything asked from now on.
func (a *approvals) declineAll() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.declining = true
	for id, ch := range a.pending {
		ch <- core.OutcomeDeclined
		delete(a.pending, id)
	}
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

// Serve runs one session over a byte stream: ServeConn over
// NewStreamConn(in, out). It closes neither in nor out.
func Serve(ctx context.Context, in io.Reader, out io.Writer, opts Options) (int, error) {
	return ServeConn(ctx, NewStreamConn(in, out), opts)
}

// ServeConn runs one session over conn: it writes hello, answers the
// command lines read from conn until quit or the end of input (or until ctx
// is cancelled, which cancels the running turn as a shutdown), drains the
// in-flight turn, closes conn, and returns the process exit code: 1 when
// the last turn ended with stop_reason error, else 0. The returned error
// reports a failure to write to conn (or to close it); after such a failure
// the session ends as at a shutdown.
func ServeConn(ctx context.Context, conn Conn, opts Options) (int, error) {
	s := &server{
		opts:  opts,
		w:     wire.NewWriter(conn, opts.SessionID),
		sess:  opts.Session,
		ended: make(chan string, 1),
	}
	if s.sess == nil {
		s.sess = core.NewSession(opts.SessionID)
	}
	if s.opts.Modes == nil {
		s.opts.Modes = NewMemoryModes("ask")
	}
	s.approvals = newApprovals(opts.ApprovalTimeout, opts.Clock)
	s.sess.SetApprovals(s.opts.Modes.Mode, s.approvals)
	if s.opts.Log == nil {
		s.opts.Log = io.Discard
	}
	code, err := s.serve(ctx, conn)
	if err == nil {
		// Everything written reaches the client before ServeConn returns
		// (the process may exit next); a failure now is a write failure.
		err = s.w.Flush()
	}
	if cerr := conn.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("closing the connection: %w", cerr)
	}
	return code, err
}

type server struct {
	opts Options
	w    *wire.Writer
	sess *core.Session

	running   *running    // the in-flight turn, nil when idle
	ended     chan string // the running turn's stop_reason
	lastStop  string
	quitting  bool
	read      int // stdin lines acted on
	approvals *approvals
}

type running struct {
	cancel context.CancelFunc
}

type input struct {
	n    int
	line []byte
	err  error
}

func (s *server) serve(ctx context.Context, conn Conn) (int, error) {
	if err := s.w.Line(wire.Hello{
		Proto: wire.Proto, ProtocolVersion: wire.ProtocolVersion,
		SessionID: s.opts.SessionID, Version: s.opts.Version, Project: s.opts.Project,
		Continued: s.opts.Transcript != nil,
	}); err != nil {
		return 1, err
	}
	if tx := s.opts.Transcript; tx != nil {
		tx.SessionID = s.opts.SessionID
		if err := s.w.Line(*tx); err != nil {
			return 1, err
		}
	}

	lines := make(chan input)
	stop := make(chan struct{})
	defer close(stop)
	go readLines(conn, lines, stop)

	shutdown, failed := ctx.Done(), s.w.Failed()
	var batchFailed <-chan struct{} // a queued line failed to go out
	if b, ok := conn.(Batching); ok {
		batchFailed = b.Failed()
	}
	for {
		if s.quitting {
			s.approvals.declineAll()
			if s.running == nil {
				return s.exitCode(), s.w.Err()
			}
		}
		select {
		case <-failed:
			// stdout is gone: nobody can follow the session any more.
			failed = nil
			fmt.Fprintf(s.opts.Log, "openmax: %v; shutting down\n", s.w.Err())
			s.quitting = true
			s.cancelTurn()
		case <-batchFailed:
			// The writer learns of it by flushing; failed fires next.
			batchFailed = nil
			_ = s.w.Flush()
		case reason := <-s.ended:
			s.finishTurn(reason)
			s.handled()
		case <-shutdown:
			shutdown = nil
			s.quitting = true
			s.cancelTurn()
		case in, ok := <-lines:
			if !ok {
				lines = nil // EOF or read failure: behaves like quit
				s.quitting = true
				continue
			}
			if s.opts.Acting != nil {
				s.opts.Acting(in.n)
			}
			s.handle(in)
			s.read = in.n
			s.handled()
		}
	}
}

func (s *server) handled() {
	if s.opts.Handled != nil {
		s.opts.Handled(s.read, s.running == nil)
	}
}

func (s *server) exitCode() int {
	if s.lastStop == wire.StopError {
		return 1
	}
	return 0
}

// readLines hands over conn's lines one at a time until the end of input,
// a read failure, or stop.
func readLines(conn Conn, out chan<- input, stop <-chan struct{}) {
	defer close(out)
	for n := 1; ; n++ {
		line, err := conn.ReadLine()
		if err != nil {
			var tooLong *wire.LineTooLongError
			if !errors.As(err, &tooLong) {
				if !errors.Is(err, io.EOF) {
					select {
					case out <- input{n: n, err: fmt.Errorf("reading stdin: %w", err)}:
					case <-stop:
					}
				}
				return
			}
		}
		select {
		case out <- input{n: n, line: line, err: err}:
		case <-stop:
			return
		}
	}
}

func (s *server) protocolError(n int, format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	if n > 0 {
		msg = fmt.Sprintf("line %d: %s", n, msg)
	}
	s.emitLine(wire.ProtocolError{Message: msg})
}

// emitLine and emitEvent write one protocol line. A write failure is
// remembered by the writer and handled by the serve loop.
func (s *server) emitLine(l wire.Line) { _ = s.w.Line(l) }

func (s *server) emitEvent(e wire.Event) { _ = s.w.Event(e) }

func (s *server) handle(in input) {
	var tooLong *wire.LineTooLongError
	switch {
	case errors.As(in.err, &tooLong):
		s.protocolError(in.n, "%v", tooLong)
		return
	case in.err != nil:
		fmt.Fprintf(s.opts.Log, "openmax: %v\n", in.err)
		return
	case wire.IsBlank(in.line):
		return // blank lines (JSON whitespace only) are skipped
	case !utf8.Valid(in.line):
		s.protocolError(in.n, "not valid UTF-8; skipped")
		return
	}
	cmd, err := wire.DecodeCommand(in.line)
	if err != nil {
		var ce *wire.CommandError
		errors.As(err, &ce)
		if ce != nil && ce.Name == "user" {
			s.refuseUser(in.n, ce.Msg)
			return
		}
		s.protocolError(in.n, "%v", err)
		return
	}
	switch c := cmd.(type) {
	case wire.User:
		if strings.TrimSpace(c.Text) == "" {
			s.refuseUser(in.n, "user: empty text starts no turn")
			return
		}
		if s.running != nil {
			s.refuseUser(in.n, "user refused")
			return
		}
		if s.opts.Untrusted {
			s.refuseUser(in.n, fmt.Sprintf("user refused: the project %s is not trusted; run `openmax trust %s` first", s.opts.Project, s.opts.Project))
			return
		}
		s.startTurn(c.Text)
	case wire.Cancel:
		s.cancelTurn()
	case wire.Quit:
		s.quitting = true
	case wire.Reload:
		if s.running != nil {
			s.protocolError(in.n, "reload refused: a turn is in flight; send it after done")
			return
		}
		s.reload()
	case wire.Approve:
		if err := s.approvals.answer(c.ApprovalID, c.Approved); err != nil {
			s.protocolError(in.n, "approve: %v", err)
		}
	case wire.ApprovalMode:
		if why := s.modeLocked(); why != "" {
			s.protocolError(in.n, "approval_mode refused: %s; the mode is unchanged (still %q)", why, s.opts.Modes.Mode())
			return
		}
		old := s.opts.Modes.Mode()
		if err := s.opts.Modes.SetMode(c.Mode); err != nil {
			s.protocolError(in.n, "approval_mode: could not save mode %q, so it is unchanged (still %q): %v", c.Mode, old, err)
			return
		}
		if c.Mode != old {
			// A settings notice for the model, before its next prompt.
			s.sess.QueueNote(core.ModeNote(old, c.Mode))
		}
		s.emitLine(wire.ApprovalModeAck{Mode: c.Mode})
	}
}

// refuseUser answers a user command that starts no turn. While a turn is in
// flight that turn owns the next done, so the refusal is a protocol_error
// alone; otherwise done refused follows.
func (s *server) refuseUser(n int, why string) {
	if s.running != nil {
		s.protocolError(n, "%s: a turn is already in flight and owns the next done, so this command gets none", why)
		return
	}
	s.protocolError(n, "%s", why)
	s.emitEvent(wire.Done{StopReason: wire.StopRefused})
}

func (s *server) startTurn(text string) {
	ctx, cancel := context.WithCancel(context.Background())
	s.running = &running{cancel: cancel}
	eng := s.opts.Engine // a reload between turns replaces it
	go func() {
		stop := wire.StopError
		defer func() {
			if r := recover(); r != nil {
				// RunTurn recovers its own panics; this guards the guard.
				fmt.Fprintf(s.opts.Log, "openmax: turn crashed: %v\n", r)
			}
			s.ended <- stop
		}()
		stop = eng.RunTurnTo(ctx, s.sess, text, turnEmitter{s, s.opts.Stepped})
	}()
}

// turnEmitter writes a turn's events (core.Emitter), each followed by the
// Stepped hook when there is one.
type turnEmitter struct {
	s    *server
	step func() // Options.Stepped
}

func (t turnEmitter) Event(e wire.Event) {
	t.s.emitEvent(e)
	if t.step != nil {
		t.step()
	}
}

func (t turnEmitter) Token(text string) {
	_ = t.s.w.Token(text) // a failure is remembered by the writer, as emitEvent's
	if t.step != nil {
		t.step()
	}
}

func (s *server) cancelTurn() {
	if s.running != nil {
		// The turn's context first, so whatever the settled approval
		// wakes already sees the turn cancelled.
		s.running.cancel()
		s.approvals.cancelAll() // only the running turn asks
	}
}

// finishTurn releases the turn's running state and cancellation, then
// emits its done: a client reading done may start the next turn at once.
func (s *server) finishTurn(stop string) {
	s.running.cancel()
	s.running = nil
	s.lastStop = stop
	s.emitEvent(wire.Done{StopReason: stop})
}

// reload re-freezes the session's configuration (Options.Refreeze) and
// answers with its receipt; the note, if any, waits for the next prompt.
func (s *server) reload() {
	if s.opts.Refreeze == nil {
		s.emitEvent(wire.Refrozen{Tools: s.opts.Engine.Tools.Names(), Skills: []string{}, Changes: []string{}})
		return
	}
	eng, receipt, note := s.opts.Refreeze()
	if eng != nil {
		s.opts.Engine = eng
	}
	if note != "" {
		s.sess.QueueNote(note)
	}
	s.emitEvent(receipt)
}

// modeLocked says why this session may not change the approval mode, or
// "" when it may.
func (s *server) modeLocked() string {
	switch {
	case s.opts.AgentSpawned != nil && s.opts.AgentSpawned():
		return "this openmax was started by an agent's tool (OPENMAX_AGENT_SPAWNED is set, or an openmax session is among its parent processes), and an agent cannot change its own approval mode"
	case s.opts.Untrusted:
		if u, ok := s.opts.Modes.(interface{ Unreadable() error }); ok && u.Unreadable() != nil {
			// The settings could not be read: that, not a missing trust,
			// is what the client needs to hear.
			return u.Unreadable().Error()
		}
		return fmt.Sprintf("the project %s is not trusted; run `openmax trust %s` first", s.opts.Project, s.opts.Project)
	}
	return ""
}
