package codexbackend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openmax/openmax/core"
	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/provider/codex"
)

// interruptWait bounds how long a cancelled turn waits for codex to say
// the turn ended before it reports the cancel anyway (codex answers
// within milliseconds).
const interruptWait = 10 * time.Second

// Tool names codex's own tool items are reported under (tool_start name).
const (
	ToolCommand    = "codex_command"
	ToolFileChange = "codex_file_change"
	ToolMCP        = "codex_mcp"
)

// turnRun is one turn on one thread: the loop that turns codex's events
// into the turn's events, and the openmax tool calls codex makes during
// it, run on the loop's goroutine so events and tools stay in order.
type turnRun struct {
	b *Backend
	h *core.TurnHost
	s *codex.Session

	events   chan routed
	gone     chan struct{} // the app-server ended
	goneOnce sync.Once
	finished chan struct{} // the loop returned

	turnID string
	// text is the open run of tokens (nil when none): the agent messages
	// since the last tool call, closed by one message_done before the next
	// tool starts or when the turn ends. It streams into the session's
	// record as it arrives, and is saved (its last piece written, the
	// record synced) as soon as codex completes its last message, so the
	// turn's end, usually tens of milliseconds later, finds it on disk
	// and only writes message_done. A message that follows a saved one
	// with no tool between closes the saved run first (its message_done)
	// and starts a run of its own.
	text     *core.BackendReply
	lastItem string          // the agent message the run's last token came from
	joinNext bool            // the run before this one was closed by the next message: reply joins them
	saveErr  error           // the run could not be saved: the turn ends with error
	seen     map[string]bool // agent messages that streamed deltas
	tools    map[string]bool // codex's tool items started and not yet ended
	attempts int             // retries reported so far
	failure  *codex.TurnError
	g        gates  // the gate's view of codex's tool items (approval.go)
	reply    string // the text after the last tool: the reply turn_end sees (hooks.go)

	pending    atomic.Int64  // bytes of the params in events, not yet taken
	room       chan struct{} // a token when the turn takes an event
	replyBytes int64         // what codex sent of the reply so far (limits.go)
}

func newTurnRun(b *Backend, h *core.TurnHost, s *codex.Session) *turnRun {
	return &turnRun{
		b: b, h: h, s: s,
		events:   make(chan routed, 256),
		gone:     make(chan struct{}),
		finished: make(chan struct{}),
		room:     make(chan struct{}, 1),
		seen:     map[string]bool{},
		tools:    map[string]bool{},
	}
}

// routed is an event with its params decoded by the router (v; nil when
// the schema does not know the method), so the turn decodes it no more.
type routed struct {
	codex.Event
	v any
}

func (r *turnRun) deliver(ev routed) {
	if r.roomFor(int64(len(ev.Params))) {
		select {
		case r.events <- ev:
			return
		case <-r.finished:
		}
	}
	if ev.IsRequest() {
		refuse(ev.Event, "the openmax turn has ended")
	}
}

func (r *turnRun) ended(*codex.Client) { r.goneOnce.Do(func() { close(r.gone) }) }

// fail reports a failure of the backend itself as the turn's error.
func fail(h *core.TurnHost, err error) string {
	h.Emit(wire.Error{Message: "codex: " + err.Error()})
	return wire.StopError
}

