// Package view renders an openmax-stdio/6 stdout transcript for people: the
// hello, each turn with its prompt, the reply as wrapped paragraphs, thinking
// marked apart, tool calls with their arguments and results, diffs,
// approvals, retries with their waits, errors, truncation and each turn's
// stop reason, then a summary. It reads live streams as well as the
// transcripts `openmax replay` writes (which end with a line "exit: N"),
// line by line, so input of any length streams through it.
//
// The event set is not restated here: every line is decoded into the Go type
// core/wire defines for its type and checked with wire.Checker, so a line the
// contract forbids is rendered and called out. Lines that are not wire JSON
// are shown as such.
package view

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/openmax/openmax/core/wire"
)

// Options shapes a render.
type Options struct {
	// Color writes ANSI colours; see IsTerminal to decide it.
	Color bool
	// Virtual marks retry waits as virtual: the transcript comes from a
	// replay, where waits pass on a simulated clock.
	Virtual bool
	// Stdin, when set, is the client's stdin (JSONL commands), used to show
	// the prompt of each turn and the command a protocol_error answers.
	// Without it turns are shown by their boundaries only.
	Stdin io.Reader
	// Width is the column streamed text wraps at: 0 means 80, a negative
	// value never wraps.
	Width int
}

// StopCount is how many turns ended with one stop_reason.
type StopCount struct {
	Reason string
	N      int
}

// Summary is what a render counted.
type Summary struct {
	SessionID string
	Version   string
	Lines     int // input lines, blank ones included

	Turns   int         // admitted turns (each opens with budget)
	Stops   []StopCount // every done's stop_reason, in order of first appearance
	Refused int         // user commands answered by done refused

	Retries int
	// Wait is the sum of the retry waits the wire states (the server's
	// Retry-After, carried in the reason); UnknownWaits counts retries
	// whose backoff the wire does not carry.
	Wait         time.Duration
	UnknownWaits int

	PromptTokens, CompletionTokens, CachedTokens int // summed over usage lines

	ToolCalls, ToolFailures int
	Approvals               int // approval_request lines
	Errors                  int // error lines
	ProtocolErrors          int

	NotWire    int // lines that are not wire JSON (other than the exit line)
	TooLong    int // lines over the 8 MiB cap, skipped
	Violations int // lines and endings wire.Checker rejects

	Exit    int // the replay's exit code, when HasExit
	HasExit bool
}

// Stop returns how many turns ended with reason.
func (s Summary) Stop(reason string) int {
	for _, sc := range s.Stops {
		if sc.Reason == reason {
			return sc.N
		}
	}
	return 0
}

// Render writes a human view of the transcript read from r to w and returns
// what it counted. It reads and writes one line at a time, flushing after
// each, so it can follow a live stream. Only a failure to read r or to
// write w is an error; bad lines are rendered and counted.
func Render(w io.Writer, r io.Reader, opts Options) (Summary, error) {
	v := newRenderer(w, opts)
	lr := wire.NewLineReader(r, wire.MaxLine)
	for {
		line, err := lr.Next()
		var tooLong *wire.LineTooLongError
		switch {
		case errors.Is(err, io.EOF):
			v.end()
			if err := v.out.Flush(); err != nil {
				return v.sum, fmt.Errorf("view: write: %w", err)
			}
			return v.sum, nil
		case errors.As(err, &tooLong):
			v.tooLong(tooLong.Size)
		case err != nil:
			v.endStream()
			v.out.Flush()
			return v.sum, fmt.Errorf("view: read transcript: %w", err)
		default:
			v.line(line)
		}
		if err := v.out.Flush(); err != nil {
			return v.sum, fmt.Errorf("view: write: %w", err)
		}
	}
}

const (
	maxArgs     = 400 // bytes of a tool call's arguments shown
	maxOutLines = 10  // lines of a tool result, note or detail shown
	maxDiff     = 40  // lines of a diff shown
	maxRaw      = 200 // bytes of a line that is not wire JSON shown
)

type streamKind int

const (
	noStream streamKind = iota
	textStream
	thinkingStream
)

