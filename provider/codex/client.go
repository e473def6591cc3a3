package codex

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
)

// Options configure a Client.
type Options struct {
	// Command is the program to run and its leading arguments; the client
	// appends `app-server -c check_for_update_on_startup=false`. Empty
	// means "codex" from PATH. A fake app-server that accepts those
	// arguments works too (`openmax fake-app-server --transcript F`).
	Command []string
	// Dir is the session's working directory: the server runs there, and
	// so do the commands it runs. Empty means the current directory.
	Dir string
	// Env is added to the environment the server (and every command it
	// runs) inherits from this process, as KEY=VALUE: CODEX_HOME, ports.
	// The server reads config.toml from CODEX_HOME (default ~/.codex), so
	// the MCP servers, plugins and notify program configured there apply;
	// only a CODEX_HOME of its own keeps them out.
	Env []string
	// Identity, when set, is the commit identity: GIT_AUTHOR_NAME,
	// GIT_AUTHOR_EMAIL, GIT_COMMITTER_NAME and GIT_COMMITTER_EMAIL.
	Identity Identity
	// ClientName and ClientVersion are the clientInfo of initialize;
	// empty means "openmax" and "0".
	ClientName, ClientVersion string
	// Tools are the dynamic tools: offered by StartThread, and the
	// handlers of the server's item/tool/call requests on every thread of
	// the client (a resumed or forked thread keeps the tools it was
	// started with).
	Tools []Namespace
	// ToolCallsAsEvents delivers the server's item/tool/call requests on
	// Events instead of calling the tools' handlers: each is an Event for
	// which IsRequest is true, in order with the notifications read
	// before and after it, and the consumer answers it with Respond (a
	// DynamicToolCallResponse). A consumer that maps a turn's events in
	// order (text before a call closes before the call runs) needs this;
	// the handlers may then be nil. An unanswered call holds the turn.
	ToolCallsAsEvents bool
	// ApprovalsAsEvents delivers the server's approval requests
	// (item/commandExecution/requestApproval,
	// item/fileChange/requestApproval, item/permissions/requestApproval)
	// on Events the same way, in order with the turn's notifications,
	// instead of accepting them: the consumer decides each and answers it
	// with Respond. An unanswered approval holds the turn.
	ApprovalsAsEvents bool
	// Transcript, when set, receives every line in both directions as a
	// TranscriptLine, deltas included, "email" values redacted.
	Transcript io.Writer
	// OnBadLine receives each line from the server that is not a JSON
	// object, does not parse, or is a notification whose method the
	// schema does not know (such a notification is still delivered as an
	// event), and each failure to record the transcript. It is called on
	// the client's reader goroutine: it must not block. Nil ignores them.
	OnBadLine func(line []byte, err error)
	// Stderr receives the server's stderr; nil keeps only its last few
	// KiB, which the error of a server that exits names.
	Stderr io.Writer
	// OnEvent, when set, receives every event on the client's reader
	// goroutine as it is read, in order, in place of Events: no queue and
	// no goroutine stand between the server's line and the consumer, so
	// an event reaches it without a goroutine switch. While OnEvent runs
	// the client reads nothing more from the server (responses
	// included): it must hand the event on and return, and its waiting
	// is the bound on what the client holds. Events then delivers
	// nothing and is closed once the reader has made its last call, after
	// the connection ended; MaxQueued and MaxQueuedBytes do not apply.
	OnEvent func(Event)
	// MaxLine caps one line from the server (0: MaxLine); MaxQueued and
	// MaxQueuedBytes the events read and not yet taken from Events, and
	// the bytes of their params (0: MaxQueued, MaxQueuedBytes).
	MaxLine, MaxQueued, MaxQueuedBytes int

	// onQueueFull is called each time the reader waits for room in the
	// queue of events (tests).
	onQueueFull func()
}

// Identity is a commit identity.
type Identity struct{ Name, Email string }

// Namespace is a group of dynamic tools, offered to the model as one
// namespace tool: the model calls them as Name plus the tool's name.
type Namespace struct {
	Name        string
	Description string
	Tools       []Tool
}

