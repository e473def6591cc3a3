// Package codexbackend runs openmax turns inside codex app-server: a
// core.Backend that sends each user command to codex as turn/start and maps
// what codex reports (agent message deltas, commands, file changes, token
// usage, retries, failures) onto openmax-stdio/6 events, offering
// openmax's own tools to codex as a namespace of dynamic tools behind
// openmax's approval gate. docs/codex-backend.md has the mapping table.
package codexbackend

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/openmax/openmax/core"
	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/clock"
	"github.com/openmax/openmax/provider/codex"
)

// Namespace is the dynamic-tool namespace openmax's tools are offered in.
const Namespace = "openmax"

// Config configures a Backend.
type Config struct {
	// Command runs the app-server (see codex.Options.Command); empty means
	// codex from PATH.
	Command []string
	// Dir is the project: codex's working directory and the thread's cwd.
	Dir string
	// Env is added to codex's environment (CODEX_HOME, for one).
	Env []string
	// Model is the thread's model; empty leaves it to codex's config.
	Model string
	// Instructions are sent as the thread's developer instructions.
	Instructions string
	// Version is openmax's, sent as clientInfo.
	Version string
	// Transcript, when set, records every app-server line (see
	// codex.Options.Transcript).
	Transcript io.Writer
	// Log receives codex's stderr and the lines it sent that the client
	// could not use; nil discards them.
	Log io.Writer
	// Start starts the app-server with the options the backend built; nil
	// means codex.Start (Command as a child process). A test connects an
	// in-process fake here (codex.Connect).
	Start func(ctx context.Context, o codex.Options) (*codex.Client, error)
	// AnswerTimeout bounds the wait for the app-server's answer to
	// starting (initialize), opening the thread and starting a turn (the
	// turn itself is not bounded: it ends when codex says so or the client
	// cancels it). Zero means DefaultAnswerTimeout.
	AnswerTimeout time.Duration
	// Clock times AnswerTimeout and the wait for an interrupted turn's
	// end; nil means the wall clock.
	Clock clock.Clock
	// MaxReplyBytes caps one reply: when the bytes codex sent of its
	// deltas (text and reasoning, since the last tool call) pass it, the
	// turn ends truncated and codex's turn is interrupted; 0 means no
	// limit. It is the harness's --max-reply-bytes.
	MaxReplyBytes int64
}

// DefaultAnswerTimeout is how long the app-server may take to answer
// initialize, thread/start or turn/start (codex answers in milliseconds;
// it reads its configuration and starts MCP servers first).
const DefaultAnswerTimeout = 60 * time.Second

// errNoAnswer is the cause of a wait that AnswerTimeout ended.
var errNoAnswer = errors.New("codex app-server did not answer in time")

// answering returns ctx bounded by AnswerTimeout on the backend's clock.
func (b *Backend) answering(ctx context.Context) (context.Context, context.CancelFunc) {
	d := b.cfg.AnswerTimeout
	if d <= 0 {
		d = DefaultAnswerTimeout
	}
	return withTimeout(ctx, b.clock(), d, fmt.Errorf("%w (%v)", errNoAnswer, d))
}

func (b *Backend) clock() clock.Clock {
	if b.cfg.Clock == nil {
		return clock.Real{}
	}
	return b.cfg.Clock
}

// withTimeout is context.WithTimeout on c, cancelling with cause.
func withTimeout(ctx context.Context, c clock.Clock, d time.Duration, cause error) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	go func() {
		if clock.Sleep(ctx, c, d) == nil {
			cancel(cause)
		}
	}()
	return ctx, func() { cancel(context.Canceled) }
}

