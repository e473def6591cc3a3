package stdio_test

// A second rapid state machine over stdio.ServeConn, focused on approvals: every
// admitted user gets a scripted reply that calls a mutating test tool and
// then finishes with text, and the actions answer, cancel or race the
// approval request the "ask" mode raises, send approve commands naming wrong
// or already settled ids, and switch the approval mode while idle and while
// a request is pending. The model predicts every stdout line; each line is
// also fed to wire.Checker. Synchronisation is on stdout lines only, each
// wait bounded by rpWait.

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"strconv"
	"strings"
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
	"github.com/openmax/openmax/provider/script"
)

const (
	rpaTool   = "mutate"
	rpaAnswer = "finished"
	// rpaChecks is the approval state machine's check count outside -short
	// when the user did not choose one.
	rpaChecks = 300
)

// rpaMutator is a tool that declares itself mutating, so the approval mode
// gates it; it counts its runs.
type rpaMutator struct {
	tool.Func
	runs *atomic.Int64
}

func (rpaMutator) Mutating() bool { return true }

type rpaObs struct {
	Type       string `json:"type"`
	Text       string `json:"text"`
	StopReason string `json:"stop_reason"`
	Name       string `json:"name"`
	OK         *bool  `json:"ok"`
	ApprovalID string `json:"approval_id"`
	Outcome    string `json:"outcome"`
	Mode       string `json:"mode"`
	CallID     string `json:"call_id"`
}

// val is the line's key field: text of token and message_done, stop_reason
// of done, name of tool_start, ok of tool_end, approval_id of
// approval_request, "approval_id outcome" of approval_settled, mode of the
// approval_mode ack, call_id of harness_note.
func (o rpaObs) val() string {
	switch o.Type {
	case "token", "message_done":
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
	case "approval_request":
		return o.ApprovalID
	case "approval_settled":
		return o.ApprovalID + " " + o.Outcome
	case "approval_mode":
		return o.Mode
	case "harness_note":
		return o.CallID
	}
	return ""
}

type rpaSession struct {
	rpWire
	cur  atomic.Pointer[script.Provider]
	runs atomic.Int64 // runs of the mutating tool

	// The model.
	mode     string   // the approval mode the server holds
	pending  string   // the pending approval_id, "" when none
	settled  []string // approval ids already settled
	turns    int      // admitted users so far (names the call ids)
	notes    int      // mode changes since the last admitted turn (each a harness_note "" when it opens)
	wantRuns int64

	admitted, wantProtoErrs, wantRequests, wantSettled int
	dones, protoErrs, requests, settledLines           int
}

var rpaStats struct {
	sessions, requests, approved, declined, cancelled, quitDeclined, modeWhilePending, auto, readonly atomic.Int64
}

func TestRapidApprovalStateMachine(t *testing.T) {
	rapidchecks.Use(t, rpaChecks)
	for _, n := range []*atomic.Int64{&rpaStats.sessions, &rpaStats.requests, &rpaStats.approved, &rpaStats.declined,
		&rpaStats.cancelled, &rpaStats.quitDeclined, &rpaStats.modeWhilePending, &rpaStats.auto, &rpaStats.readonly} {
		n.Store(0)
	}
	start := time.Now()
	rapid.Check(t, func(rt *rapid.T) {
		s := rpaStart(rt)
		defer s.close()
		rt.Repeat(s.actions())
		s.finish(rt)
	})
	t.Logf("%d sessions in %v: %d approval requests (%d approved, %d declined, %d cancelled, %d declined by quit/EOF), %d mode switches while pending, %d turns in auto, %d in readonly",
		rpaStats.sessions.Load(), time.Since(start).Round(time.Millisecond), rpaStats.requests.Load(), rpaStats.approved.Load(),
		rpaStats.declined.Load(), rpaStats.cancelled.Load(), rpaStats.quitDeclined.Load(), rpaStats.modeWhilePending.Load(),
		rpaStats.auto.Load(), rpaStats.readonly.Load())
}

func rpaStart(t *rapid.T) *rpaSession {
	rpaStats.sessions.Add(1)
	s := &rpaSession{rpWire: newRPWire(), mode: "ask"}
	mut := rpaMutator{
		Func: tool.Func{
			ToolSpec: provider.ToolSpec{Name: rpaTool, Description: "pretends to change the project", Schema: json.RawMessage(`{"type":"object"}`)},
			Fn: func(context.Context, json.RawMessage) tool.Result {
				s.runs.Add(1)
				return tool.Result{OK: true, Output: "mutated"}
			},
		},
		runs: &s.runs,
	}
	reg, err := tool.NewRegistry(mut)
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
		Modes: stdio.NewMemoryModes("ask"),
	})
	s.expect(t, rpWant{typ: "hello"})
	return s
}

func (s *rpaSession) close() {
	s.shutdown()
	s.closeIO()
}