// Tool is one dynamic function tool and the handler that answers it.
type Tool struct {
	Name        string
	Description string
	InputSchema json.RawMessage // a JSON Schema object; nil means any object
	// Handler runs a call and returns the text handed back to the model;
	// an error is handed back as a failed call with the error's text.
	Handler func(ctx context.Context, call ToolCall) (string, error)
}

// ToolCall is one item/tool/call request from the server.
type ToolCall struct {
	ThreadID, TurnID, CallID string
	Namespace, Tool          string
	Arguments                json.RawMessage
}

// reservedPrefix starts the names the server keeps for its MCP tools.
const reservedPrefix = "mcp__"

// Client is one running app-server and the connection to it.
//
// Concurrency: every method is safe for concurrent use. Calls (Call and
// the Session methods) may be made from any goroutine, including while
// events are being read; each waits for its own response, which is
// routed to it directly, never through Events. Events delivers the
// server's notifications in the order they were read, from one goroutine
// of the client's; the client buffers up to Options.MaxQueued (65,536) of
// them, or Options.MaxQueuedBytes (8 MiB) of their params, for a slow
// consumer and at that bound stops reading from the server (responses
// included) until one is taken, so Events must be drained. Server requests are answered on goroutines of their own (a
// tool's handler may call the client). After the server's stdout ends,
// every call fails with ErrClosed (or the read error), Events is closed
// once drained, and Close reaps the process.
type Client struct {
	c     *conn
	tools map[[2]string]Tool
	opts  Options

	// Init is the server's answer to initialize.
	Init InitializeResponse

	stdin  io.Closer
	stdout io.Closer // the read end of the server's stdout
	proc   *exec.Cmd
	exited chan struct{}
	errOut *tailBuffer

	mu        sync.Mutex
	active    map[string]string // thread id → its running turn
	completed map[string]string // thread id → its last completed turn
	// turnStop cancels the tool calls of a running turn: the server
	// abandons an unanswered call when its turn ends, so its handler is
	// told to stop then.
	turnStop  map[string]context.CancelFunc
	turnCtx   map[string]context.Context
	closeOnce sync.Once
	closeErr  error
}

// Start launches the app-server and initializes the connection:
// initialize (with the experimental API, which dynamic tools need), then
// the initialized notification.
func Start(ctx context.Context, o Options) (*Client, error) {
	if err := checkTools(o.Tools, o.ToolCallsAsEvents); err != nil {
		return nil, err
	}
	command := o.Command
	if len(command) == 0 {
		command = []string{"codex"}
	}
	args := append(append([]string{}, command[1:]...), "app-server", "-c", "check_for_update_on_startup=false")
	cmd := exec.Command(command[0], args...)
	cmd.Dir = o.Dir
	cmd.Env = append(os.Environ(), o.identityEnv()...)
	cmd.Env = append(cmd.Env, o.Env...)
	errOut := &tailBuffer{max: 8 << 10}
	if o.Stderr != nil {
		cmd.Stderr = io.MultiWriter(o.Stderr, errOut)
	} else {
		cmd.Stderr = errOut
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("codex: %w", err)
	}
	// stdout is a pipe of the client's own, not cmd.StdoutPipe: Wait
	// closes that one when the process exits, which would drop the last
	// lines the reader has not read yet.
	stdout, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("codex: %w", err)
	}
	cmd.Stdout = w
	err = cmd.Start()
	w.Close() // the child holds its own copy
	if err != nil {
		stdout.Close()
		return nil, fmt.Errorf("codex: start %s: %w", command[0], err)
	}
	cl := newClient(stdout, stdin, o)
	cl.stdin, cl.stdout, cl.proc, cl.errOut = stdin, stdout, cmd, errOut
	go func() {
		_ = cmd.Wait()
		close(cl.exited)
	}()
	if err := cl.initialize(ctx); err != nil {
		// A server that did not initialize is killed, not waited for.
		dead, kill := context.WithCancel(context.Background())
		kill()
		_ = cl.Close(dead)
		return nil, cl.withStderr(err)
	}
	return cl, nil
}