type renderer struct {
	out   *bufio.Writer
	opt   Options
	st    style
	width int
	sum   Summary

	chk       *wire.Checker
	checking  bool
	helloSeen bool

	turn       int
	inTurn     bool
	stream     *para
	streamKind streamKind
	streamed   bool // reply text was streamed since the last message_done
	thought    bool // thinking was shown for the current attempt
	tools      map[string]string

	prompts  *prompts
	stdinMsg bool // the stdin read failure was reported
}

func newRenderer(w io.Writer, opt Options) *renderer {
	width := opt.Width
	if width == 0 {
		width = 80
	}
	return &renderer{
		out: bufio.NewWriterSize(w, 32<<10), opt: opt, st: newStyle(opt.Color), width: width,
		chk: wire.NewChecker(wire.Strict()), checking: true, tools: map[string]string{},
		prompts: newPrompts(opt.Stdin),
	}
}

// ---- dispatch ----

var exitLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^exit: (-?\d+)$`) })

func (v *renderer) line(b []byte) {
	v.sum.Lines++
	var verdict error
	if v.checking {
		verdict = v.chk.Line(b)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return
	}
	if m := exitLine().FindSubmatch(b); m != nil {
		v.endStream()
		code, _ := strconv.Atoi(string(m[1]))
		v.sum.Exit, v.sum.HasExit = code, true
		c := v.st.green
		if code != 0 {
			c = v.st.red
		}
		v.printf("%s\n", v.st.paint(c, fmt.Sprintf("exit status %d", code)))
		return
	}
	val, typ, why := decode(b)
	if why != "" {
		v.notWire(b, why)
		return
	}
	if !v.helloSeen && typ != "hello" && v.checking {
		v.checking = false
		v.note(v.st.yellow, "the transcript does not start with hello: contract checks are off")
		verdict = nil
	}
	if typ == "hello" {
		v.helloSeen = true
	}
	v.render(val)
	if verdict != nil {
		v.sum.Violations++
		v.note(v.st.yellow, "⚠ not allowed here by the contract: "+verdict.Error())
	}
}

// decode parses one line into the core/wire type registered for its
// "type", or says why it is not a wire line.
func decode(b []byte) (any, string, string) {
	if !utf8.Valid(b) {
		return nil, "", "not valid UTF-8"
	}
	if !json.Valid(b) {
		return nil, "", "not JSON"
	}
	var head struct {
		Type json.RawMessage `json:"type"`
	}
	if b = bytes.TrimSpace(b); b[0] != '{' || json.Unmarshal(b, &head) != nil {
		return nil, "", "not a JSON object"
	}
	if head.Type == nil {
		return nil, "", `no "type" field`
	}
	var typ string
	if json.Unmarshal(head.Type, &typ) != nil {
		return nil, "", `"type" is not a string`
	}
	d, ok := wire.EventDef(typ)
	if !ok {
		d, ok = wire.LineDef(typ)
	}
	if !ok {
		return nil, typ, fmt.Sprintf("unknown type %q", clip(typ, 40))
	}
	p := reflect.New(reflect.TypeOf(d.Proto))
	if err := json.Unmarshal(b, p.Interface()); err != nil {
		return nil, typ, fmt.Sprintf("a %s line with bad fields: %v", typ, err)
	}
	return p.Elem().Interface(), typ, ""
}

func (v *renderer) render(val any) {
	if _, ok := val.(wire.Token); !ok {
		if _, ok := val.(wire.Thinking); !ok {
			v.endStream()
		}
	}
	switch e := val.(type) {
	case wire.Hello:
		v.hello(e)
	case wire.Transcript:
		v.transcript(e)
	case wire.ProtocolError:
		v.protocolError(e)
	case wire.ApprovalModeAck:
		v.note(v.st.blue, fmt.Sprintf("%s⚙ approval mode is now %s (saved for the project)", v.ind(), clean(e.Mode)))
	case wire.Budget:
		v.openTurn(e)
	case wire.Token:
		v.text(e.Text)
	case wire.Thinking:
		v.thinking(e.Text)
	case wire.MessageDone:
		v.messageDone(e)
	case wire.Usage:
		v.usage(e)
	case wire.ToolStart:
		v.toolStart(e)
	case wire.ToolEnd:
		v.toolEnd(e)
	case wire.Diff:
		v.diff(e)
	case wire.HarnessNote:
		where := "before the next prompt"
		if e.CallID != "" {
			where = "with the result of " + v.callName(e.CallID)
		}
		v.note(v.st.dim, v.ind()+"ℹ the harness told the model ("+clean(where)+"):")
		v.block(v.ind()+"  ", v.st.dim, e.Text, maxOutLines)
	case wire.Retry:
		v.retry(e)
	case wire.ApprovalRequest:
		v.approvalRequest(e)
	case wire.ApprovalSettled:
		v.approvalSettled(e)
	case wire.Refrozen:
		v.refrozen(e)
	case wire.SchemasOverBudget:
		v.wrapped(v.ind()+"⚠ ", v.ind()+"  ", v.st.yellow, fmt.Sprintf("the tool schemas cost %s tokens per request against a budget of %s: compaction runs early",
			count(e.SchemaTokens), count(e.BudgetTokens)))
	case wire.Compacted:
		v.note(v.st.dim, fmt.Sprintf(v.ind()+"⇣ compacted: %s folded away, %s → %s tokens",
			plural(e.CompactedMessages, "message"), count(e.TokensBefore), count(e.TokensAfter)))
	case wire.HookFailed:
		v.wrapped(v.ind()+"⚠ ", v.ind()+"  ", v.st.yellow, fmt.Sprintf("hook %s (%s) did not run: %s", e.Hook, e.Event, e.Detail))
	case wire.TurnRefused:
		v.turnRefused(e)
	case wire.Error:
		v.sum.Errors++
		v.wrapped(v.ind()+"✗ error: ", v.ind()+"  ", v.st.red, e.Message)
		if v.streamed {
			v.note(v.st.dim, v.ind()+"  (the reply text above ended in this error: it is not kept)")
		}
		v.streamed = false
	case wire.Done:
		v.done(e)
	default:
		v.generic(val)
	}
}

// generic shows a line of a type this renderer has no layout for yet, field
// by field as core/wire defines them.
func (v *renderer) generic(val any) {
	b, _ := json.Marshal(val)
	name := fmt.Sprintf("%T", val)
	if e, ok := val.(wire.Event); ok {
		name = e.EventType()
	} else if l, ok := val.(wire.Line); ok {
		name = l.LineType()
	}
	v.note(v.st.dim, fmt.Sprintf("  • %s %s", name, clip(clean(string(b)), maxArgs)))
}

// ---- lines outside turns ----

func (v *renderer) hello(h wire.Hello) {
	v.sum.SessionID, v.sum.Version = h.SessionID, h.Version
	v.printf("%s %s · %s · session %s\n", v.st.paint(v.st.bold, "openmax"), clean(h.Version), clean(h.Proto), clean(h.SessionID))
	v.printf("%s\n", v.st.paint(v.st.dim, "project "+clean(h.Project)))
	if h.Proto != wire.Proto {
		v.note(v.st.yellow, fmt.Sprintf("⚠ this view knows %s; the session speaks %s", wire.Proto, clean(h.Proto)))
	}
	if h.Continued {
		v.note(v.st.dim, "(a continued session: its history follows)")
	}
}

func (v *renderer) transcript(t wire.Transcript) {
	v.printf("\n%s\n", v.rule("earlier in this session"))
	for _, m := range t.Messages {
		v.speaker(m.Role)
		v.wrapped("  ", "  ", "", m.Content)
	}
	if t.Truncated {
		v.note(v.st.dim, "(some of this history was cut to fit the line)")
	}
}

func (v *renderer) speaker(role string) {
	switch role {
	case "user":
		v.printf("%s\n", v.st.paint(v.st.bold+v.st.cyan, "you"))
	case "assistant":
		v.printf("%s\n", v.st.paint(v.st.bold+v.st.green, "assistant"))
	default:
		v.printf("%s\n", v.st.paint(v.st.bold, clean(role)))
	}
}

func (v *renderer) protocolError(e wire.ProtocolError) {
	v.sum.ProtocolErrors++
	in := v.ind()
	n, ok := lineRef(e.Message)
	if ok && v.prompts != nil {
		if c, found := v.prompts.answered(n); found {
			if c.name == "user" {
				v.printf("%s%s %s\n", in, v.st.paint(v.st.bold+v.st.cyan, "you"), v.st.paint(v.st.dim, fmt.Sprintf("(stdin line %d)", n)))
				v.wrapped(in+"  ", in+"  ", "", c.text)
				v.wrapped(in+"⚠ not taken: ", in+"  ", v.st.yellow, e.Message)
				return
			}
			v.wrapped(in+"⚠ protocol_error: ", in+"  ", v.st.yellow, e.Message)
			v.note(v.st.dim, in+"  in answer to: "+clip(clean(c.raw), maxRaw))
			return
		}
	}
	v.wrapped(in+"⚠ protocol_error: ", in+"  ", v.st.yellow, e.Message)
}

// ind is the indentation of a line: lines inside a turn are indented.
func (v *renderer) ind() string {
	if v.inTurn {
		return "  "
	}
	return ""
}

func (v *renderer) refrozen(r wire.Refrozen) {
	list := func(s []string) string {
		if len(s) == 0 {
			return "none"
		}
		return clean(strings.Join(s, ", "))
	}
	v.note(v.st.blue, "↺ reloaded")
	v.wrapped("  tools:  ", "          ", v.st.dim, list(r.Tools))
	v.wrapped("  skills: ", "          ", v.st.dim, list(r.Skills))
	for _, c := range r.Changes {
		v.wrapped("  • ", "    ", "", c)
	}
}

// ---- turns ----

func (v *renderer) openTurn(b wire.Budget) {
	if v.inTurn { // a budget inside a turn: the checker says so; show it anyway
		v.budget(b)
		return
	}
	v.turn++
	v.sum.Turns++
	v.inTurn, v.thought, v.streamed = true, false, false
	clear(v.tools)
	v.printf("\n%s\n", v.rule(fmt.Sprintf("turn %d", v.turn)))
	if v.prompts != nil {
		if c, ok := v.prompts.nextUser(); ok {
			v.speaker("user")
			v.wrapped("  ", "  ", "", c.text)
		} else {
			v.stdinEnded()
		}
	}
	v.budget(b)
}

func (v *renderer) budget(b wire.Budget) {
	s := fmt.Sprintf("  · context %s of %s tokens", count(b.UsedTokens), count(b.ContextTokens))
	if b.ContextTokens > 0 {
		s += fmt.Sprintf(" (%d%%)", b.UsedTokens*100/b.ContextTokens)
	}
	v.note(v.st.dim, s)
}

func (v *renderer) stdinEnded() {
	if v.stdinMsg {
		return
	}
	v.stdinMsg = true
	if err := v.prompts.err; err != nil {
		v.note(v.st.yellow, "  (stdin could not be read: "+clean(err.Error())+")")
		return
	}
	v.note(v.st.dim, "  (stdin holds no user command for this turn)")
}

func (v *renderer) text(s string) {
	if v.streamKind != textStream {
		v.endStream()
		v.stream = newPara(v.out, "  ", "  ", "", "", v.width)
		if v.streamed {
			// The reply goes on after a line that cut into it.
			v.printf("%s %s\n", v.st.paint(v.st.bold+v.st.green, "assistant"), v.st.paint(v.st.dim, "(continued)"))
			v.stream.started = true
		} else {
			v.speaker("assistant")
		}
		v.streamKind = textStream
	}
	v.streamed = true
	v.stream.write(s)
}

func (v *renderer) thinking(s string) {
	if v.streamKind != thinkingStream {
		v.endStream()
		v.note(v.st.dim, "  thinking")
		v.stream = newPara(v.out, v.st.paint(v.st.dim, "  ┊ "), v.st.paint(v.st.dim, "  ┊ "), v.st.dim, v.st.reset, v.width)
		v.streamKind = thinkingStream
	}
	v.thought = true
	v.stream.write(s)
}

func (v *renderer) endStream() {
	if v.stream != nil {
		v.stream.close()
	}
	v.stream, v.streamKind = nil, noStream
}

func (v *renderer) messageDone(m wire.MessageDone) {
	if !v.streamed && m.Text != "" {
		v.speaker("assistant")
		v.wrapped("  ", "  ", "", m.Text)
	}
	v.streamed, v.thought = false, false
}

func (v *renderer) usage(u wire.Usage) {
	v.sum.PromptTokens += u.PromptTokens
	v.sum.CompletionTokens += u.CompletionTokens
	s := fmt.Sprintf("  · tokens: %s prompt, %s completion", count(u.PromptTokens), count(u.CompletionTokens))
	if u.CachedTokens != nil {
		v.sum.CachedTokens += *u.CachedTokens
		s += fmt.Sprintf(", %s cached", count(*u.CachedTokens))
	}
	v.note(v.st.dim, s)
}

func (v *renderer) callName(id string) string {
	if name, ok := v.tools[id]; ok {
		return name + " (" + clean(id) + ")"
	}
	return "call " + clean(id)
}

func (v *renderer) toolStart(t wire.ToolStart) {
	v.sum.ToolCalls++
	v.tools[t.CallID] = clean(t.Name)
	args := string(t.Args)
	var buf bytes.Buffer
	if json.Compact(&buf, t.Args) == nil {
		args = buf.String()
	}
	v.printf("  %s %s %s\n", v.st.paint(v.st.magenta, "⚙"), v.st.paint(v.st.bold, clean(t.Name)), v.st.paint(v.st.dim, clip(clean(args), maxArgs)))
}

func (v *renderer) toolEnd(t wire.ToolEnd) {
	mark, c := "✓", v.st.green
	if !t.OK {
		v.sum.ToolFailures++
		mark, c = "✗ failed:", v.st.red
	}
	v.printf("  %s %s\n", v.st.paint(c, mark), v.callName(t.CallID))
	v.block("    │ ", v.st.dim, t.Output, maxOutLines)
}

func (v *renderer) diff(d wire.Diff) {
	v.printf("  %s %s %s\n", v.st.paint(v.st.magenta, "±"), v.st.paint(v.st.bold, clean(d.Path)),
		v.st.paint(v.st.dim, fmt.Sprintf("(+%d −%d)", d.Added, d.Removed)))
	shown, more := lines(d.Diff, maxDiff)
	for _, l := range shown {
		c := v.st.dim
		switch {
		case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"):
			c = v.st.bold
		case strings.HasPrefix(l, "+"):
			c = v.st.green
		case strings.HasPrefix(l, "-"):
			c = v.st.red
		case strings.HasPrefix(l, "@@"):
			c = v.st.cyan
		}
		v.printf("    %s\n", v.st.paint(c, clean(l)))
	}
	if more > 0 {
		v.note(v.st.dim, fmt.Sprintf("    … %s more", plural(more, "line")))
	}
}

var serverWait = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\(server asked to wait ([0-9][0-9a-zµ.]*)\)`) })