// Backend is a core.Backend over one codex app-server, started at the
// first turn and shared by every session of the engine, one codex thread
// per session. It is safe for concurrent use; a session runs one turn at a
// time, as core.Engine guarantees.
type Backend struct {
	cfg Config

	mu      sync.Mutex
	cl      *codex.Client
	threads map[string]*codex.Session // openmax session id → its thread on the running app-server
	ids     map[string]string         // openmax session id → its thread id, kept across restarts
	turns   map[string]*turnRun       // codex thread id → the turn running on it
	boot    *boot                     // an app-server started ahead of the first turn (Prestart), not yet taken
	closed  bool
	bad     *badLines
}

// boot is an app-server start begun before any turn needed it: done is
// closed when it has ended, with cl running or err saying why not.
type boot struct {
	tools  []codex.Tool // the dynamic tools it was started with
	cancel context.CancelFunc
	done   chan struct{}
	cl     *codex.Client
	err    error
}

// New returns a Backend; nothing starts until Prestart or the first turn.
func New(cfg Config) *Backend {
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	return &Backend{cfg: cfg, threads: map[string]*codex.Session{}, ids: map[string]string{}, turns: map[string]*turnRun{}, bad: &badLines{log: cfg.Log}}
}

// closeWait bounds, on the backend's clock, how long Close waits for the
// app-server to read what was sent to it and to end.
const closeWait = 5 * time.Second

// Close ends the app-server (closing its stdin) and waits for it within
// ctx and closeWait on the backend's clock; one that does not end is
// killed.
func (b *Backend) Close(ctx context.Context) error {
	b.mu.Lock()
	cl, bt := b.cl, b.boot
	b.cl, b.boot, b.closed = nil, nil, true
	b.mu.Unlock()
	defer b.bad.summary()
	if bt != nil {
		// A start still under way is called off (its process killed) and
		// waited for; one that ended is closed like any other.
		bt.cancel()
		<-bt.done
		if bt.cl != nil && cl == nil {
			cl = bt.cl
		}
	}
	if cl == nil {
		return nil
	}
	ctx, stop := withTimeout(ctx, b.clock(), closeWait, errors.New("the codex app-server did not end in time"))
	defer stop()
	return cl.Close(ctx)
}

// Prestart starts the app-server now, with tools as its dynamic tools,
// instead of at the first turn, and returns at once: the start runs while
// the session opens (hello, the client's first command), so the first turn
// finds it running. A start that fails is reported by the first turn,
// exactly as a start at that turn would be, and the turn after tries
// again. Prestart does nothing once an app-server runs or is starting, or
// after Close, which calls off a start under way.
func (b *Backend) Prestart(tools []provider.ToolSpec) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed || b.cl != nil || b.boot != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	bt := &boot{tools: dynamicTools(tools), cancel: cancel, done: make(chan struct{})}
	b.boot = bt
	go func() {
		defer close(bt.done)
		actx, stop := b.answering(ctx)
		defer stop()
		cl, err := b.launch(actx, bt.tools)
		if cause := context.Cause(actx); err != nil && errors.Is(cause, errNoAnswer) {
			err = cause
		}
		bt.cl, bt.err = cl, err
	}()
}