// Connect initializes a connection to an app-server already running at
// the other end of r and w (an in-memory peer in tests, or a process
// started elsewhere). Closing the client closes w.
func Connect(ctx context.Context, r io.Reader, w io.WriteCloser, o Options) (*Client, error) {
	if err := checkTools(o.Tools, o.ToolCallsAsEvents); err != nil {
		return nil, err
	}
	cl := newClient(r, w, o)
	cl.stdin = w
	if rc, ok := r.(io.Closer); ok {
		cl.stdout = rc // Close waits for the peer's output to end, then closes it
	}
	close(cl.exited)
	if err := cl.initialize(ctx); err != nil {
		_ = cl.Close(ctx)
		return nil, err
	}
	return cl, nil
}

func newClient(r io.Reader, w io.Writer, o Options) *Client {
	cl := &Client{
		opts:      o,
		tools:     map[[2]string]Tool{},
		exited:    make(chan struct{}),
		active:    map[string]string{},
		completed: map[string]string{},
		turnStop:  map[string]context.CancelFunc{},
		turnCtx:   map[string]context.Context{},
	}
	for _, ns := range o.Tools {
		for _, t := range ns.Tools {
			cl.tools[[2]string{ns.Name, t.Name}] = t
		}
	}
	cl.c = newConn(r, w, connOptions{
		transcript: o.Transcript,
		onBadLine:  o.OnBadLine,
		onRequest:  cl.serverRequest,
		observe:    cl.observe,
		inBand: map[string]bool{
			MethodItemToolCall:                        o.ToolCallsAsEvents,
			MethodItemCommandExecutionRequestApproval: o.ApprovalsAsEvents,
			MethodItemFileChangeRequestApproval:       o.ApprovalsAsEvents,
			MethodItemPermissionsRequestApproval:      o.ApprovalsAsEvents,
		},
		maxLine:   cmp.Or(o.MaxLine, MaxLine),
		maxQueued: cmp.Or(o.MaxQueued, MaxQueued),
		maxBytes:  cmp.Or(o.MaxQueuedBytes, MaxQueuedBytes),
		onFull:    o.onQueueFull,
		deliver:   o.OnEvent,
	})
	return cl
}

func (o Options) identityEnv() []string {
	if o.Identity == (Identity{}) {
		return nil
	}
	return []string{
		"GIT_AUTHOR_NAME=" + o.Identity.Name, "GIT_AUTHOR_EMAIL=" + o.Identity.Email,
		"GIT_COMMITTER_NAME=" + o.Identity.Name, "GIT_COMMITTER_EMAIL=" + o.Identity.Email,
	}
}

// checkTools refuses names the server reserves, and duplicates.
func checkTools(nss []Namespace, asEvents bool) error {
	seen := map[[2]string]bool{}
	for _, ns := range nss {
		if ns.Name == "" || strings.HasPrefix(ns.Name, reservedPrefix) {
			return fmt.Errorf("codex: dynamic tool namespace %q: names starting with %q are reserved (and a namespace needs a name)", ns.Name, reservedPrefix)
		}
		for _, t := range ns.Tools {
			if t.Name == "" || strings.HasPrefix(t.Name, reservedPrefix) {
				return fmt.Errorf("codex: dynamic tool %q in %q: names starting with %q are reserved (and a tool needs a name)", t.Name, ns.Name, reservedPrefix)
			}
			if t.Handler == nil && !asEvents {
				return fmt.Errorf("codex: dynamic tool %s.%s has no handler", ns.Name, t.Name)
			}
			k := [2]string{ns.Name, t.Name}
			if seen[k] {
				return fmt.Errorf("codex: dynamic tool %s.%s is listed twice", ns.Name, t.Name)
			}
			seen[k] = true
		}
	}
	return nil
}