func (v *renderer) retry(r wire.Retry) {
	v.sum.Retries++
	if v.thought {
		v.note(v.st.dim, "  (the thinking above is void: the reply starts over)")
		v.thought = false
	}
	virtual := ""
	if v.opt.Virtual {
		virtual = " (virtual)"
	}
	wait := "after a backoff wait" + virtual
	if m := serverWait().FindStringSubmatch(r.Reason); m != nil {
		if d, err := time.ParseDuration(m[1]); err == nil {
			v.sum.Wait += d
			wait = "after waiting " + d.String() + virtual + ", as the server asked"
		}
	}
	if strings.HasPrefix(wait, "after a backoff") {
		v.sum.UnknownWaits++
	}
	v.printf("  %s\n", v.st.paint(v.st.yellow, fmt.Sprintf("↻ retry: attempt %d of %d goes out %s", r.Attempt, r.MaxAttempts, wait)))
	v.wrapped("    because: ", "    ", v.st.dim, r.Reason)
}

func (v *renderer) approvalRequest(a wire.ApprovalRequest) {
	v.sum.Approvals++
	v.printf("  %s %s %s\n", v.st.paint(v.st.magenta+v.st.bold, "? approval needed:"), v.st.paint(v.st.bold, clean(a.Name)),
		v.st.paint(v.st.dim, "("+clean(a.ApprovalID)+")"))
	if a.Summary != "" {
		v.wrapped("    ", "    ", "", a.Summary)
	}
	if len(a.Env) > 0 {
		// Its own line, never clipped: it is a credential grant.
		v.printf("    %s %s\n", v.st.paint(v.st.yellow, "env it receives:"), clean(strings.Join(a.Env, ", ")))
	}
	if a.Detail != "" {
		v.block("    │ ", v.st.dim, a.Detail, maxOutLines)
	}
	if a.Reason == "unapproved_source" {
		v.wrapped("    ", "    ", v.st.yellow, fmt.Sprintf("no human has approved its source %s (sha %s); a human approves it with: openmax --approve %s",
			a.SourcePath, a.SourceSHA, a.SourcePath))
	}
}