func (r *turnRun) run(ctx context.Context, text string) (stop string) {
	b := r.b
	b.mu.Lock()
	b.turns[r.s.ID] = r
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		if b.turns[r.s.ID] == r {
			delete(b.turns, r.s.ID)
		}
		b.mu.Unlock()
		close(r.finished)
	}()
	if ctx.Err() != nil {
		return wire.StopCancelled
	}
	actx, release := r.b.answering(ctx)
	turn, err := r.s.Send(actx, text)
	if cause := context.Cause(actx); err != nil && errors.Is(cause, errNoAnswer) {
		err = cause
	}
	release()
	if err != nil {
		if ctx.Err() != nil {
			return wire.StopCancelled
		}
		return fail(r.h, err)
	}
	r.turnID = turn.ID
	cancelled := ctx.Done()
	var giveUp <-chan time.Time
	for {
		select {
		case ev := <-r.events:
			r.took(ev.Event)
			if ev.IsRequest() {
				r.request(ctx, ev.Event)
			} else if stop, done := r.handle(ev); done {
				return stop
			}
			if r.saveErr != nil {
				return r.unsaved()
			}
		case <-r.gone:
			// Every event the server sent was delivered before gone
			// closed: what is queued still counts.
			for drained := false; !drained; {
				select {
				case ev := <-r.events:
					r.took(ev.Event)
					if ev.IsRequest() {
						refuse(ev.Event, "the codex app-server ended")
						continue
					}
					if stop, done := r.handle(ev); done {
						return stop
					}
				default:
					drained = true
				}
			}
			r.closeOpen("codex app-server ended")
			r.flush()
			r.h.Emit(wire.Error{Message: "codex app-server ended during the turn"})
			return wire.StopError
		case <-cancelled:
			cancelled = nil
			r.interrupt()
			giveUp = r.b.clock().After(interruptWait)
		case <-giveUp:
			r.closeOpen("cancelled")
			r.flush()
			if r.saveErr != nil {
				return wire.StopError
			}
			return wire.StopCancelled
		}
	}
}

// unsaved ends a turn whose reply could not be kept in the session (the
// error went out already), as the engine's turns end on a failed write:
// codex's turn is interrupted and the turn ends with error.
func (r *turnRun) unsaved() string {
	if r.text != nil {
		r.text.Drop()
		r.text, r.lastItem = nil, ""
	}
	r.closeOpen("cancelled: the reply could not be kept in the session")
	r.interrupt()
	r.awaitCompletion()
	return wire.StopError
}

// interrupt asks codex to end the turn; turn/completed follows. It does
// not wait: the turn's own wait for the end is on the backend's clock.
func (r *turnRun) interrupt() {
	go func() {
		ctx, stop := withTimeout(context.Background(), r.b.clock(), interruptWait, fmt.Errorf("no answer to turn/interrupt within %v", interruptWait))
		defer stop()
		if err := r.s.Interrupt(ctx); err != nil && !errors.Is(err, codex.ErrNoActiveTurn) {
			fmt.Fprintf(r.b.cfg.Log, "openmax: codex turn/interrupt: %v\n", err)
		}
	}()
}

// runCall runs codex's call of an openmax tool (an item/tool/call request,
// in order with the turn's events) through the host, and answers it: the
// run of tokens closes first, as before any tool.
func (r *turnRun) runCall(ctx context.Context, ev codex.Event) {
	var p codex.DynamicToolCallParams
	if err := json.Unmarshal(ev.Params, &p); err != nil {
		_ = ev.Respond(nil, &codex.RPCError{Code: codex.CodeInvalidParams, Message: "item/tool/call params: " + err.Error()})
		return
	}
	if p.TurnID != r.turnID || p.Namespace != Namespace {
		refuse(ev, fmt.Sprintf("no tool %q in namespace %q for this turn", p.Tool, p.Namespace))
		return
	}
	r.flush()
	res := r.h.CallTool(ctx, p.CallID, p.Tool, p.Arguments)
	if err := ev.Respond(toolResult(res.OK, res.Output), nil); err != nil {
		fmt.Fprintf(r.b.cfg.Log, "openmax: answering codex's call %s: %v\n", p.CallID, err)
	}
}

// flush closes the open run of tokens with its message_done, once its
// text is in the session; the next reply is counted afresh.
func (r *turnRun) flush() {
	r.replyBytes = 0
	r.closeRun()
	r.joinNext = false
}

// closeRun saves the open run (unless it is saved already) and closes it
// with its message_done. A run that cannot be saved gets no message_done:
// the error goes out instead and the turn ends with error (saveErr).
func (r *turnRun) closeRun() {
	if r.text == nil {
		return
	}
	text := r.text
	r.text, r.lastItem = nil, ""
	if !r.save(text) {
		return
	}
	text.Done()
	if r.joinNext {
		r.reply += "\n\n" + text.String()
	} else {
		r.reply = text.String()
	}
}