func (cl *Client) initialize(ctx context.Context) error {
	name, version := cl.opts.ClientName, cl.opts.ClientVersion
	if name == "" {
		name = "openmax"
	}
	if version == "" {
		version = "0"
	}
	p := InitializeParams{
		ClientInfo:   ClientInfo{Name: name, Version: version},
		Capabilities: &InitializeCapabilities{ExperimentalAPI: true},
	}
	if err := cl.c.call(ctx, MethodInitialize, p, &cl.Init); err != nil {
		return err
	}
	return cl.c.notify(MethodInitialized, nil)
}

// Ended is closed once the server's stdout has ended (the process exited,
// or Close was called).
func (cl *Client) Ended() <-chan struct{} { return cl.c.done }

// Events delivers the server's notifications in order; it is closed
// after the connection ends and every event read before has been taken.
// With Options.OnEvent it delivers nothing, and is closed after the last
// call of OnEvent.
func (cl *Client) Events() <-chan Event { return cl.c.events }

// Call sends any client request and decodes its result into result (nil
// discards it): the methods the Session wraps, and the others the schema
// lists.
func (cl *Client) Call(ctx context.Context, method string, params, result any) error {
	return cl.withStderr(cl.c.call(ctx, method, params, result))
}

// withStderr adds the tail of the server's stderr to the error of a
// connection that ended.
func (cl *Client) withStderr(err error) error {
	if err == nil || cl.errOut == nil || !errors.Is(err, ErrClosed) {
		return err
	}
	if tail := strings.TrimSpace(cl.errOut.String()); tail != "" {
		return fmt.Errorf("%w; the app-server's stderr ended with:\n%s", err, tail)
	}
	return err
}

// Close closes the server's stdin once the lines queued for it are
// written (at once when ctx ends first), which ends it, waits for it to exit
// and for every line it wrote to be read (and recorded); when ctx ends
// first the process is killed and the rest of its output dropped.
// Pending server requests see their context cancelled. Close is
// idempotent.
func (cl *Client) Close(ctx context.Context) error {
	cl.closeOnce.Do(func() {
		// What is queued for the server is written first, unless it
		// stopped reading: closing its stdin at ctx's end fails the write
		// under way.
		cl.c.stopWriting()
		select {
		case <-cl.c.writerEnd:
		case <-ctx.Done():
		}
		err := cl.stdin.Close()
		if errors.Is(err, os.ErrClosed) {
			err = nil // the process exited first, and Wait closed it
		}
		select {
		case <-cl.exited:
		case <-ctx.Done():
			if cl.proc != nil && cl.proc.Process != nil {
				_ = cl.proc.Process.Kill()
			}
			<-cl.exited
		}
		// The output it wrote before exiting is read to its end (a
		// process it left behind holding stdout is cut off at ctx's end).
		if cl.stdout != nil {
			select {
			case <-cl.c.readEnd:
			case <-ctx.Done():
				_ = cl.stdout.Close()
				cl.c.stopPump() // a reader waiting for room gives up
				<-cl.c.readEnd
			}
		}
		if cl.stdout != nil {
			_ = cl.stdout.Close()
		}
		cl.c.end(ErrClosed)
		cl.c.stopPump()
		cl.c.reqStop()
		// Handlers see their context cancelled; one that ignores it is
		// left behind once ctx ends.
		handled := make(chan struct{})
		go func() {
			cl.c.handlers.Wait()
			close(handled)
		}()
		select {
		case <-handled:
		case <-ctx.Done():
		}
		cl.closeErr = err
	})
	return cl.closeErr
}

// observe tracks each thread's running turn from turn/started and
// turn/completed, on the reader goroutine, before the event is queued.
func (cl *Client) observe(ev Event) {
	if ev.Method != MethodTurnStarted && ev.Method != MethodTurnCompleted {
		return
	}
	var p struct {
		ThreadID string `json:"threadId"`
		Turn     struct {
			ID string `json:"id"`
		} `json:"turn"`
	}
	if json.Unmarshal(ev.Params, &p) != nil || p.ThreadID == "" {
		return
	}
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if ev.Method == MethodTurnStarted {
		cl.active[p.ThreadID] = p.Turn.ID
		return
	}
	cl.completed[p.ThreadID] = p.Turn.ID
	if cl.active[p.ThreadID] == p.Turn.ID {
		delete(cl.active, p.ThreadID)
	}
	if stop, ok := cl.turnStop[p.Turn.ID]; ok {
		stop()
		delete(cl.turnStop, p.Turn.ID)
		delete(cl.turnCtx, p.Turn.ID)
	}
}

