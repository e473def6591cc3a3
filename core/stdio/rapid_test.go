package stdio_test

// Property tests of the openmax-stdio/6 contract (shared/spec/stdio-protocol.md)
// over stdio.ServeConn, driven in-process with pgregory.net/rapid through an
// in-memory connection (stdio.NewPipe), which frames what the test writes
// exactly as Serve frames stdin:
//
//   - TestRapidServeStateMachine runs random command sequences against a
//     session whose model replies (scripted, on a fake clock) the test
//     generates, and compares every stdout line with what a model of the
//     contract predicts, feeding each one to wire.Checker as well.
//   - TestRapidCheckerRejectsMisplacedDone records such a session's stdout,
//     drops, duplicates or moves one done of an admitted turn, and requires
//     wire.Checker to reject the result.
//
// The model stays deterministic because every action waits (bounded by
// rpWait of wall time, never by sleeping) for the lines it must produce, and
// stalls are parked on the fake clock (BlockUntil) before the next action.
//
// Reproduce a failure with the printed -rapid.failfile or -rapid.seed; the
// failure message also lists the stdin lines sent and the stdout received.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/openmax/openmax/core"
	"github.com/openmax/openmax/core/stdio"
	"github.com/openmax/openmax/core/tool"
	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/internal/rapidchecks"
	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/clock"
	"github.com/openmax/openmax/provider/script"
)

const (
	rpSessionID = "s-rapid"
	// rpMaxLine is the spec's 8 MiB line limit, independent of the
	// implementation's constant.
	rpMaxLine = 8 << 20
	// rpWait bounds every wait for server output or server exit.
	rpWait = 10 * time.Second
	// rpStall is how long a scripted stall or the block tool waits on the
	// fake clock; release advances the clock by this much.
	rpStall = time.Hour
	// The huge action draws an int in [0, 1000) and sends an exactly-8-MiB
	// line only for a draw in rpExactFrom+[0, rpExactN), an 8 MiB + 1 line
	// only for one in rpOverFrom+[0, rpOverN), else a cheap probe. Under
	// -race a honoured 8 MiB line costs the server about 0.6 s (it decodes
	// the JSON) and a skipped one 0.1 s, so they must be rare. rapid skews
	// draws towards the ends of a range, so the windows sit in its flat
	// middle (about 0.035% a value), and shrinking (towards 0) leaves them.
	rpExactFrom, rpExactN = 600, 5
	rpOverFrom, rpOverN   = 700, 10
	// rpChecks is the state-machine test's check count outside -short when
	// -rapid.checks (or RAPID_CHECKS) is not given: 10,000 sessions without
	// the race detector (about 14 s on two cores), 1,000 under it, where
	// each costs ten times as much (10,000 took 100 s). The test command in
	// README.md runs both, so every CI run drives 11,000 random sessions;
	// run -rapid.checks=100000 for a deeper search.
	rpChecks     = 10_000
	rpChecksRace = 1_000
)

func TestRapidServeStateMachine(t *testing.T) {
	rapidchecks.Use(t, rapidchecks.Pick(rpChecks, rpChecksRace))
	rpStats.reset()
	start := time.Now()
	rapid.Check(t, func(rt *rapid.T) {
		s := rpStart(rt)
		defer s.close()
		rt.Repeat(s.actions())
		s.finish(rt)
	})
	t.Logf("%d sessions in %v: %d admitted turns (%d stalled), %d users refused in flight, %d exact 8 MiB lines, %d over 8 MiB",
		rpStats.sessions.Load(), time.Since(start).Round(time.Millisecond), rpStats.admitted.Load(), rpStats.stalled.Load(),
		rpStats.inFlight.Load(), rpStats.exact.Load(), rpStats.over.Load())
}