func (v *renderer) approvalSettled(a wire.ApprovalSettled) {
	c := v.st.yellow
	if a.Outcome == "approved" {
		c = v.st.green
	}
	v.printf("  %s %s\n", v.st.paint(c, "→ "+clean(a.Outcome)), v.st.paint(v.st.dim, "("+clean(a.ApprovalID)+")"))
}

func (v *renderer) turnRefused(t wire.TurnRefused) {
	v.wrapped("  ↩ ", "    ", v.st.yellow, fmt.Sprintf("hook %s refused the completion (refusal %d, %d left); the model goes on, told:",
		t.Hook, t.Continuation+1, t.ContinuationsLeft))
	v.wrapped("    ", "    ", "", t.Reason)
}

// stopDoc is the first sentence of the contract's description of a stop
// reason, or what a provider finish reason is.
func stopDoc(reason string) string {
	for _, s := range wire.StopReasons {
		if s.Name == reason {
			doc, _, _ := strings.Cut(s.Doc, ". ")
			return strings.TrimSuffix(doc, ".")
		}
	}
	return "the model's finish reason"
}

func (v *renderer) done(d wire.Done) {
	v.countStop(d.StopReason)
	c := v.st.green
	switch d.StopReason {
	case wire.StopTruncated, wire.StopError:
		c = v.st.red
	case wire.StopMaxIterations, wire.StopBudgetExhausted, wire.StopUnverified, wire.StopBlocked, wire.StopCancelled, wire.StopRefused:
		c = v.st.yellow
	}
	what := "turn " + strconv.Itoa(v.turn)
	if !v.inTurn {
		what = "command"
		if d.StopReason == wire.StopRefused {
			v.sum.Refused++
		}
	}
	v.inTurn = false
	v.printf("%s %s\n", v.st.paint(c+v.st.bold, "■ "+what+" ended: "+clean(d.StopReason)), v.st.paint(v.st.dim, "— "+stopDoc(d.StopReason)))
}