// callContext is the context of a tool call in turnID: cancelled when the
// turn completes (at once if it already has) or the client closes.
func (cl *Client) callContext(parent context.Context, threadID, turnID string) context.Context {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if ctx, ok := cl.turnCtx[turnID]; ok {
		return ctx
	}
	ctx, stop := context.WithCancel(parent)
	if cl.completed[threadID] == turnID {
		stop()
		return ctx
	}
	cl.turnCtx[turnID], cl.turnStop[turnID] = ctx, stop
	return ctx
}

// began records a turn the server just said it started (turn/start's
// response), unless its turn/completed was already read.
func (cl *Client) began(threadID, turnID string) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.completed[threadID] != turnID {
		cl.active[threadID] = turnID
	}
}

// activeTurn is the thread's running turn, "" when none.
func (cl *Client) activeTurn(threadID string) string {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return cl.active[threadID]
}

// serverRequest answers the server's requests not delivered as events:
// dynamic tool calls from their handlers, command and file-change
// approvals accepted (with the default policy, approvals are off, so they
// should not come), anything else refused.
func (cl *Client) serverRequest(ctx context.Context, method string, params json.RawMessage) (any, *RPCError) {
	switch method {
	case MethodItemToolCall:
		var p DynamicToolCallParams
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, &RPCError{Code: CodeInvalidParams, Message: "item/tool/call params: " + err.Error()}
		}
		return cl.callTool(cl.callContext(ctx, p.ThreadID, p.TurnID), p), nil
	case MethodItemCommandExecutionRequestApproval:
		return CommandExecutionRequestApprovalResponse{Decision: json.RawMessage(`"accept"`)}, nil
	case MethodItemFileChangeRequestApproval:
		return FileChangeRequestApprovalResponse{Decision: FileChangeApprovalDecisionAccept}, nil
	case MethodExecCommandApproval:
		return ExecCommandApprovalResponse{Decision: json.RawMessage(`"approved"`)}, nil
	case MethodApplyPatchApproval:
		return ApplyPatchApprovalResponse{Decision: json.RawMessage(`"approved"`)}, nil
	}
	return nil, &RPCError{Code: CodeMethodNotFound, Message: "openmax does not answer " + method}
}

func (cl *Client) callTool(ctx context.Context, p DynamicToolCallParams) DynamicToolCallResponse {
	fail := func(msg string) DynamicToolCallResponse {
		return DynamicToolCallResponse{Success: false, ContentItems: []DynamicToolCallOutputContentItem{{Type: DynamicToolCallOutputContentItemTypeInputText, Text: msg}}}
	}
	t, ok := cl.tools[[2]string{p.Namespace, p.Tool}]
	if !ok {
		return fail(fmt.Sprintf("no dynamic tool %q in namespace %q", p.Tool, p.Namespace))
	}
	call := ToolCall{ThreadID: p.ThreadID, TurnID: p.TurnID, CallID: p.CallID, Namespace: p.Namespace, Tool: p.Tool, Arguments: p.Arguments}
	text, err := runHandler(ctx, t, call)
	if err != nil {
		return fail(err.Error())
	}
	return DynamicToolCallResponse{Success: true, ContentItems: []DynamicToolCallOutputContentItem{{Type: DynamicToolCallOutputContentItemTypeInputText, Text: text}}}
}

// runHandler runs a tool's handler, turning a panic into an error.
func runHandler(ctx context.Context, t Tool, call ToolCall) (text string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("tool %s crashed: %v", call.Tool, r)
		}
	}()
	return t.Handler(ctx, call)
}

// Image is an image sent with a turn's text, as a data URL.
type Image struct {
	MIME string // e.g. image/png
	Data []byte
}

func (im Image) url() string {
	return "data:" + im.MIME + ";base64," + base64.StdEncoding.EncodeToString(im.Data)
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