// takeBoot waits for the start Prestart began, if one was not taken yet,
// and makes its app-server the running one when it started with the
// tools the host lists now (else it is closed and the caller starts
// another). Its failure is returned once, as the start's.
func (b *Backend) takeBoot(ctx context.Context, h *core.TurnHost) error {
	b.mu.Lock()
	bt := b.boot
	b.mu.Unlock()
	if bt == nil {
		return nil
	}
	select {
	case <-bt.done:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	b.mu.Lock()
	if b.boot != bt { // another turn took it, or Close did
		b.mu.Unlock()
		return nil
	}
	b.boot = nil
	switch {
	case bt.err != nil:
		b.mu.Unlock()
		return fmt.Errorf("start codex app-server: %w", bt.err)
	case b.cl == nil && sameTools(bt.tools, dynamicTools(h.Tools())):
		b.cl = bt.cl
		b.mu.Unlock()
		go b.route(bt.cl)
		return nil
	}
	b.mu.Unlock()
	// The tools changed (a reload) before the first turn: the thread must
	// offer the new ones, so this app-server goes.
	go func() {
		ctx, stop := withTimeout(context.Background(), b.clock(), closeWait, errors.New("the codex app-server did not end in time"))
		defer stop()
		_ = bt.cl.Close(ctx)
	}()
	return nil
}

// RunTurn implements core.Backend.
func (b *Backend) RunTurn(ctx context.Context, h *core.TurnHost, text string) string {
	actx, stop := b.answering(ctx)
	s, err := b.thread(actx, h)
	if cause := context.Cause(actx); err != nil && errors.Is(cause, errNoAnswer) {
		err = cause
	}
	stop()
	if err != nil {
		if ctx.Err() != nil {
			// Cancelled while the app-server started or the thread
			// opened: the next turn starts them again.
			return wire.StopCancelled
		}
		return fail(h, err)
	}
	defer b.bad.summary()
	return b.runTurns(ctx, h, s, text)
}

// client returns the running app-server, starting it (with the tools the
// host lists) when there is none or the last one ended.
func (b *Backend) client(ctx context.Context, h *core.TurnHost) (*codex.Client, error) {
	if err := b.takeBoot(ctx, h); err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, errors.New("codex backend is closed")
	}
	if b.cl != nil {
		select {
		case <-b.cl.Ended():
			b.cl = nil
			clear(b.threads) // a new process resumes them
		default:
			return b.cl, nil
		}
	}
	cl, err := b.launch(ctx, dynamicTools(h.Tools()))
	if err != nil {
		return nil, fmt.Errorf("start codex app-server: %w", err)
	}
	b.cl = cl
	go b.route(cl)
	return cl, nil
}

// dynamicTools are openmax's tools as codex's dynamic tools.
func dynamicTools(specs []provider.ToolSpec) []codex.Tool {
	var tools []codex.Tool
	for _, sp := range specs {
		tools = append(tools, codex.Tool{Name: sp.Name, Description: sp.Description, InputSchema: sp.Schema})
	}
	return tools
}

// sameTools reports whether a and b offer the same tools.
func sameTools(a, b []codex.Tool) bool {
	return slices.EqualFunc(a, b, func(x, y codex.Tool) bool {
		return x.Name == y.Name && x.Description == y.Description && bytes.Equal(x.InputSchema, y.InputSchema)
	})
}

// launch starts an app-server offering tools; its events go to the turns
// once the caller runs route on it.
func (b *Backend) launch(ctx context.Context, tools []codex.Tool) (*codex.Client, error) {
	o := codex.Options{
		Command: b.cfg.Command, Dir: b.cfg.Dir, Env: b.cfg.Env,
		ClientName: "openmax", ClientVersion: b.cfg.Version,
		// A call is answered by the turn, in order with its events.
		ToolCallsAsEvents: true,
		// So are codex's approval requests: openmax's gate decides them.
		ApprovalsAsEvents: true,
		Transcript:        b.cfg.Transcript, Stderr: b.cfg.Log,
		OnBadLine: b.bad.report,
		// Each event goes to its turn from the client's reader, with no
		// goroutine between them (a delta reaches the turn one switch
		// after it is read); the turn's bounded queue holds what the turn
		// has not taken, and the reader waits for room in it.
		OnEvent: b.routeEvent,
		MaxLine: maxLine,
	}
	if len(tools) > 0 {
		o.Tools = []codex.Namespace{{Name: Namespace, Description: "openmax's own tools, run by openmax behind its approval gate", Tools: tools}}
	}
	start := b.cfg.Start
	if start == nil {
		start = codex.Start
	}
	cl, err := start(ctx, o)
	if err != nil {
		return nil, err
	}
	return cl, nil
}