// next returns the next stdout line, fed to the checker and counted.
func (s *rpaSession) next(ctx context.Context, t *rapid.T, waiting string) rpaObs {
	t.Helper()
	l := s.read(ctx, t, waiting)
	var o rpaObs
	if err := json.Unmarshal(l, &o); err != nil {
		s.fatalf(t, "stdout line %d is not JSON: %v", len(s.all), err)
	}
	switch o.Type {
	case "done":
		s.dones++
	case "protocol_error":
		s.protoErrs++
	case "approval_request":
		s.requests++
	case "approval_settled":
		s.settledLines++
	}
	return o
}

func (s *rpaSession) expect(t *rapid.T, ws ...rpWant) {
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
	}
}

func (s *rpaSession) protoErr(t *rapid.T) {
	s.wantProtoErrs++
	s.expect(t, rpWant{typ: "protocol_error"})
}

// probe proves nothing was emitted since the last expected line.
func (s *rpaSession) probe(t *rapid.T) {
	s.send(t, `{"cmd":"probe"}`+"\n")
	s.protoErr(t)
}

// rest is what follows a settled gate: the tool's end, then the final
// answer of the second reply and the turn's done.
// rpaRest is the rest of a turn after the gate of call: its tool_end, the
// harness_note of a refusal riding that result, and the answer.
func rpaRest(ok bool, call string) []rpWant {
	rest := []rpWant{{"tool_end", strconv.FormatBool(ok)}}
	if !ok {
		rest = append(rest, rpWant{"harness_note", call})
	}
	return append(rest, rpWant{"token", rpaAnswer}, rpWant{"message_done", rpaAnswer}, rpWant{"done", "stop"}) // the provider finish reason, verbatim
}

func (s *rpaSession) settle(id string) {
	s.settled = append(s.settled, id)
	s.wantSettled++
	s.pending = ""
}

// admit sends a user command while idle and expects the lines up to the
// gate; it returns the lines that follow the gate in the current mode, and
// in ask mode records the pending request. The stdin line is sent with
// extra appended (say a quit right behind it).
func (s *rpaSession) admit(t *rapid.T, extra string) []rpWant {
	s.turns++
	call := fmt.Sprintf("m%d", s.turns)
	sc := &script.Scenario{Replies: []script.Reply{
		{Chunks: []script.Chunk{rpCall(call, rpaTool, `{"path":"x"}`), rpFinish("tool_calls")}},
		{Chunks: []script.Chunk{rpText(rpaAnswer), rpFinish("stop")}},
	}}
	s.cur.Store(script.New(sc, s.clk))
	text := rapid.SampledFrom(rpUserTexts).Draw(t, "text")
	s.send(t, rpUserLine(text, "\n")+extra)
	s.admitted++
	open := []rpWant{{typ: "budget"}}
	for ; s.notes > 0; s.notes-- { // the mode notices queued since the last turn
		open = append(open, rpWant{typ: "harness_note"})
	}
	s.expect(t, append(open, rpWant{"tool_start", rpaTool})...)
	switch s.mode {
	case "ask":
		id := "approve-" + call
		s.pending = id
		s.wantRequests++
		rpaStats.requests.Add(1)
		return []rpWant{{"approval_request", id}}
	case "auto":
		s.wantRuns++
		rpaStats.auto.Add(1)
		return rpaRest(true, call)
	case "readonly":
		rpaStats.readonly.Add(1)
		return rpaRest(false, call)
	}
	panic(s.mode)
}

// ---- actions ----

func (s *rpaSession) actions() map[string]func(*rapid.T) {
	return map[string]func(*rapid.T){
		"1 user":         s.user,
		"2 approveRight": s.approveRight,
		"3 approveWrong": s.approveWrong,
		"4 approveStale": s.approveStale,
		"5 mode":         s.switchMode,
		"6 cancel":       s.cancel,
		"7 probe":        s.probe,
		"":               s.check,
	}
}

func (s *rpaSession) check(t *rapid.T) {
	inFlight := 0
	if s.pending != "" {
		inFlight = 1
	}
	if s.dones != s.admitted-inFlight {
		s.fatalf(t, "%d admitted users (%d in flight) but %d dones", s.admitted, inFlight, s.dones)
	}
	if s.protoErrs != s.wantProtoErrs {
		s.fatalf(t, "%d protocol_error lines, want %d", s.protoErrs, s.wantProtoErrs)
	}
	if s.requests != s.wantRequests || s.settledLines != s.wantSettled {
		s.fatalf(t, "%d approval_request and %d approval_settled lines, want %d and %d",
			s.requests, s.settledLines, s.wantRequests, s.wantSettled)
	}
	if s.requests != s.settledLines+inFlight {
		s.fatalf(t, "%d approval requests, %d settled, %d pending", s.requests, s.settledLines, inFlight)
	}
	if n := s.runs.Load(); n != s.wantRuns {
		s.fatalf(t, "the mutating tool ran %d times, want %d", n, s.wantRuns)
	}
}

// user starts a turn when idle; while a request is pending the turn is in
// flight, so the user gets a protocol_error alone.
func (s *rpaSession) user(t *rapid.T) {
	if s.pending != "" {
		s.send(t, rpUserLine("another", "\n"))
		s.protoErr(t)
		return
	}
	s.expect(t, s.admit(t, "")...)
}

