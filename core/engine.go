// Package core is the turn engine: a session holding the transcript, and the
// loop that streams a reply from a provider, runs the tool calls of a
// completed reply, feeds their results back and repeats until the model
// stops. It reports what happens as protocol events but knows nothing of how
// they are framed; the stdio server (core/stdio) does that.
package core

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/openmax/openmax/core/tool"
	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/clock"
)

// Defaults for an Engine's zero fields.
const (
	DefaultMaxIterations = 50
	DefaultContextTokens = 128_000
	// DefaultToolGrace is how long a cancelled tool call may take to return
	// before the turn stops waiting for it. It is longer than run_command
	// needs to kill its process group and collect its output.
	DefaultToolGrace = 5 * time.Second
)

// Engine runs turns. Its fields are configuration and must not change while a
// turn runs; one Engine may serve many sessions.
type Engine struct {
	Provider provider.Provider
	Tools    *tool.Registry
	Model    string
	System   string
	// MaxIterations caps the model requests of one turn: when the reply to
	// the last allowed request asks for tools, they run and the turn ends
	// with stop_reason max_iterations. Zero means DefaultMaxIterations.
	MaxIterations int
	// ContextTokens is the model's window, reported by budget.
	ContextTokens int
	// MaxAgentTokens caps the tokens one turn may spend (prompt plus
	// completion, as the provider reports them, or as estimated when it
	// does not): once reached, the next request is refused before it is
	// sent and the turn ends budget_exhausted. Zero means no cap.
	MaxAgentTokens int
	// OnPanic, when set, receives a panic recovered inside a turn with its
	// stack (the binary logs it to stderr). The turn itself reports error.
	OnPanic func(r any, stack []byte)
	// Mode reports the approval mode for mutating tools: "auto" runs them,
	// "ask" asks Approver first, "readonly" refuses them. Nil means auto.
	Mode func() string
	// Approver answers approval requests in ask mode; nil declines them.
	Approver Approver
	// ToolGrace is how long a tool call may go on once the turn is
	// cancelled. A tool still running then is abandoned: its result is
	// recorded as cancelled and the turn ends; the call's goroutine is left
	// to finish on its own, and until it does the session refuses further
	// calls of that tool. Zero means DefaultToolGrace.
	ToolGrace time.Duration
	// Clock times ToolGrace; nil means the wall clock.
	Clock clock.Clock
}

// Approver settles approval requests.
type Approver interface {
	// Ask registers approval id, calls announce (which emits the request,
	// so an answer can never arrive before the id is known), then waits for
	// the answer and returns the outcome: approved, declined, timed_out, or
	// cancelled when ctx ends first.
	Ask(ctx context.Context, id string, announce func()) string
}

// Approval outcomes.
const (
	OutcomeApproved  = "approved"
	OutcomeDeclined  = "declined"
	OutcomeCancelled = "cancelled"
	OutcomeTimedOut  = "timed_out"
)

func (e *Engine) panicked(r any) {
	if e.OnPanic != nil {
		e.OnPanic(r, debug.Stack())
	}
}

// Session is one conversation: its id and transcript. A session runs at
// most one turn at a time; Messages must not be read while a turn runs.
type Session struct {
	ID string

	mu       sync.Mutex
	messages []provider.Message
	persist  func(provider.Message) error
	// scale corrects the estimate when the server counted more prompt
	// tokens than estimated for the last request.
	scale float64
	// warnedSchemas records that schemas_over_budget went out.
	warnedSchemas bool
	// abandoned holds, by tool name, the end of a call that ignored its
	// cancellation and is still running; closed when it returns.
	abandoned map[string]chan struct{}
}

// NewSession returns an empty session kept in memory only.
func NewSession(id string) *Session { return &Session{ID: id} }