// save keeps the run's text in the session (once); false when it could
// not, which ends the turn with error.
func (r *turnRun) save(text *core.BackendReply) bool {
	if text.Saved() {
		return true
	}
	if err := text.Save(); err != nil {
		text.Drop()
		if r.saveErr == nil {
			r.saveErr = err
			r.h.Emit(wire.Error{Message: "codex: keeping codex's reply in the session: " + err.Error()})
		}
		return false
	}
	return true
}

func (r *turnRun) token(itemID, delta string) {
	if delta == "" {
		return
	}
	switch {
	case r.text != nil && r.text.Saved():
		// The run was saved when its message completed: it closes here,
		// and this text starts a run of its own.
		r.closeRun()
		r.joinNext = true
	case r.text != nil && r.lastItem != itemID:
		// Another agent message in the same run: keep them apart.
		r.text.Add("\n\n")
		r.h.Emit(wire.Token{Text: "\n\n"})
	}
	if r.text == nil {
		r.text = r.h.NewReply()
	}
	r.text.Add(delta)
	r.h.Emit(wire.Token{Text: delta})
	r.lastItem = itemID
}

// messageCompleted saves the open run when its last message is the one
// codex completed: the reply is on disk before the turn's end arrives.
func (r *turnRun) messageCompleted(itemID string) {
	if r.text != nil && r.lastItem == itemID {
		r.save(r.text)
	}
}

// closeOpen ends the tool calls codex started and never completed (an
// interrupt leaves them so).
func (r *turnRun) closeOpen(why string) {
	ids := make([]string, 0, len(r.tools))
	for id := range r.tools {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		r.endTool(id, false, why)
	}
	clear(r.tools)
}

// handle maps one event; done reports the end of the turn.
func (r *turnRun) handle(ev routed) (stop string, done bool) {
	v := ev.v
	if v == nil {
		return "", false // unknown to the schema: reported as a bad line already
	}
	if r.overReply(v, len(ev.Params)) {
		return r.capped(), true
	}
	switch p := v.(type) {
	case *codex.AgentMessageDeltaNotification:
		if p.TurnID == r.turnID {
			r.seen[p.ItemID] = true
			r.token(p.ItemID, p.Delta)
		}
	case *codex.ReasoningSummaryTextDeltaNotification:
		if p.TurnID == r.turnID && p.Delta != "" {
			r.h.Emit(wire.Thinking{Text: p.Delta})
		}
	case *codex.ReasoningTextDeltaNotification:
		if p.TurnID == r.turnID && p.Delta != "" {
			r.h.Emit(wire.Thinking{Text: p.Delta})
		}
	case *codex.ItemStartedNotification:
		if p.TurnID == r.turnID {
			r.itemStarted(p.Item)
		}
	case *codex.ItemCompletedNotification:
		if p.TurnID == r.turnID {
			r.itemCompleted(p.Item)
		}
	case *codex.ThreadTokenUsageUpdatedNotification:
		if p.TurnID == r.turnID {
			last := p.TokenUsage.Last
			cached := int(last.CachedInputTokens)
			r.h.Emit(wire.Usage{PromptTokens: int(last.InputTokens), CompletionTokens: int(last.OutputTokens), CachedTokens: &cached})
		}
	case *codex.ErrorNotification:
		if p.TurnID != r.turnID {
			break
		}
		if !p.WillRetry {
			e := p.Error
			r.failure = &e
			break
		}
		if r.text != nil {
			return r.truncated(p.Error), true
		}
		r.attempts++
		attempt, max := retryCount(p.Error.Message, r.attempts)
		r.h.Emit(wire.Retry{Attempt: attempt, MaxAttempts: max, Reason: errorText(p.Error)})
	case *codex.TurnCompletedNotification:
		if p.Turn.ID != r.turnID {
			break
		}
		return r.completed(p.Turn), true
	}
	return "", false
}