func TestRapidCheckerRejectsMisplacedDone(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		s := rpStart(rt)
		defer s.close()
		s.user(rt) // at least one admitted turn, hence one done not refused
		rt.Repeat(s.actions())
		s.finish(rt)
		lines := s.all

		var dones []int
		for i, l := range lines {
			if o := rpParse(l); o.Type == "done" && o.StopReason != wire.StopRefused {
				dones = append(dones, i)
			}
		}
		if len(dones) == 0 {
			rt.Fatalf("no admitted done in a session that admitted a turn:\n%s", s.transcript())
		}
		at := dones[rapid.IntRange(0, len(dones)-1).Draw(rt, "done")]
		// Swapping with a neighbour is a mutation only when the neighbour
		// exists and is bound to its place. protocol_error and the
		// approval_mode ack are not events: the contract lets them appear
		// anywhere after hello, including between a turn's last event and
		// its done, so swapping a done with one yields a legal stream, not a
		// misplaced done. (The neighbour is never hello, which is line 0,
		// while a turn's done follows at least its budget.)
		swappable := func(nb int) bool {
			if nb < 0 || nb >= len(lines) {
				return false
			}
			typ := rpParse(lines[nb]).Type
			return typ != "protocol_error" && typ != "approval_mode"
		}
		mutations := []string{"drop", "duplicate"}
		if swappable(at - 1) {
			mutations = append(mutations, "earlier")
		}
		if swappable(at + 1) {
			mutations = append(mutations, "later")
		}
		how := rapid.SampledFrom(mutations).Draw(rt, "mutation")

		mutated := append([][]byte(nil), lines...)
		switch how {
		case "drop":
			mutated = slices.Delete(mutated, at, at+1)
		case "duplicate":
			mutated = slices.Insert(mutated, at, mutated[at])
		case "earlier":
			mutated[at], mutated[at-1] = mutated[at-1], mutated[at]
		case "later":
			mutated[at], mutated[at+1] = mutated[at+1], mutated[at]
		}

		c := wire.NewChecker(wire.Strict())
		for _, l := range mutated {
			if c.Line(l) != nil {
				return // rejected
			}
		}
		if c.End() != nil {
			return
		}
		var b strings.Builder
		for i, l := range mutated {
			fmt.Fprintf(&b, "%3d %s\n", i+1, l)
		}
		rt.Fatalf("checker accepted the stream after %s of the done on line %d (%s):\n%s",
			how, at+1, lines[at], b.String())
	})
}

// ---- the session under test ----

type rpState int

const (
	rpIdle        rpState = iota
	rpStallStream         // the reply stalled on the clock after a token
	rpStallTool           // the block tool waits on the clock
)

// rpWant is one expected stdout line: its type and, when val is not empty,
// its key field (text of token, thinking and message_done, stop_reason of
// done, name of tool_start, ok of tool_end).
type rpWant struct{ typ, val string }

type rpObs struct {
	Type       string `json:"type"`
	SessionID  string `json:"session_id"`
	Text       string `json:"text"`
	StopReason string `json:"stop_reason"`
	Name       string `json:"name"`
	OK         *bool  `json:"ok"`
}

func rpParse(line []byte) rpObs {
	var o rpObs
	_ = json.Unmarshal(line, &o)
	return o
}

func (o rpObs) val() string {
	switch o.Type {
	case "token", "thinking", "message_done":
		return o.Text
	case "done":
		return o.StopReason
	case "tool_start":
		return o.Name
	case "tool_end":
		if o.OK == nil {
			return "<missing>"
		}
		return strconv.FormatBool(*o.OK)
	}
	return ""
}

type rpResult struct {
	code int
	err  error
}

// rpWire is what both state machines share: the client's end of an
// in-memory connection to a running ServeConn, what went through it, and
// the checker every stdout line passes.
type rpWire struct {
	clk      *clock.Fake
	shutdown context.CancelFunc
	client   *stdio.PipeClient
	result   chan rpResult
	served   bool
	stdinEOF bool

	checker *wire.Checker
	all     [][]byte // stdout lines so far, without newlines
	sent    []string // stdin as sent, for failure reports
}

func newRPWire() rpWire {
	return rpWire{
		clk:     clock.NewFake(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)),
		result:  make(chan rpResult, 1),
		checker: wire.NewChecker(wire.Strict()),
	}
}

// serve starts ServeConn with opts over a new in-memory connection; the
// session is shut down by cancelling its context with s.shutdown.
func (s *rpWire) serve(opts stdio.Options) {
	server, client := stdio.NewPipe()
	s.client = client
	ctx, cancel := context.WithCancel(context.Background())
	s.shutdown = cancel
	go func() {
		code, err := stdio.ServeConn(ctx, server, opts)
		s.result <- rpResult{code, err}
	}()
}

// closeIO closes the client's end (stdin reads EOF, stdout writes fail)
// and waits (bounded) for Serve to return.
func (s *rpWire) closeIO() {
	s.client.Close()
	if !s.served {
		select {
		case <-s.result:
		case <-time.After(rpWait):
		}
	}
}

func (s *rpWire) transcript() string {
	var b strings.Builder
	b.WriteString("stdin:\n")
	for _, l := range s.sent {
		fmt.Fprintf(&b, "  %s\n", l)
	}
	b.WriteString("stdout:\n")
	for i, l := range s.all {
		fmt.Fprintf(&b, "  %3d %s\n", i+1, l)
	}
	return b.String()
}

func (s *rpWire) fatalf(t *rapid.T, format string, a ...any) {
	t.Helper()
	t.Fatalf("%s\n%s", fmt.Sprintf(format, a...), s.transcript())
}

// send writes one command line.
func (s *rpWire) send(t *rapid.T, line string) {
	t.Helper()
	s.sent = append(s.sent, strconv.Quote(line))
	if _, err := io.WriteString(s.client, line); err != nil {
		s.fatalf(t, "writing stdin: %v", err)
	}
}