func (s *rpaSession) approveLine(id string, approved bool) string {
	b, _ := json.Marshal(id)
	return fmt.Sprintf(`{"cmd":"approve","approval_id":%s,"approved":%t}`+"\n", b, approved)
}

func (s *rpaSession) approveRight(t *rapid.T) {
	if s.pending == "" {
		t.Skip("no pending approval")
	}
	approved := rapid.Bool().Draw(t, "approved")
	id := s.pending
	s.send(t, s.approveLine(id, approved))
	outcome := core.OutcomeDeclined
	if approved {
		outcome = core.OutcomeApproved
		s.wantRuns++
		rpaStats.approved.Add(1)
	} else {
		rpaStats.declined.Add(1)
	}
	s.settle(id)
	s.expect(t, append([]rpWant{{"approval_settled", id + " " + outcome}}, rpaRest(approved, strings.TrimPrefix(id, "approve-"))...)...)
}

func (s *rpaSession) approveWrong(t *rapid.T) {
	ids := []string{"approve-nope", fmt.Sprintf("approve-m%d", s.turns+1), "m1", "APPROVE-M1", "approve-m1 "}
	if s.pending != "" {
		ids = append(ids, strings.ToUpper(s.pending), s.pending+"x", strings.TrimPrefix(s.pending, "approve-"))
	}
	id := rapid.SampledFrom(ids).Draw(t, "wrongID")
	for _, old := range s.settled {
		if id == old {
			t.Skip("drew a settled id") // that is approveStale's case
		}
	}
	s.send(t, s.approveLine(id, rapid.Bool().Draw(t, "approved")))
	s.protoErr(t)
}

func (s *rpaSession) approveStale(t *rapid.T) {
	if len(s.settled) == 0 {
		t.Skip("nothing settled yet")
	}
	id := rapid.SampledFrom(s.settled).Draw(t, "staleID")
	s.send(t, s.approveLine(id, rapid.Bool().Draw(t, "approved")))
	s.protoErr(t)
}

// switchMode switches the approval mode; a pending request stays pending
// (the next actions show it: it still settles as the model says).
func (s *rpaSession) switchMode(t *rapid.T) {
	mode := rapid.SampledFrom([]string{"auto", "ask", "readonly"}).Draw(t, "mode")
	s.send(t, `{"cmd":"approval_mode","mode":"`+mode+`"}`+"\n")
	s.expect(t, rpWant{"approval_mode", mode})
	if mode != s.mode {
		s.notes++
	}
	s.mode = mode
	if s.pending != "" {
		rpaStats.modeWhilePending.Add(1)
	}
}

func (s *rpaSession) cancel(t *rapid.T) {
	s.send(t, `{"cmd":"cancel"}`+"\n")
	if s.pending == "" {
		s.probe(t) // cancel while idle says nothing
		return
	}
	id := s.pending
	s.settle(id)
	rpaStats.cancelled.Add(1)
	s.expect(t, rpWant{"approval_settled", id + " " + core.OutcomeCancelled}, rpWant{"tool_end", "false"}, rpWant{"harness_note", strings.TrimPrefix(id, "approve-")}, rpWant{"done", wire.StopCancelled})
}

// finish ends the session with quit, EOF or both, possibly sent right
// behind a user command, and possibly with a request pending (which, like
// any request raised after the quit, must settle declined).
func (s *rpaSession) finish(t *rapid.T) {
	var after []rpWant
	extra := ""
	how := rapid.SampledFrom([]string{"quit", "eof", "quitEOF"}).Draw(t, "end")
	if s.pending == "" {
		switch rapid.IntRange(0, 2).Draw(t, "before") {
		case 1: // make a request pending first
			if s.mode != "ask" {
				s.send(t, `{"cmd":"approval_mode","mode":"ask"}`+"\n")
				s.expect(t, rpWant{"approval_mode", "ask"})
				s.mode = "ask"
				s.notes++
			}
			s.expect(t, s.admit(t, "")...)
		case 2: // a user right before the quit or EOF, in the current mode
			if how != "eof" {
				extra = `{"cmd":"quit"}` + "\n"
			}
			after = s.admit(t, extra)
		}
	}
	switch how {
	case "quit":
		if extra == "" {
			s.send(t, `{"cmd":"quit"}`+"\n")
		}
	case "eof":
		s.closeStdin()
	case "quitEOF":
		if extra == "" {
			s.send(t, `{"cmd":"quit"}`+"\n")
		}
		s.closeStdin()
	}
	if s.pending != "" {
		id := s.pending
		s.settle(id)
		rpaStats.quitDeclined.Add(1)
		after = append(after, rpWant{"approval_settled", id + " " + core.OutcomeDeclined})
		after = append(after, rpaRest(false, strings.TrimPrefix(id, "approve-"))...)
	}
	s.expect(t, after...)
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
	if res.code != 0 {
		s.fatalf(t, "exit code %d, want 0", res.code)
	}
	s.waitEnd(t)
	if err := s.checker.End(); err != nil {
		s.fatalf(t, "checker at end of stream: %v", err)
	}
}