func (r *turnRun) itemStarted(it codex.ThreadItem) {
	var name string
	var args any
	switch it.Type {
	case codex.ThreadItemTypeCommandExecution:
		name, args = ToolCommand, map[string]any{"command": it.Command, "cwd": it.Cwd}
	case codex.ThreadItemTypeFileChange:
		paths := []string{}
		for _, c := range it.Changes {
			paths = append(paths, r.rel(c.Path))
		}
		name, args = ToolFileChange, map[string]any{"paths": paths}
	case codex.ThreadItemTypeMcpToolCall:
		name, args = ToolMCP, map[string]any{"server": it.Server, "tool": rawString(it.Tool), "arguments": it.Arguments}
	default:
		return
	}
	if r.tools[it.ID] {
		return
	}
	r.flush()
	raw, _ := json.Marshal(args)
	r.startTool(it, name, raw)
	r.tools[it.ID] = true
}

func (r *turnRun) itemCompleted(it codex.ThreadItem) {
	status := rawString(it.Status)
	switch it.Type {
	case codex.ThreadItemTypeAgentMessage:
		if !r.seen[it.ID] {
			r.token(it.ID, it.Text) // a message that came whole
		}
		r.messageCompleted(it.ID)
		return
	case codex.ThreadItemTypeCommandExecution:
		if !r.tools[it.ID] {
			r.itemStarted(it)
		}
		r.endTool(it.ID, status == "completed" && it.ExitCode == 0, it.AggregatedOutput)
	case codex.ThreadItemTypeFileChange:
		if !r.tools[it.ID] {
			r.itemStarted(it)
		}
		var summary []string
		for _, c := range it.Changes {
			if c.Kind.MovePath != "" {
				c.Kind.MovePath = r.rel(c.Kind.MovePath)
			}
			d := fileDiff(it.ID, r.rel(c.Path), c)
			if r.applied(it.ID, status) {
				r.h.Emit(d)
			}
			summary = append(summary, fmt.Sprintf("%s %s (+%d -%d)", c.Kind.Type, d.Path, d.Added, d.Removed))
		}
		r.endTool(it.ID, status == "completed", strings.Join(summary, "\n"))
	case codex.ThreadItemTypeMcpToolCall:
		if !r.tools[it.ID] {
			r.itemStarted(it)
		}
		out := string(it.Result)
		if it.Error != nil {
			out = it.Error.Message
		}
		r.endTool(it.ID, status == "completed", out)
	default:
		return
	}
	delete(r.tools, it.ID)
}

// truncated ends a turn whose reply codex is about to retry after it
// already streamed text: openmax never retries a reply that sent tokens,
// so the reply is reported truncated (what streamed kept, as openmax's own
// turns do) and codex's turn is interrupted.
func (r *turnRun) truncated(e codex.TurnError) string {
	return r.cut(errorText(e) + "; codex would retry a reply that already streamed text, so the turn was interrupted")
}

// cut ends the turn truncated for why: the open tool calls closed, what
// streamed kept, the error, and codex's turn interrupted.
func (r *turnRun) cut(why string) string {
	r.closeOpen("cancelled: the reply was truncated")
	r.flush()
	if r.saveErr != nil {
		return r.unsaved()
	}
	r.h.Emit(wire.Error{Message: "reply truncated: " + why})
	r.interrupt()
	r.awaitCompletion()
	return wire.StopTruncated
}

// awaitCompletion waits (bounded) for codex's turn/completed after an
// interrupt, so the thread is idle when the next turn starts.
func (r *turnRun) awaitCompletion() {
	giveUp := r.b.clock().After(interruptWait)
	for {
		select {
		case ev := <-r.events:
			r.took(ev.Event)
			if ev.IsRequest() {
				refuse(ev.Event, "the openmax turn has ended")
				continue
			}
			if c, ok := ev.v.(*codex.TurnCompletedNotification); ok && c.Turn.ID == r.turnID {
				return
			}
		case <-r.gone:
			return
		case <-giveUp:
			return
		}
	}
}