func (s *rpWire) closeStdin() {
	if !s.stdinEOF {
		s.stdinEOF = true
		s.sent = append(s.sent, "(EOF)")
		s.client.CloseWrite()
	}
}

// read returns the next stdout line, recorded and fed to the checker;
// ctx bounds the wait.
func (s *rpWire) read(ctx context.Context, t *rapid.T, waiting string) []byte {
	t.Helper()
	l, err := s.client.ReadLine(ctx)
	switch {
	case errors.Is(err, io.EOF):
		s.fatalf(t, "stdout ended while waiting for %s", waiting)
	case errors.Is(err, context.DeadlineExceeded):
		s.fatalf(t, "no stdout line within %v while waiting for %s", rpWait, waiting)
	case err != nil:
		s.fatalf(t, "reading stdout while waiting for %s: %v", waiting, err)
	}
	s.all = append(s.all, l)
	if err := s.checker.Line(l); err != nil {
		s.fatalf(t, "checker rejects stdout line %d: %v", len(s.all), err)
	}
	return l
}

// waitEnd requires stdout to end (bounded) with no line after the
// session's last expected one.
func (s *rpWire) waitEnd(t *rapid.T) {
	t.Helper()
	ctx, cancel := rpCtx()
	defer cancel()
	l, err := s.client.ReadLine(ctx)
	switch {
	case err == nil:
		s.all = append(s.all, l)
		s.fatalf(t, "stdout line after the session's last expected line")
	case !errors.Is(err, io.EOF):
		s.fatalf(t, "stdout not closed within %v after Serve returned: %v", rpWait, err)
	}
}

// rpCtx bounds one wait for server output.
func rpCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), rpWait)
}

type rpSession struct {
	rpWire
	cur atomic.Pointer[script.Provider] // the admitted turn's replies

	state    rpState
	stalled  rpPlan // the in-flight turn when state is not idle
	lastStop string // stop_reason of the last admitted turn's done
	mode     string // the approval mode ("" is the server's initial ask)
	notes    int    // mode changes since the last admitted turn

	// What the model predicts and what stdout showed.
	admitted, wantRefused, wantProtoErrs int
	turnDones, refusedDones, protoErrs   int
	probes                               int
}

func rpStart(t *rapid.T) *rpSession {
	rpStats.sessions.Add(1)
	s := &rpSession{rpWire: newRPWire()}
	block := tool.Func{
		ToolSpec: provider.ToolSpec{Name: "block", Description: "waits an hour on the fake clock", Schema: json.RawMessage(`{"type":"object"}`)},
		Fn: func(ctx context.Context, _ json.RawMessage) tool.Result {
			if clock.Sleep(ctx, s.clk, rpStall) != nil {
				return tool.Result{} // the engine reports "cancelled"
			}
			return tool.Result{OK: true, Output: "released"}
		},
	}
	reg, err := tool.NewRegistry(block)
	if err != nil {
		t.Fatal(err)
	}
	eng := &core.Engine{
		Provider: provider.Func(func(ctx context.Context, req provider.Request) iter.Seq[provider.Part] {
			return s.cur.Load().Stream(ctx, req)
		}),
		Tools: reg,
		Model: "scripted",
	}
	s.serve(stdio.Options{
		Engine: eng, SessionID: rpSessionID, Version: "0.0.0-rapid", Project: "/rapid/project",
	})
	s.expect(t, rpWant{typ: "hello"})
	return s
}

// close tears the session down whether or not the test failed: shutdown
// cancels any turn, closing the client's end ends the server's input and
// fails its writes.
func (s *rpSession) close() {
	s.shutdown()
	s.clk.Advance(2 * rpStall)
	s.closeIO()
}

// next returns the next stdout line, fed to the checker and counted.
func (s *rpSession) next(ctx context.Context, t *rapid.T, waiting string) rpObs {
	t.Helper()
	l := s.read(ctx, t, waiting)
	o := rpParse(l)
	switch o.Type {
	case "done":
		if o.StopReason == wire.StopRefused {
			s.refusedDones++
		} else {
			s.turnDones++
		}
	case "protocol_error":
		s.protoErrs++
	}
	return o
}

// expect reads exactly the wanted lines.
func (s *rpSession) expect(t *rapid.T, ws ...rpWant) {
	t.Helper()
	if len(ws) == 0 {
		return
	}
	ctx, cancel := rpCtx()
	defer cancel()
	for i, w := range ws {
		o := s.next(ctx, t, w.typ)
		if o.Type != w.typ || (w.val != "" && o.val() != w.val) {
			s.fatalf(t, "stdout line %d: got %s %q, want %s %q (expected run: %v)", len(s.all), o.Type, o.val(), w.typ, w.val, ws[i:])
		}
		if w.typ == "done" && w.val != wire.StopRefused {
			s.lastStop = w.val
		}
	}
}