// thread returns the session's codex thread, starting (or, after the
// app-server was restarted, resuming) it.
func (b *Backend) thread(ctx context.Context, h *core.TurnHost) (*codex.Session, error) {
	cl, err := b.client(ctx, h)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	s, ok := b.threads[h.SessionID()]
	id := b.ids[h.SessionID()]
	b.mu.Unlock()
	if ok {
		return s, nil
	}
	if id == "" {
		id = h.Thread() // a continued session's thread
	}
	o := codex.ThreadOptions{
		Cwd: b.cfg.Dir, Model: b.cfg.Model, DeveloperInstructions: b.cfg.Instructions,
		ApprovalPolicy: approvalPolicy, Sandbox: string(policy(h.Mode()).Sandbox),
	}
	if id != "" {
		s, err = cl.ResumeThread(ctx, id, o)
	} else {
		s, err = cl.StartThread(ctx, o)
	}
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.threads[h.SessionID()], b.ids[h.SessionID()] = s, s.ID
	b.mu.Unlock()
	if h.Thread() != s.ID {
		h.SetThread(s.ID)
	}
	return s, nil
}

// routeEvent hands an event to the turn running on its thread, on the
// client's reader (codex.Options.OnEvent); events of a thread with no
// turn running are dropped (status changes after a turn completed, for
// one).
func (b *Backend) routeEvent(ev codex.Event) {
	// Decoded once, here: the thread picks the turn, and the turn maps
	// the decoded value.
	rt := routed{Event: ev}
	thread, ok := "", false
	if !ev.IsRequest() {
		if v, err := ev.Decode(); err == nil {
			rt.v = v
			thread, ok = threadOf(v)
		}
	}
	if !ok {
		var p struct {
			ThreadID string `json:"threadId"`
		}
		_ = json.Unmarshal(ev.Params, &p)
		thread = p.ThreadID
	}
	b.mu.Lock()
	r := b.turns[thread]
	b.mu.Unlock()
	switch {
	case r != nil:
		r.deliver(rt)
	case ev.IsRequest():
		refuse(ev, "no openmax turn is running on thread "+thread)
	}
}

// route waits for the end of cl's events (every one delivered by
// routeEvent) and tells the turns still running that the app-server
// ended.
func (b *Backend) route(cl *codex.Client) {
	for range cl.Events() {
	}
	b.mu.Lock()
	runs := make([]*turnRun, 0, len(b.turns))
	for _, r := range b.turns {
		runs = append(runs, r)
	}
	b.mu.Unlock()
	for _, r := range runs {
		r.ended(cl)
	}
}

// threadOf is the thread of a decoded notification the turns map, read
// from its generated type; ok is false for the others, whose thread the
// router reads from the params.
func threadOf(v any) (thread string, ok bool) {
	switch p := v.(type) {
	case *codex.AgentMessageDeltaNotification:
		return p.ThreadID, true
	case *codex.ReasoningSummaryTextDeltaNotification:
		return p.ThreadID, true
	case *codex.ReasoningTextDeltaNotification:
		return p.ThreadID, true
	case *codex.ItemStartedNotification:
		return p.ThreadID, true
	case *codex.ItemCompletedNotification:
		return p.ThreadID, true
	case *codex.ThreadTokenUsageUpdatedNotification:
		return p.ThreadID, true
	case *codex.ErrorNotification:
		return p.ThreadID, true
	case *codex.TurnCompletedNotification:
		return p.ThreadID, true
	}
	return "", false
}

// refuse answers a tool call nobody can run as a failed call, and an
// approval request nobody can decide as declined.
func refuse(ev codex.Event, why string) {
	if decline(ev) {
		return
	}
	_ = ev.Respond(toolResult(false, why), nil)
}

// toolResult is the answer to codex's call of an openmax tool.
func toolResult(ok bool, text string) codex.DynamicToolCallResponse {
	return codex.DynamicToolCallResponse{Success: ok, ContentItems: []codex.DynamicToolCallOutputContentItem{{Type: codex.DynamicToolCallOutputContentItemTypeInputText, Text: text}}}
}