// completed ends the turn as codex ended it.
func (r *turnRun) completed(t codex.Turn) string {
	switch t.Status {
	case codex.TurnStatusInterrupted:
		r.closeOpen("cancelled")
		r.flush()
		if r.saveErr != nil {
			return wire.StopError
		}
		return wire.StopCancelled
	case codex.TurnStatusFailed:
		r.closeOpen("not completed: the turn failed")
		e := r.failure
		if t.Error != nil {
			e = t.Error
		}
		msg := "the turn failed"
		if e != nil {
			msg = errorText(*e)
		}
		// A failed reply's partial text is not kept: the error closes it.
		// A run saved already (codex completed its message before the
		// turn failed) is a finished reply: its message_done goes first.
		if r.text != nil && r.text.Saved() {
			r.closeRun()
		} else if r.text != nil {
			r.text.Drop()
			r.text, r.lastItem = nil, ""
		}
		r.h.Emit(wire.Error{Message: "codex: " + msg})
		return wire.StopError
	}
	r.closeOpen("not completed")
	r.flush()
	if r.saveErr != nil {
		return wire.StopError
	}
	return string(t.Status)
}

var reconnecting = regexp.MustCompile(`(\d+)/(\d+)`)

// retryCount reads codex's "Reconnecting... N/MAX" (retry N of MAX) as
// openmax's attempt and budget: retry N is attempt N+1 of MAX+1. Without
// it, the attempt is counted and the budget is the attempt.
func retryCount(msg string, n int) (attempt, max int) {
	if m := reconnecting.FindStringSubmatch(msg); m != nil {
		a, err1 := strconv.Atoi(m[1])
		b, err2 := strconv.Atoi(m[2])
		if err1 == nil && err2 == nil && a >= 1 && a <= b && b < 1<<20 {
			return a + 1, b + 1
		}
	}
	return n + 1, n + 1
}

// errorText is codex's error with the cause it adds.
func errorText(e codex.TurnError) string {
	if e.AdditionalDetails != "" && e.AdditionalDetails != e.Message {
		return e.Message + ": " + e.AdditionalDetails
	}
	return e.Message
}

// rel is path relative to the project when it lies inside it, as the
// wire's diff paths are.
func (r *turnRun) rel(path string) string {
	if r.b.cfg.Dir == "" || !filepath.IsAbs(path) {
		return path
	}
	rel, err := filepath.Rel(r.b.cfg.Dir, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return path
	}
	return rel
}

// rawString is a JSON string's value, or the JSON itself when it is not
// a string.
func rawString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// fileDiff is one change of a fileChange item as a diff line. codex sends
// an added file's content, a deleted file's content, and an update's
// unified hunks without file headers; the wire carries a unified diff, so
// the headers (and for a whole file its one hunk) are added here.
func fileDiff(callID, path string, c codex.FileUpdateChange) wire.Diff {
	d := wire.Diff{CallID: callID, Path: path}
	body := strings.TrimSuffix(c.Diff, "\n")
	var lines []string
	if c.Diff != "" {
		lines = strings.Split(body, "\n")
	}
	var b strings.Builder
	switch c.Kind.Type {
	case codex.PatchChangeKindTypeAdd:
		d.Added = len(lines)
		fmt.Fprintf(&b, "--- /dev/null\n+++ b/%s\n", path)
		if len(lines) > 0 { // an empty file has no hunk
			fmt.Fprintf(&b, "@@ -0,0 +%s @@\n", hunkRange(len(lines)))
		}
		for _, l := range lines {
			b.WriteString("+" + l + "\n")
		}
	case codex.PatchChangeKindTypeDelete:
		d.Removed = len(lines)
		fmt.Fprintf(&b, "--- a/%s\n+++ /dev/null\n", path)
		if len(lines) > 0 {
			fmt.Fprintf(&b, "@@ -%s +0,0 @@\n", hunkRange(len(lines)))
		}
		for _, l := range lines {
			b.WriteString("-" + l + "\n")
		}
	default:
		to := path
		if c.Kind.MovePath != "" {
			to = c.Kind.MovePath
		}
		fmt.Fprintf(&b, "--- a/%s\n+++ b/%s\n", path, to)
		for _, l := range lines {
			switch {
			case strings.HasPrefix(l, "+"):
				d.Added++
			case strings.HasPrefix(l, "-"):
				d.Removed++
			}
		}
		if c.Diff != "" {
			b.WriteString(body + "\n")
		}
	}
	d.Diff = b.String()
	return d
}

// hunkRange is a unified hunk's line range of n lines from line 1.
func hunkRange(n int) string {
	if n == 1 {
		return "1"
	}
	return fmt.Sprintf("1,%d", n)
}