// parked waits until the stalled turn waits on the fake clock.
func (s *rpSession) parked(t *rapid.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), rpWait)
	defer cancel()
	if err := s.clk.BlockUntil(ctx, 1); err != nil {
		s.fatalf(t, "the stalled turn never waited on the clock: %v", err)
	}
}

// probe proves the server emitted nothing since the last expected line: an
// unknown command must be answered by the very next line.
func (s *rpSession) probe(t *rapid.T) {
	t.Helper()
	s.probes++
	s.send(t, fmt.Sprintf(`{"cmd":"probe-%d"}`+"\n", s.probes))
	s.wantProtoErrs++
	s.expect(t, rpWant{typ: "protocol_error"})
}

func (s *rpSession) eol(t *rapid.T) string {
	return rapid.SampledFrom([]string{"\n", "\n", "\r\n"}).Draw(t, "eol")
}

// refusedUser is the answer to a user command that starts no turn: alone
// in flight, followed by done refused when idle.
func (s *rpSession) refusedUser(t *rapid.T) {
	s.wantProtoErrs++
	if s.state != rpIdle {
		s.expect(t, rpWant{typ: "protocol_error"})
		return
	}
	s.wantRefused++
	s.expect(t, rpWant{typ: "protocol_error"}, rpWant{"done", wire.StopRefused})
}

func (s *rpSession) protoErr(t *rapid.T) {
	s.wantProtoErrs++
	s.expect(t, rpWant{typ: "protocol_error"})
}

// ---- actions ----

// actions are the state machine's steps. rapid draws the action names in
// sorted order with a skew towards both ends of the list, so the numbered
// names put the turn lifecycle (user, cancel, release) at the ends, where
// they are drawn about twice as often as the rest.
func (s *rpSession) actions() map[string]func(*rapid.T) {
	return map[string]func(*rapid.T){
		"01 user":       s.user,
		"02 cancel":     s.cancel,
		"03 release":    s.release,
		"04 raceCancel": s.raceCancel,
		"05 userEmpty":  s.userEmpty,
		"06 huge":       s.huge,
		"07 blank":      s.blank,
		"08 misc":       s.misc,
		"09 badUTF8":    s.badUTF8,
		"10 unknownCmd": s.unknownCmd,
		"11 wrongTypes": s.wrongTypes,
		"12 garbage":    s.garbage,
		"":              s.check,
	}
}

// check holds after every action: each admitted user has had exactly one
// done except the one in flight, each refused user was answered as the
// contract says, and nothing else produced a done or a protocol_error.
func (s *rpSession) check(t *rapid.T) {
	inFlight := 0
	if s.state != rpIdle {
		inFlight = 1
	}
	if s.turnDones != s.admitted-inFlight {
		s.fatalf(t, "%d admitted users (%d in flight) but %d turn dones", s.admitted, inFlight, s.turnDones)
	}
	if s.refusedDones != s.wantRefused {
		s.fatalf(t, "%d done refused, want %d", s.refusedDones, s.wantRefused)
	}
	if s.protoErrs != s.wantProtoErrs {
		s.fatalf(t, "%d protocol_error lines, want %d", s.protoErrs, s.wantProtoErrs)
	}
}

var rpUserTexts = []string{"hi", "do the thing", "ünïcode ✓", "  padded  ", `"quoted" \ back`, "multi\nline"}

func rpUserLine(text, eol string) string {
	b, _ := json.Marshal(text)
	return `{"cmd":"user","text":` + string(b) + `}` + eol
}

// user sends a user command: admitted when idle (with a generated reply),
// refused with a protocol_error alone while a turn is in flight.
func (s *rpSession) user(t *rapid.T) {
	text := rapid.SampledFrom(rpUserTexts).Draw(t, "text")
	eol := s.eol(t)
	if s.state != rpIdle {
		rpStats.inFlight.Add(1)
		s.send(t, rpUserLine(text, eol))
		s.refusedUser(t)
		return
	}
	p := rpGenPlan(t, rpReplyKinds)
	p.head = s.withNotes(p.head)
	s.cur.Store(script.New(p.sc, s.clk))
	s.send(t, rpUserLine(text, eol))
	s.admitted++
	rpStats.admitted.Add(1)
	s.expect(t, p.head...)
	if p.stall != rpIdle {
		rpStats.stalled.Add(1)
		s.parked(t)
		s.state, s.stalled = p.stall, p
	}
}

// userEmpty sends user commands that start no turn: empty text, no text, or
// text of the wrong type.
func (s *rpSession) userEmpty(t *rapid.T) {
	line := rapid.SampledFrom([]string{
		`{"cmd":"user","text":""}`,
		`{"cmd":"user"}`,
		`{"cmd":"user","text":null}`,
		`{"cmd":"user","text":5}`,
		`{"cmd":"user","text":["hi"]}`,
		`{"text":"","cmd":"user","extra":true}`,
	}).Draw(t, "line")
	s.send(t, line+s.eol(t))
	s.refusedUser(t)
}