func (v *renderer) countStop(reason string) {
	for i := range v.sum.Stops {
		if v.sum.Stops[i].Reason == reason {
			v.sum.Stops[i].N++
			return
		}
	}
	v.sum.Stops = append(v.sum.Stops, StopCount{Reason: reason, N: 1})
}

// ---- bad lines and the end ----

func (v *renderer) notWire(b []byte, why string) {
	v.endStream()
	v.sum.NotWire++
	v.printf("%s %s\n", v.st.paint(v.st.yellow, fmt.Sprintf("? line %d is not a wire line (%s):", v.sum.Lines, why)),
		v.st.paint(v.st.dim, clip(clean(strings.ToValidUTF8(string(b), "\uFFFD")), maxRaw)))
}

func (v *renderer) tooLong(size int64) {
	v.sum.Lines++
	v.sum.TooLong++
	if v.checking {
		v.chk.Line(nil) // keep the checker's line numbers in step
	}
	v.endStream()
	v.printf("%s\n", v.st.paint(v.st.yellow, fmt.Sprintf("? line %d is %s bytes, over the %d MiB cap: cut, not shown", v.sum.Lines, count(int(size)), wire.MaxLine>>20)))
}

func (v *renderer) end() {
	v.endStream()
	if v.sum.Lines == 0 {
		v.note(v.st.dim, "(an empty transcript)")
	} else if v.checking {
		if err := v.chk.End(); err != nil {
			v.sum.Violations++
			v.note(v.st.yellow, "⚠ at the end, by the contract: "+err.Error())
		}
	}
	v.summary()
}