// NewSessionFrom returns a session continuing history. Every message the
// engine adds is handed to persist (when set) before any event reporting it
// goes out; a persist failure ends the turn with an error.
func NewSessionFrom(id string, history []provider.Message, persist func(provider.Message) error) *Session {
	return &Session{ID: id, messages: append([]provider.Message(nil), history...), persist: persist}
}

// Messages returns a copy of the transcript.
func (s *Session) Messages() []provider.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]provider.Message(nil), s.messages...)
}

// WaitAbandoned waits until every tool call the session abandoned on a
// cancel (see Engine.ToolGrace) has returned, or until ctx ends, and
// reports ctx's error then.
func (s *Session) WaitAbandoned(ctx context.Context) error {
	s.mu.Lock()
	var pending []chan struct{}
	for _, ch := range s.abandoned {
		pending = append(pending, ch)
	}
	s.mu.Unlock()
	for _, ch := range pending {
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// append adds messages, writing each through persist first.
func (s *Session) append(m ...provider.Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, msg := range m {
		if s.persist != nil {
			if err := s.persist(msg); err != nil {
				return fmt.Errorf("could not write the session record: %w", err)
			}
		}
		s.messages = append(s.messages, msg)
	}
	return nil
}

// Emit receives the events of a turn in order. It is called from the turn's
// goroutine only.
type Emit func(wire.Event)

// RunTurn runs one admitted turn for text and returns its stop_reason. It
// emits every event of the turn except done, which the caller sends once it
// has released its own per-turn state. A panic anywhere in the turn becomes
// an error event and stop_reason error. Cancelling ctx ends the turn with
// stop_reason cancelled.
func (e *Engine) RunTurn(ctx context.Context, s *Session, text string, emit Emit) (stop string) {
	t := &turn{e: e, s: s, emit: emit}
	defer func() {
		if r := recover(); r != nil {
			e.panicked(r)
			t.emit(wire.Error{Message: fmt.Sprintf("internal error: %v", r)})
			stop = wire.StopError
		}
	}()
	err := s.append(provider.Message{Role: provider.RoleUser, Text: text})
	emit(e.budget(s))
	if err != nil {
		emit(wire.Error{Message: err.Error()})
		return wire.StopError
	}
	return t.run(ctx)
}

// budget estimates how full the window is: about four bytes per token over
// the transcript and the tool schemas sent with every request.
func (e *Engine) budget(s *Session) wire.Budget {
	used := e.estimate(s)
	s.mu.Lock()
	if s.scale > 1 {
		used = int(float64(used)*s.scale + 0.5)
	}
	s.mu.Unlock()
	window := e.ContextTokens
	if window <= 0 {
		window = DefaultContextTokens
	}
	return wire.Budget{UsedTokens: used, ContextTokens: window}
}

// estimate is the token estimate of the next request: about four bytes a
// token over the transcript and the tool schemas sent with every request.
func (e *Engine) estimate(s *Session) int { return e.estimateOf(s.Messages()) }

// estimateOf estimates a request carrying msgs.
func (e *Engine) estimateOf(msgs []provider.Message) int {
	n := len(e.System)
	for _, m := range msgs {
		n += len(m.Text) + len(m.CallID)
		for _, th := range m.Thinking {
			n += len(th.Text)
		}
		for _, c := range m.ToolCalls {
			n += len(c.Name) + len(c.Args)
		}
	}
	for _, sp := range e.Tools.Specs() {
		n += len(sp.Name) + len(sp.Description) + len(sp.Schema)
	}
	return (n + 3) / 4
}

type turn struct {
	e        *Engine
	s        *Session
	emit     Emit
	requests int // model requests made so far
	spent    int // tokens this turn has spent
}

func (t *turn) run(ctx context.Context) string {
	max := t.e.MaxIterations
	if max <= 0 {
		max = DefaultMaxIterations
	}
	for i := 1; ; i++ {
		if ctx.Err() != nil {
			return wire.StopCancelled
		}
		if cap := t.e.MaxAgentTokens; cap > 0 && t.spent >= cap {
			return wire.StopBudgetExhausted
		}
		t.compact()
		r := t.stream(ctx)
		if r.stop != "" {
			return r.stop
		}
		if len(r.calls) == 0 {
			if r.finish == "" {
				return "stop"
			}
			return r.finish
		}
		if stop := t.runTools(ctx, r.calls); stop != "" {
			return stop
		}
		if i >= max {
			return wire.StopMaxIterations
		}
	}
}

// reply is the outcome of one model request.
type reply struct {
	stop   string // set when the turn ends here
	finish string
	calls  []provider.ToolCall
}

// stream sends one request and turns its parts into events and a
// transcript entry, applying the turn guarantees for truncation, stream
// failures and cancellation.
func (t *turn) stream(ctx context.Context) reply {
	t.requests++
	estimate := t.e.estimate(t.s)
	reported := false
	defer func() {
		if !reported {
			t.spent += estimate
		}
	}()
	req := provider.Request{
		Model:    t.e.Model,
		System:   t.e.System,
		Messages: t.s.Messages(),
		Tools:    t.e.Tools.Specs(),
	}
	var (
		text     strings.Builder
		thinking []provider.Thinking
		calls    []provider.ToolCall
		finish   string
		finished bool
		failure  error
	)
	for part := range t.e.Provider.Stream(ctx, req) {
		if failure != nil {
			continue // nothing after an error counts
		}
		switch p := part.(type) {
		case provider.TextDelta:
			if p.Text == "" {
				continue
			}
			text.WriteString(p.Text)
			t.emit(wire.Token{Text: p.Text})
		case provider.ThinkingDelta:
			thinking = addThinking(thinking, p)
			if p.Text != "" {
				t.emit(wire.Thinking{Text: p.Text})
			}
		case provider.ToolCallPart:
			c := p.Call
			if c.ID == "" {
				// Some servers send no id; the wire and the transcript need one.
				c.ID = fmt.Sprintf("call_%d_%d", t.requests, len(calls)+1)
			}
			calls = append(calls, c)
		case provider.Usage:
			reported = true
			t.spent += p.PromptTokens + p.CompletionTokens
			if estimate > 0 {
				t.s.mu.Lock()
				t.s.scale = float64(p.PromptTokens) / float64(estimate)
				t.s.mu.Unlock()
			}
			t.emit(wire.Usage{PromptTokens: p.PromptTokens, CompletionTokens: p.CompletionTokens, CachedTokens: p.CachedTokens})
		case provider.Finish:
			finish, finished = p.Reason, true
		case provider.Error:
			failure = p.Err
			if failure == nil {
				failure = errors.New("provider failed without saying why")
			}
		case provider.Retry:
			if text.Len() > 0 {
				failure = fmt.Errorf("provider retried a reply after sending text (%s)", p.Reason)
				continue
			}
			thinking, calls, finish, finished = nil, nil, "", false
			t.emit(wire.Retry{Attempt: p.Attempt, MaxAttempts: p.MaxAttempts, Reason: p.Reason})
		}
	}
	partial := text.String()
	switch {
	case ctx.Err() != nil:
		// Cancelled: what streamed is closed and kept, as the client saw it.
		if partial != "" {
			if err := t.s.append(provider.Message{Role: provider.RoleAssistant, Text: partial}); err != nil {
				return t.fail(err)
			}
			t.emit(wire.MessageDone{Text: partial})
		}
		return reply{stop: wire.StopCancelled}
	case failure != nil && !errors.Is(failure, provider.ErrIncomplete):
		// The provider reported a failure: the partial text is not kept.
		t.emit(wire.Error{Message: failure.Error()})
		return reply{stop: wire.StopError}
	case failure != nil || !finished:
		// No completion signal: keep what streamed, refuse its tool calls.
		if partial != "" {
			if err := t.s.append(provider.Message{Role: provider.RoleAssistant, Text: partial}); err != nil {
				return t.fail(err)
			}
			t.emit(wire.MessageDone{Text: partial})
		}
		msg := provider.ErrIncomplete.Error()
		if failure != nil {
			msg = failure.Error()
		}
		if len(calls) > 0 {
			msg += fmt.Sprintf("; %d tool call(s) not run", len(calls))
		}
		t.emit(wire.Error{Message: "reply truncated: " + msg})
		return reply{stop: wire.StopTruncated}
	}
	if err := t.s.append(provider.Message{Role: provider.RoleAssistant, Text: partial, Thinking: thinking, ToolCalls: calls}); err != nil {
		return t.fail(err)
	}
	if partial != "" {
		t.emit(wire.MessageDone{Text: partial})
	}
	return reply{finish: finish, calls: calls}
}

// Compaction thresholds, as fractions of the window: past compactAt the
// oldest exchanges are dropped until the estimate is under compactTo.
const (
	compactAt = 0.8
	compactTo = 0.6
)

// compact prunes the oldest exchanges (a user message and everything up to
// the next one) when the next request nears the window, and reports it with
// a compacted receipt. It never drops the latest exchange. The tool schemas
// cost every request the same: when they take half the window or more the
// client is told once (schemas_over_budget), and once they take all that
// compaction could leave, pruning stops.
func (t *turn) compact() {
	window := t.e.ContextTokens
	if window <= 0 {
		window = DefaultContextTokens
	}
	schema := 0
	for _, sp := range t.e.Tools.Specs() {
		schema += (len(sp.Name) + len(sp.Description) + len(sp.Schema) + 3) / 4
	}
	target := int(float64(window) * compactTo)
	if schema*2 >= window && !t.s.warnedSchemas {
		t.s.warnedSchemas = true
		t.emit(wire.SchemasOverBudget{SchemaTokens: schema, BudgetTokens: target})
	}
	before := t.e.estimate(t.s)
	if float64(before) < float64(window)*compactAt || schema >= target {
		return
	}
	t.s.mu.Lock()
	msgs := t.s.messages
	dropped := 0
	for t.e.estimateOf(msgs) > target {
		next := -1
		for i := 1; i < len(msgs); i++ {
			if msgs[i].Role == provider.RoleUser {
				next = i
				break
			}
		}
		if next < 0 {
			break // only the latest exchange is left
		}
		dropped += next
		msgs = msgs[next:]
	}
	t.s.messages = append([]provider.Message(nil), msgs...)
	t.s.mu.Unlock()
	t.emit(wire.Compacted{TokensBefore: before, TokensAfter: t.e.estimate(t.s), CompactedMessages: dropped})
}

// fail ends the turn on a failure of the harness itself.
func (t *turn) fail(err error) reply {
	t.emit(wire.Error{Message: err.Error()})
	return reply{stop: wire.StopError}
}

// addThinking folds a delta into the reasoning blocks: a signature closes
// the current block.
func addThinking(blocks []provider.Thinking, d provider.ThinkingDelta) []provider.Thinking {
	if n := len(blocks); n == 0 || blocks[n-1].Signature != "" {
		blocks = append(blocks, provider.Thinking{})
	}
	b := &blocks[len(blocks)-1]
	b.Text += d.Text
	b.Signature = d.Signature
	return blocks
}

// runTools dispatches the calls of a completed reply in order. It returns a
// stop reason when the turn must end (cancel, crash), else "".
func (t *turn) runTools(ctx context.Context, calls []provider.ToolCall) string {
	for i, c := range calls {
		if ctx.Err() != nil {
			// Every call needs a result in the transcript.
			for _, rest := range calls[i:] {
				if err := t.s.append(provider.Message{Role: provider.RoleTool, CallID: rest.ID, Text: "not run: the turn was cancelled", IsError: true}); err != nil {
					return t.fail(err).stop
				}
			}
			return wire.StopCancelled
		}
		args, argErr := objectArgs(c.Args)
		shown := displayArgs(args)
		t.emit(wire.ToolStart{CallID: c.ID, Name: c.Name, Args: shown})
		var res tool.Result
		var crash any
		switch tl, ok := t.e.Tools.Lookup(c.Name); {
		case argErr != nil:
			res = tool.Failed("invalid arguments: %v", argErr)
		case !ok:
			res = tool.Failed("unknown tool %q", c.Name)
		default:
			if outcome := t.gate(ctx, c, tl, shown); outcome != "" {
				res = tool.Failed("not run: %s", outcome)
				break
			}
			res, crash = t.runTool(ctx, tl, args)
		}
		if ctx.Err() != nil && !res.OK && res.Output == "" {
			res.Output = "cancelled"
		}
		for _, d := range res.Diffs {
			t.emit(wire.Diff{CallID: c.ID, Path: d.Path, Diff: d.Unified, Added: d.Added, Removed: d.Removed})
		}
		perr := t.s.append(provider.Message{Role: provider.RoleTool, CallID: c.ID, Text: res.Output, IsError: !res.OK})
		t.emit(wire.ToolEnd{CallID: c.ID, OK: res.OK, Output: res.Output})
		if perr != nil {
			return t.fail(perr).stop
		}
		if crash != nil {
			for _, rest := range calls[i+1:] {
				if err := t.s.append(provider.Message{Role: provider.RoleTool, CallID: rest.ID, Text: "not run: an earlier tool crashed", IsError: true}); err != nil {
					return t.fail(err).stop
				}
			}
			t.emit(wire.Error{Message: fmt.Sprintf("tool %s crashed: %v", c.Name, crash)})
			return wire.StopError
		}
	}
	if ctx.Err() != nil {
		return wire.StopCancelled
	}
	return ""
}

// gate applies the approval mode to a mutating tool call, whose arguments
// are shown as args. It returns why the call must not run, or "" to run it.
func (t *turn) gate(ctx context.Context, c provider.ToolCall, tl tool.Tool, args json.RawMessage) string {
	m, ok := tl.(tool.Mutator)
	if !ok || !m.Mutating() {
		return ""
	}
	mode := "auto"
	if t.e.Mode != nil {
		mode = t.e.Mode()
	}
	switch mode {
	case "auto":
		return ""
	case "readonly":
		return fmt.Sprintf("%s changes the project, and the approval mode is readonly", c.Name)
	case "ask":
	default:
		// A mode openmax does not know (a hand-edited settings file, say)
		// fails closed: nothing runs without the user's word.
		return fmt.Sprintf("%s changes the project, and the approval mode %q is not one openmax knows (auto, ask, readonly), so it is refused", c.Name, mode)
	}
	id := "approve-" + c.ID
	announce := func() {
		t.emit(wire.ApprovalRequest{
			ApprovalID: id, Name: c.Name, Reason: "gate",
			Summary: fmt.Sprintf("%s wants to run", c.Name), Detail: string(args),
		})
	}
	outcome := OutcomeDeclined
	if t.e.Approver != nil {
		outcome = t.e.Approver.Ask(ctx, id, announce)
	} else {
		announce()
	}
	t.emit(wire.ApprovalSettled{ApprovalID: id, Outcome: outcome})
	if outcome == OutcomeApproved {
		return ""
	}
	if outcome == OutcomeTimedOut {
		return "nobody answered the approval request in time"
	}
	return fmt.Sprintf("the call was %s", outcome)
}

// runTool runs one call of tl. The call runs on a goroutine of its own so
// that a cancelled turn never waits on a tool that ignores its context
// beyond the grace period (Engine.ToolGrace): such a call is abandoned and
// reported cancelled. A tool whose abandoned call is still running is not
// run again in this session, so at most one goroutine per tool is ever left
// behind.
func (t *turn) runTool(ctx context.Context, tl tool.Tool, args json.RawMessage) (res tool.Result, crash any) {
	name := tl.Spec().Name
	t.s.mu.Lock()
	prev := t.s.abandoned[name]
	t.s.mu.Unlock()
	if prev != nil {
		select {
		case <-prev:
		default:
			return tool.Failed("not run: an earlier %s call ignored its cancellation and is still running", name), nil
		}
	}
	type outcome struct {
		res   tool.Result
		crash any
	}
	ended := make(chan outcome, 1)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		o := outcome{}
		defer func() {
			if r := recover(); r != nil {
				t.e.panicked(r)
				o = outcome{tool.Failed("tool crashed: %v", r), r}
			}
			ended <- o
		}()
		o.res = tl.Run(ctx, args)
	}()
	select {
	case o := <-ended:
		return o.res, o.crash
	case <-ctx.Done():
	}
	grace := t.e.ToolGrace
	if grace <= 0 {
		grace = DefaultToolGrace
	}
	c := t.e.Clock
	if c == nil {
		c = clock.Real{}
	}
	// A wait of its own, not tied to ctx (which is already done).
	waitCtx, stop := context.WithCancel(context.Background())
	defer stop()
	timedOut := make(chan struct{})
	go func() {
		if clock.Sleep(waitCtx, c, grace) == nil {
			close(timedOut)
		}
	}()
	select {
	case o := <-ended:
		return o.res, o.crash
	case <-timedOut:
	}
	t.s.mu.Lock()
	if t.s.abandoned == nil {
		t.s.abandoned = map[string]chan struct{}{}
	}
	t.s.abandoned[name] = finished
	t.s.mu.Unlock()
	return tool.Failed("cancelled: %s did not stop within %v of the cancel and was abandoned", name, grace), nil
}

// Display caps for a call's arguments on the wire (tool_start args,
// approval_request detail): past maxShownArgs bytes, every member longer
// than maxShownMember is cut.
const (
	maxShownArgs   = 1 << 20
	maxShownMember = 64 << 10
)

// displayArgs is args (a compact JSON object) as shown to the client: as
// is up to maxShownArgs bytes, else with each member longer than
// maxShownMember cut, a string to its first maxShownMember bytes followed by
// a note, any other value to a string saying how long it was. The tool
// itself always gets the whole arguments.
func displayArgs(args json.RawMessage) json.RawMessage {
	if len(args) <= maxShownArgs {
		return args
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return args
	}
	var buf bytes.Buffer
	buf.WriteByte('{')
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return args
		}
		key, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return args
		}
		if buf.Len() > 1 {
			buf.WriteByte(',')
		}
		k, _ := json.Marshal(key)
		buf.Write(k)
		buf.WriteByte(':')
		if len(raw) <= maxShownMember {
			buf.Write(raw)
			continue
		}
		note := fmt.Sprintf("[cut for display: %d bytes of JSON]", len(raw))
		var str string
		if json.Unmarshal(raw, &str) == nil {
			cut := strings.ToValidUTF8(str[:maxShownMember], "")
			note = cut + fmt.Sprintf("\n[cut for display: %d bytes, showing the first %d]", len(str), len(cut))
		}
		v, _ := json.Marshal(note)
		buf.Write(v)
	}
	buf.WriteByte('}')
	return buf.Bytes()
}

// objectArgs returns the call's arguments as a JSON object. Missing
// arguments are the empty object; anything else that is not an object is an
// error, with {} standing in for display.
func objectArgs(raw json.RawMessage) (json.RawMessage, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 {
		return json.RawMessage("{}"), nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &obj); err != nil || obj == nil {
		if err == nil {
			err = errors.New("arguments are null, not an object")
		}
		return json.RawMessage("{}"), err
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, trimmed); err != nil {
		return json.RawMessage("{}"), err
	}
	return buf.Bytes(), nil
}