func (s *rpSession) cancel(t *rapid.T) {
	line := rapid.SampledFrom([]string{`{"cmd":"cancel"}`, `{"cmd":"cancel","why":"extra fields are ignored"}`}).Draw(t, "line")
	s.send(t, line+s.eol(t))
	if s.state == rpIdle {
		s.probe(t) // cancel while idle says nothing
		return
	}
	s.expect(t, s.stalled.cancel...)
	s.state = rpIdle
}

// release advances the fake clock past any stall.
func (s *rpSession) release(t *rapid.T) {
	s.sent = append(s.sent, "(advance the clock)")
	s.clk.Advance(rpStall)
	if s.state == rpIdle {
		return // nothing waits; the next action shows nothing was emitted
	}
	s.expect(t, s.stalled.release...)
	s.state = rpIdle
}

// raceCancel sends a user and a cancel back to back when idle, so the cancel
// lands at an arbitrary point of the turn: the turn must still end with
// exactly one done, either as scripted or cancelled.
func (s *rpSession) raceCancel(t *rapid.T) {
	if s.state != rpIdle {
		t.Skip("needs an idle session")
	}
	p := rpGenPlan(t, rpRacyKinds) // none stalls: the turn ends on its own
	p.head = s.withNotes(p.head)
	s.cur.Store(script.New(p.sc, s.clk))
	s.send(t, rpUserLine("race", "\n")+`{"cmd":"cancel"}`+"\n")
	s.admitted++
	rpStats.admitted.Add(1)
	ctx, cancel := rpCtx()
	defer cancel()
	first := len(s.all)
	for {
		o := s.next(ctx, t, "done")
		if o.Type == "done" {
			s.lastStop = o.StopReason
			if o.StopReason == wire.StopCancelled {
				return // any prefix the checker accepts
			}
			if o.StopReason != p.stop {
				s.fatalf(t, "raced turn ended %q, want %q or cancelled", o.StopReason, p.stop)
			}
			break
		}
	}
	got := s.all[first:]
	if len(got) != len(p.head) {
		s.fatalf(t, "raced turn finished uncancelled with %d lines, want %v", len(got), p.head)
	}
	for i, l := range got {
		if o := rpParse(l); o.Type != p.head[i].typ || (p.head[i].val != "" && o.val() != p.head[i].val) {
			s.fatalf(t, "raced turn line %d: got %s %q, want %v", i+1, o.Type, o.val(), p.head[i])
		}
	}
}

func (s *rpSession) garbage(t *rapid.T) {
	line := rapid.SampledFrom([]string{
		`{`, `not json`, `[1,2]`, `null`, `"user"`, `42`, `{}`,
		`{"cmd":"user","text":"hi"`, `{"cmd":"reload"} trailing`, `{"cmd":"quit"}}`,
		`{"cmd":"user","text":"a"}{"cmd":"user","text":"b"}`,
	}).Draw(t, "line")
	s.send(t, line+s.eol(t))
	s.protoErr(t)
}

func (s *rpSession) badUTF8(t *rapid.T) {
	line := rapid.SampledFrom([]string{
		"{\"cmd\":\"user\",\"text\":\"\xff\"}",
		"{\"cmd\":\"quit\",\"x\":\"\xc3\x28\"}",
		"{\"cmd\":\"reload\",\"x\":\"\xed\xa0\x80\"}", // an encoded surrogate
		"\xff\xfe",
		"{\"cmd\":\"cancel\"}\x80",
	}).Draw(t, "line")
	s.send(t, line+s.eol(t))
	s.protoErr(t)
}

func (s *rpSession) blank(t *rapid.T) {
	line := rapid.SampledFrom([]string{"", " ", "\t", "   \t ", "\r"}).Draw(t, "line")
	s.send(t, line+s.eol(t))
	s.probe(t) // blank lines are skipped silently
}

func (s *rpSession) unknownCmd(t *rapid.T) {
	line := rapid.SampledFrom([]string{
		`{"cmd":"dance"}`, `{"cmd":""}`, `{"cmd":"User","text":"hi"}`, `{"cmd":"quit "}`, `{"cmd":"exit"}`,
	}).Draw(t, "line")
	s.send(t, line+s.eol(t))
	s.protoErr(t)
}

// wrongTypes sends known commands (other than user) whose fields are
// missing or of the wrong type.
func (s *rpSession) wrongTypes(t *rapid.T) {
	line := rapid.SampledFrom([]string{
		`{"cmd":5}`,
		`{"cmd":null}`,
		`{"cmd":["user"]}`,
		`{"cmd":"approve","approval_id":7,"approved":true}`,
		`{"cmd":"approve","approval_id":"a1","approved":"yes"}`,
		`{"cmd":"approve"}`,
		`{"cmd":"approval_mode","mode":true}`,
		`{"cmd":"approval_mode","mode":"sometimes"}`,
		`{"cmd":"approval_mode"}`,
	}).Draw(t, "line")
	s.send(t, line+s.eol(t))
	s.protoErr(t)
}