func (v *renderer) summary() {
	s := v.sum
	v.printf("\n%s\n", v.rule("summary"))
	row := func(k, val string) { v.printf("%s %s\n", v.st.paint(v.st.bold, fmt.Sprintf("%-10s", k)), val) }
	turns := plural(s.Turns, "turn")
	var parts []string
	for _, sc := range s.Stops {
		if sc.Reason != wire.StopRefused {
			parts = append(parts, fmt.Sprintf("%s %s", count(sc.N), clean(sc.Reason)))
		}
	}
	if len(parts) > 0 {
		turns += " · ended " + strings.Join(parts, ", ")
	}
	if s.Refused > 0 {
		turns += fmt.Sprintf(" · %s refused", plural(s.Refused, "command"))
	}
	row("turns", turns)
	retries := plural(s.Retries, "retry")
	if s.Retries != 1 {
		retries = count(s.Retries) + " retries"
	}
	if s.Retries > 0 {
		virtual := ""
		if v.opt.Virtual {
			virtual = "virtual "
		}
		switch {
		case s.UnknownWaits == 0:
			retries += fmt.Sprintf(" · %s of %swait", s.Wait, virtual)
		case s.UnknownWaits == s.Retries:
			retries += " · backoff waits, their length not on the wire"
		default:
			retries += fmt.Sprintf(" · %s of %swait, plus %s not on the wire", s.Wait, virtual, plural(s.UnknownWaits, "backoff wait"))
		}
	}
	row("retries", retries)
	if s.PromptTokens+s.CompletionTokens > 0 {
		tok := fmt.Sprintf("%s prompt, %s completion", count(s.PromptTokens), count(s.CompletionTokens))
		if s.CachedTokens > 0 {
			tok += fmt.Sprintf(", %s cached", count(s.CachedTokens))
		}
		row("tokens", tok)
	} else {
		row("tokens", "not reported")
	}
	if s.ToolCalls > 0 || s.Approvals > 0 {
		row("tools", fmt.Sprintf("%s (%s failed) · %s", plural(s.ToolCalls, "call"), count(s.ToolFailures), plural(s.Approvals, "approval request")))
	}
	row("errors", fmt.Sprintf("%s · %s", plural(s.Errors, "error line"), plural(s.ProtocolErrors, "protocol_error")))
	if s.NotWire+s.TooLong+s.Violations > 0 {
		row("input", fmt.Sprintf("%s not wire JSON · %s over the cap · %s", plural(s.NotWire, "line"), plural(s.TooLong, "line"),
			plural(s.Violations, "contract violation")))
	}
	if s.HasExit {
		row("exit", strconv.Itoa(s.Exit))
	}
}