// misc sends other valid commands: reload, approval_mode, an approve for an
// id never issued.
func (s *rpSession) misc(t *rapid.T) {
	switch rapid.IntRange(0, 2).Draw(t, "misc") {
	case 0:
		s.send(t, `{"cmd":"reload","extra":1}`+s.eol(t))
		if s.state != rpIdle {
			s.protoErr(t) // reload refused in flight
			return
		}
		s.expect(t, rpWant{typ: "refrozen"})
	case 1:
		mode := rapid.SampledFrom([]string{"auto", "ask", "readonly"}).Draw(t, "mode")
		s.send(t, `{"cmd":"approval_mode","mode":"`+mode+`"}`+s.eol(t))
		s.expect(t, rpWant{typ: "approval_mode"})
		if old := s.mode; mode != old && (old != "" || mode != "ask") {
			s.notes++ // a settings notice before the next prompt
		}
		s.mode = mode
	case 2:
		s.send(t, `{"cmd":"approve","approval_id":"never-issued","approved":true}`+s.eol(t))
		s.protoErr(t)
	}
}

var (
	rpHugeOnce sync.Once
	rpHugeBuf  []byte // `{"cmd":"reload","pad":"xxx…`, long enough for both huge lines
)

// rpStats counts what the state-machine sessions exercised, for the log.
var rpStats rpCounters

type rpCounters struct {
	sessions, admitted, stalled, inFlight, exact, over atomic.Int64
}

func (c *rpCounters) reset() {
	for _, n := range []*atomic.Int64{&c.sessions, &c.admitted, &c.stalled, &c.inFlight, &c.exact, &c.over} {
		n.Store(0)
	}
}

// huge sends, rarely, a line of exactly 8 MiB (a reload padded with an
// ignored field: honoured) or of 8 MiB + 1 byte (skipped with a
// protocol_error, after which the reader must resynchronise).
func (s *rpSession) huge(t *rapid.T) {
	var over bool
	switch dice := rapid.IntRange(0, 999).Draw(t, "hugeDice"); {
	case dice >= rpExactFrom && dice < rpExactFrom+rpExactN:
		rpStats.exact.Add(1)
	case dice >= rpOverFrom && dice < rpOverFrom+rpOverN:
		rpStats.over.Add(1)
		over = true
	default:
		s.probe(t)
		return
	}
	rpHugeOnce.Do(func() {
		rpHugeBuf = bytes.Repeat([]byte{'x'}, rpMaxLine)
		copy(rpHugeBuf, `{"cmd":"reload","pad":"`)
	})
	size := rpMaxLine // without the newline
	if over {
		size++
	}
	const tail = `"}`
	s.sent = append(s.sent, fmt.Sprintf("<%d-byte reload line>", size))
	if _, err := s.client.Write(rpHugeBuf[:size-len(tail)]); err != nil {
		s.fatalf(t, "writing stdin: %v", err)
	}
	if _, err := io.WriteString(s.client, tail+"\n"); err != nil {
		s.fatalf(t, "writing stdin: %v", err)
	}
	switch {
	case over:
		s.protoErr(t)
		s.probe(t) // resynchronised on the next line
	case s.state != rpIdle:
		s.protoErr(t) // honoured: reload refused in flight
	default:
		s.expect(t, rpWant{typ: "refrozen"})
	}
}

// finish ends the session with quit, EOF (possibly after an unterminated
// last line), quit then EOF, or a shutdown of Serve's context; releases any
// stall so the drain finishes; and checks the exit and that stdout ends
// right after the last expected line.
func (s *rpSession) finish(t *rapid.T) {
	how := rapid.SampledFrom([]string{"quit", "eof", "eofUnterminated", "quitEOF", "shutdown"}).Draw(t, "end")
	switch how {
	case "quit":
		s.send(t, `{"cmd":"quit"}`+s.eol(t))
	case "eof":
		s.closeStdin()
	case "eofUnterminated":
		s.probes++
		s.send(t, fmt.Sprintf(`{"cmd":"probe-%d"}`, s.probes))
		s.closeStdin()
		s.protoErr(t) // a final line without a newline is still a line
	case "quitEOF":
		s.send(t, `{"cmd":"quit"}`+s.eol(t))
		s.closeStdin()
	case "shutdown":
		s.sent = append(s.sent, "(cancel Serve's context)")
		s.shutdown()
	}
	if s.state != rpIdle {
		if how == "shutdown" {
			s.expect(t, s.stalled.cancel...) // shutdown cancels the turn
		} else {
			s.sent = append(s.sent, "(advance the clock)")
			s.clk.Advance(rpStall) // quit and EOF drain it
			s.expect(t, s.stalled.release...)
		}
		s.state = rpIdle
	}
	s.check(t)

	var res rpResult
	select {
	case res = <-s.result:
		s.served = true
	case <-time.After(rpWait):
		s.fatalf(t, "Serve did not return within %v after %s", rpWait, how)
	}
	s.closeStdin()
	if res.err != nil {
		s.fatalf(t, "Serve: %v", res.err)
	}
	// The spec: exit 1 when the last turn ended with stop_reason error. A
	// refused user starts no turn, so its done does not count.
	want := 0
	if s.lastStop == wire.StopError {
		want = 1
	}
	if res.code != want {
		s.fatalf(t, "exit code %d, want %d (last turn stop_reason %q)", res.code, want, s.lastStop)
	}
	s.waitEnd(t)
	if err := s.checker.End(); err != nil {
		s.fatalf(t, "checker at end of stream: %v", err)
	}
}

// ---- generated replies ----

// rpPlan is a generated turn: its scripted replies and the stdout lines the
// contract implies. A stalling turn stops after head and goes on with
// release or cancel.
type rpPlan struct {
	sc      *script.Scenario
	head    []rpWant
	stop    string // head's done, for a turn that does not stall
	stall   rpState
	release []rpWant
	cancel  []rpWant
}

var (
	rpTokenPool    = []string{"a", "bc", "héllo", "日本語", "🙂", `"q"`, "<&>", "line\nbreak", "\u2028", "tab\t", " ", `\`}
	rpThinkingPool = []string{"hmm", "let me think", "步骤", "…"}
	rpReplyKinds   = []string{"quick", "thinking", "toolLoop", "streamStall", "toolStall", "streamError", "truncated", "toolNoFinish"}
	rpRacyKinds    = []string{"quick", "thinking", "toolLoop", "streamError", "truncated", "toolNoFinish"}
)

func rpText(s string) script.Chunk     { return script.Chunk{Text: &s} }
func rpThinking(s string) script.Chunk { return script.Chunk{Thinking: &s} }
func rpFinish(s string) script.Chunk   { return script.Chunk{Finish: &s} }
func rpErr(s string) script.Chunk      { return script.Chunk{Error: &s} }
func rpDied(s string) script.Chunk     { return script.Chunk{Died: &s} }
func rpCall(id, name, args string) script.Chunk {
	return script.Chunk{ToolCall: &script.ToolCall{ID: id, Name: name, ArgsJSON: args}}
}

// rpRun streams texts as chunks and returns the token lines they produce.
func rpRun(chunks *[]script.Chunk, texts []string) []rpWant {
	var ws []rpWant
	for _, x := range texts {
		*chunks = append(*chunks, rpText(x))
		ws = append(ws, rpWant{"token", x})
	}
	return ws
}

// rpClosed is the token lines of texts closed by message_done, or nothing
// when there is no text.
func rpClosed(ws []rpWant, texts []string) []rpWant {
	if len(texts) == 0 {
		return ws
	}
	return append(ws, rpWant{"message_done", strings.Join(texts, "")})
}

// withNotes is the head of a turn's lines (its budget first) with the
// harness_note of each mode change since the last turn right after the
// budget; the notes are then taken.
func (s *rpSession) withNotes(head []rpWant) []rpWant {
	out := append([]rpWant{}, head[0])
	for ; s.notes > 0; s.notes-- {
		out = append(out, rpWant{typ: "harness_note"})
	}
	return append(out, head[1:]...)
}

func rpGenPlan(t *rapid.T, kinds []string) rpPlan {
	texts := func(label string, min int) []string {
		return rapid.SliceOfN(rapid.SampledFrom(rpTokenPool), min, 3).Draw(t, label)
	}
	budget := rpWant{typ: "budget"}
	var p rpPlan
	var c1, c2 []script.Chunk
	switch kind := rapid.SampledFrom(kinds).Draw(t, "reply"); kind {
	case "quick":
		ts := texts("text", 1)
		p.head = append([]rpWant{budget}, rpRun(&c1, ts)...)
		if rapid.Bool().Draw(t, "usage") {
			cached := 1
			c1 = append(c1, script.Chunk{Usage: &script.Usage{PromptTokens: 12, CompletionTokens: 3, CachedTokens: &cached}})
			p.head = append(p.head, rpWant{typ: "usage"})
		}
		p.stop = rapid.SampledFrom([]string{"stop", "length", "end_turn"}).Draw(t, "finish")
		c1 = append(c1, rpFinish(p.stop))
		p.head = append(rpClosed(p.head, ts), rpWant{"done", p.stop})
	case "thinking":
		th := rapid.SliceOfN(rapid.SampledFrom(rpThinkingPool), 1, 2).Draw(t, "thinking")
		p.head = []rpWant{budget}
		for _, x := range th {
			c1 = append(c1, rpThinking(x))
			p.head = append(p.head, rpWant{"thinking", x})
		}
		if rapid.Bool().Draw(t, "signature") {
			sig := "sig-1" // closes the block; no line
			c1 = append(c1, script.Chunk{Signature: &sig})
		}
		ts := texts("text", 1)
		p.head = append(p.head, rpRun(&c1, ts)...)
		c1 = append(c1, rpFinish("stop"))
		p.stop = "stop"
		p.head = append(rpClosed(p.head, ts), rpWant{"done", "stop"})
	case "toolLoop":
		// A completed reply calling a tool that fails at once (unknown, or
		// the block tool with arguments that are not an object), then a
		// final answer.
		pre := texts("pre", 0)
		p.head = rpClosed(append([]rpWant{budget}, rpRun(&c1, pre)...), pre)
		call := rapid.SampledFrom([][2]string{{"nope", `{"x":1}`}, {"block", `[1]`}, {"block", `null`}, {"nope", `not json`}}).Draw(t, "call")
		c1 = append(c1, rpCall("t1", call[0], call[1]), rpFinish("tool_calls"))
		p.head = append(p.head, rpWant{"tool_start", call[0]}, rpWant{"tool_end", "false"})
		post := texts("post", 1)
		p.head = append(p.head, rpRun(&c2, post)...)
		c2 = append(c2, rpFinish("stop"))
		p.stop = "stop"
		p.head = append(rpClosed(p.head, post), rpWant{"done", "stop"})
	case "streamStall":
		a, b := texts("before", 1), texts("after", 1)
		p.head = append([]rpWant{budget}, rpRun(&c1, a)...)
		c1 = append(c1, script.Chunk{Delay: rpStall})
		p.release = rpRun(&c1, b)
		c1 = append(c1, rpFinish("stop"))
		p.release = append(rpClosed(p.release, append(append([]string(nil), a...), b...)), rpWant{"done", "stop"})
		p.cancel = append(rpClosed(nil, a), rpWant{"done", wire.StopCancelled})
		p.stall = rpStallStream
	case "toolStall":
		pre := texts("pre", 0)
		p.head = rpClosed(append([]rpWant{budget}, rpRun(&c1, pre)...), pre)
		c1 = append(c1, rpCall("b1", "block", `{"for":"1h"}`), rpFinish("tool_calls"))
		p.head = append(p.head, rpWant{"tool_start", "block"})
		post := texts("post", 1)
		p.release = append([]rpWant{{"tool_end", "true"}}, rpRun(&c2, post)...)
		c2 = append(c2, rpFinish("stop"))
		p.release = append(rpClosed(p.release, post), rpWant{"done", "stop"})
		p.cancel = []rpWant{{"tool_end", "false"}, {"done", wire.StopCancelled}}
		p.stall = rpStallTool
	case "streamError":
		// The provider reports a failure inside the stream: error, then
		// done error, no message_done; anything after it is ignored.
		pre := texts("pre", 0)
		p.head = append([]rpWant{budget}, rpRun(&c1, pre)...)
		c1 = append(c1, rpErr("upstream exploded"))
		if rapid.Bool().Draw(t, "afterError") {
			c1 = append(c1, rpText("ignored"), rpFinish("stop"))
		}
		p.stop = wire.StopError
		p.head = append(p.head, rpWant{typ: "error"}, rpWant{"done", wire.StopError})
	case "truncated":
		// The stream dies, or just ends, with no completion signal.
		died := rapid.Bool().Draw(t, "died")
		min := 1 // a reply of no chunks at all would be the shorthand form
		if died {
			min = 0
		}
		pre := texts("pre", min)
		p.head = rpClosed(append([]rpWant{budget}, rpRun(&c1, pre)...), pre)
		if died {
			c1 = append(c1, rpDied("connection reset"))
		}
		p.stop = wire.StopTruncated
		p.head = append(p.head, rpWant{typ: "error"}, rpWant{"done", wire.StopTruncated})
	case "toolNoFinish":
		// A tool call in a stream with no completion signal is never
		// dispatched (were block dispatched, the turn would hang).
		pre := texts("pre", 0)
		p.head = rpClosed(append([]rpWant{budget}, rpRun(&c1, pre)...), pre)
		name := rapid.SampledFrom([]string{"block", "nope"}).Draw(t, "tool")
		c1 = append(c1, rpCall("n1", name, `{}`))
		p.stop = wire.StopTruncated
		p.head = append(p.head, rpWant{typ: "error"}, rpWant{"done", wire.StopTruncated})
	default:
		panic(kind)
	}
	p.sc = &script.Scenario{Replies: []script.Reply{{Chunks: c1}}}
	if c2 != nil {
		p.sc.Replies = append(p.sc.Replies, script.Reply{Chunks: c2})
	}
	return p
}