// ---- writing ----

func (v *renderer) printf(format string, args ...any) { fmt.Fprintf(v.out, format, args...) }

// note writes one line in colour c.
func (v *renderer) note(c, s string) {
	v.endStream()
	v.printf("%s\n", v.st.paint(c, s))
}

// wrapped writes untrusted text as a wrapped paragraph.
func (v *renderer) wrapped(first, rest, c, s string) {
	p := newPara(v.out, v.st.paint(c, first), rest, c, v.st.reset, v.width)
	if c == "" {
		p.off = ""
	}
	if strings.TrimSpace(s) == "" {
		what := "(empty)"
		if s != "" {
			what = "(only whitespace)"
		}
		v.printf("%s%s\n", v.st.paint(c, first), v.st.paint(v.st.dim, what))
		return
	}
	p.write(s)
	p.close()
}

// block writes untrusted multi-line text verbatim, each line prefixed,
// showing at most max lines.
func (v *renderer) block(prefix, c, s string, max int) {
	shown, more := lines(s, max)
	for _, l := range shown {
		v.printf("%s%s\n", v.st.paint(c, prefix), v.st.paint(c, clip(clean(l), 4*maxArgs)))
	}
	if more > 0 {
		v.printf("%s\n", v.st.paint(v.st.dim, fmt.Sprintf("%s… %s more", prefix, plural(more, "line"))))
	}
}

// rule is a section heading: "── title ────".
func (v *renderer) rule(title string) string {
	w := v.width
	if w <= 0 || w > 80 {
		w = 80
	}
	head := "── " + title + " "
	if n := w - utf8.RuneCountInString(head); n > 0 {
		head += strings.Repeat("─", n)
	}
	return v.st.paint(v.st.bold, head)
}
