package codex

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/openmax/openmax/internal/jsonrpc"
)

// MaxLine is the default longest app-server line the client accepts
// (Options.MaxLine). A longer one is skipped to its newline and reported
// as a bad line; the connection goes on.
const MaxLine = 64 << 20

// MaxQueued and MaxQueuedBytes are the default bounds on the events read
// but not yet taken from Events (Options.MaxQueued, Options.MaxQueuedBytes:
// their number, and the bytes of their params). A consumer slower than the
// server does not make the client grow without bound: at either bound the
// client stops reading until the consumer takes an event, so the server's
// writes wait, as they would on a full pipe.
const (
	MaxQueued      = 1 << 16
	MaxQueuedBytes = 8 << 20
)

// maxUnsent bounds the bytes of lines queued for the app-server and not
// yet written: a server that stops reading its input while it keeps
// asking (tool calls it never reads the answers to) has its connection
// dropped past this, instead of growing the queue. One line longer than
// this is still sent when nothing else waits.
const maxUnsent = 16 << 20

// RPCError is a JSON-RPC error object (internal/jsonrpc's Error, named
// for codex in its messages), as the server sends it in a response and as
// the client answers a server request it refuses.
type RPCError jsonrpc.Error

func (e *RPCError) Error() string {
	return fmt.Sprintf("codex app-server error %d: %s", e.Code, e.Message)
}

// JSON-RPC error codes the client answers with.
const (
	CodeMethodNotFound = jsonrpc.CodeMethodNotFound
	CodeInvalidParams  = jsonrpc.CodeInvalidParams
	CodeInternal       = jsonrpc.CodeInternalError
)

// Event is one notification from the server, in the order it was read.
// Params is the notification's params as sent; Decode gives them the
// generated type of the method.
type Event struct {
	Method      string
	Params      json.RawMessage
	EmittedAtMs int64 // the server's emittedAtMs, 0 when absent

	// respond answers a server request delivered as an event (see
	// Options.ToolCallsAsEvents); nil for a notification.
	respond func(result any, rpcErr *RPCError) error
	// delta is the params of an agentMessage delta decoded as the line
	// was read (fastdelta.go); nil for other events.
	delta *AgentMessageDeltaNotification
}

// IsRequest reports whether the event is a server request the consumer
// must answer with Respond.
func (e Event) IsRequest() bool { return e.respond != nil }

// Respond answers a server request delivered as an event: result, or the
// JSON-RPC error rpcErr when it is not nil. It fails for a notification.
func (e Event) Respond(result any, rpcErr *RPCError) error {
	if e.respond == nil {
		return fmt.Errorf("codex: %s is a notification, not a request", e.Method)
	}
	return e.respond(result, rpcErr)
}

// Decode returns the event's params as a pointer to the generated params
// type of its method (for example *TurnCompletedNotification for
// turn/completed). An unknown method is an error.
func (e Event) Decode() (any, error) {
	if e.delta != nil && e.Method == MethodItemAgentMessageDelta {
		p := *e.delta
		return &p, nil
	}
	mk, ok := notificationParams[e.Method]
	if !ok {
		return nil, fmt.Errorf("codex: unknown notification %q", e.Method)
	}
	v := mk()
	if len(e.Params) > 0 {
		if err := json.Unmarshal(e.Params, v); err != nil {
			return nil, fmt.Errorf("codex: %s params: %w", e.Method, err)
		}
	}
	return v, nil
}

// serverRequestFunc answers one server request: a result, or an error
// sent as the JSON-RPC error.
type serverRequestFunc func(ctx context.Context, method string, params json.RawMessage) (any, *RPCError)

// conn is the JSON-RPC peer over one NDJSON stream pair (the Bare dialect
// of internal/jsonrpc): requests and their responses correlated by id,
// notifications queued for Events, server requests answered on goroutines
// of their own. Safe for concurrent use; see Client for the contract.
type conn struct {
	w          io.Writer
	transcript io.Writer
	onBadLine  func(line []byte, err error)
	onRequest  serverRequestFunc
	observe    func(Event)     // sees each event on the reader goroutine, before it is queued
	deliver    func(Event)     // takes each event on the reader goroutine in place of the queue (Options.OnEvent)
	inBand     map[string]bool // server requests delivered on Events, in order
	maxLine    int
	maxQueued  int
	maxBytes   int
	onFull     func() // called when the reader waits for room (tests)

	tmu sync.Mutex // one whole line at a time to the transcript

	// The writer goroutine alone writes to w, the lines in out in order:
	// no caller waits on a write, so an app-server that stops reading its
	// input cannot block a turn, the reader or Close.
	out       []outLine
	outBytes  int
	outWake   chan struct{} // a token when out gains a line
	writeErr  error         // the first failed write; every later line fails with it
	stopW     chan struct{} // closed by stopWriting: write what is queued, then return
	stopOnce  sync.Once
	writerEnd chan struct{} // closed when the writer goroutine has returned

	mu      sync.Mutex
	nextID  int64
	pending map[int64]chan *jsonrpc.Response
	queue   []Event
	queued  int           // bytes of the params in queue
	wake    chan struct{} // a token when the queue gains an event or the conn ends
	room    chan struct{} // a token when the pump takes an event from the queue
	err     error         // why the conn ended; nil while it runs
	done    chan struct{} // closed when the connection ends (the reader's end, or Close)
	readEnd chan struct{} // closed when the reader goroutine has returned
	quit    chan struct{} // closed by stopPump: nobody will take more events
	quitOne sync.Once

	events   chan Event
	reqCtx   context.Context
	reqStop  context.CancelFunc
	handlers sync.WaitGroup
}

func newConn(r io.Reader, w io.Writer, o connOptions) *conn {
	ctx, stop := context.WithCancel(context.Background())
	c := &conn{
		w: w, transcript: o.transcript, onBadLine: o.onBadLine, onRequest: o.onRequest, observe: o.observe, deliver: o.deliver, inBand: o.inBand,
		maxLine: o.maxLine, maxQueued: o.maxQueued, maxBytes: o.maxBytes, onFull: o.onFull,
		room:    make(chan struct{}, 1),
		pending: map[int64]chan *jsonrpc.Response{},
		wake:    make(chan struct{}, 1),
		done:    make(chan struct{}),
		readEnd: make(chan struct{}),
		quit:    make(chan struct{}),
		events:  make(chan Event),
		reqCtx:  ctx, reqStop: stop,
		outWake: make(chan struct{}, 1), stopW: make(chan struct{}), writerEnd: make(chan struct{}),
	}
	go c.read(r)
	if c.deliver == nil {
		go c.pump()
	}
	go c.write()
	return c
}

// outLine is one line queued for the writer, with its newline; res, when
// not nil, receives the write's outcome.
type outLine struct {
	b   []byte
	res chan error
}

type connOptions struct {
	transcript io.Writer
	onBadLine  func(line []byte, err error)
	onRequest  serverRequestFunc
	observe    func(Event)
	deliver    func(Event)
	inBand     map[string]bool
	maxLine    int
	maxQueued  int
	maxBytes   int
	onFull     func()
}

// record writes one transcript line; a failing transcript writer is
// reported as a bad line once per failure and never stops the session.
func (c *conn) record(dir string, line []byte) {
	if c.transcript == nil {
		return
	}
	b, err := TranscriptBytes(dir, line)
	if err == nil {
		c.tmu.Lock()
		_, err = c.transcript.Write(append(b, '\n'))
		c.tmu.Unlock()
	}
	if err != nil && c.onBadLine != nil {
		c.onBadLine(line, fmt.Errorf("codex: transcript: %w", err))
	}
}

// send queues m as one line for the writer and returns at once; the
// channel receives the outcome of its write. It fails when the
// connection has ended, an earlier write failed, or the server has left
// maxUnsent bytes unread (which drops the connection).
func (c *conn) send(m jsonrpc.Message) (<-chan error, error) {
	b, err := jsonrpc.Bare.Encode(m)
	if err != nil {
		return nil, fmt.Errorf("codex: encode: %w", err)
	}
	b = append(b, '\n')
	res := make(chan error, 1)
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return nil, err
	}
	if c.writeErr != nil {
		err := c.writeErr
		c.mu.Unlock()
		return nil, err
	}
	if len(c.out) > 0 && c.outBytes+len(b) > maxUnsent {
		n := c.outBytes
		c.mu.Unlock()
		c.end(fmt.Errorf("codex: the app-server left %d bytes sent to it unread; connection dropped", n))
		return nil, c.closedErr()
	}
	c.out = append(c.out, outLine{b: b, res: res})
	c.outBytes += len(b)
	c.mu.Unlock()
	select {
	case c.outWake <- struct{}{}:
	default:
	}
	return res, nil
}

// write is the writer goroutine: it writes the queued lines in order
// until stopWriting, after which it writes what is queued and returns.
func (c *conn) write() {
	defer close(c.writerEnd)
	for {
		c.mu.Lock()
		if len(c.out) == 0 {
			c.mu.Unlock()
			select {
			case <-c.outWake:
				continue
			case <-c.stopW:
				c.mu.Lock()
				empty := len(c.out) == 0
				c.mu.Unlock()
				if empty {
					return
				}
				continue
			}
		}
		l := c.out[0]
		c.out[0] = outLine{}
		c.out = c.out[1:]
		c.outBytes -= len(l.b)
		err := c.writeErr
		c.mu.Unlock()
		if err == nil {
			c.record(DirSend, l.b[:len(l.b)-1])
			if _, werr := c.w.Write(l.b); werr != nil {
				// The server is gone (or closed its stdin): as closed as
				// a connection gets.
				err = fmt.Errorf("codex: write to app-server: %w (%w)", werr, ErrClosed)
				c.mu.Lock()
				c.writeErr = err
				c.mu.Unlock()
			}
		}
		l.res <- err
	}
}

// stopWriting tells the writer to return once what is queued is written.
func (c *conn) stopWriting() { c.stopOnce.Do(func() { close(c.stopW) }) }

func (c *conn) closedErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return c.err
	}
	return ErrClosed
}

// cutOff is the error of a call to method that the connection's end cut
// off: before it was sent, while it was written (the server had closed
// its stdin: the write failed), or while it waited for its response. The
// same words whichever came first, since which one does is a race
// between the server's exit and our write: the reason the connection
// ended when it has (ErrClosed for a server that just went away), else
// ErrClosed.
func (c *conn) cutOff(method string) error {
	return fmt.Errorf("codex: %s: %w", method, c.closedErr())
}

// isCut reports whether the connection has ended or a write to it failed.
func (c *conn) isCut() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err != nil || c.writeErr != nil
}

// ErrClosed is returned by calls on a connection whose server has ended.
var ErrClosed = errors.New("codex: app-server connection closed")

// call sends a request and waits for its response, decoding the result
// into result (when non-nil). A JSON-RPC error is returned as *RPCError.
// Cancelling ctx stops the wait, not the request.
func (c *conn) call(ctx context.Context, method string, params, result any) error {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return c.cutOff(method)
	}
	c.nextID++
	id := c.nextID
	ch := make(chan *jsonrpc.Response, 1)
	c.pending[id] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}()
	req, err := jsonrpc.NewRequest(jsonrpc.Int64ID(id), method, params)
	if err != nil {
		return fmt.Errorf("codex: encode: %w", err)
	}
	written, err := c.send(req)
	if err != nil {
		if c.isCut() {
			return c.cutOff(method)
		}
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("codex: %s: %w", method, ctx.Err())
		case err := <-written:
			if err != nil {
				return c.cutOff(method)
			}
			written = nil // sent: now the response
		case <-c.done:
			// The response may have been read just before the end.
			select {
			case m := <-ch:
				return decodeResult(method, m, result)
			default:
			}
			return c.cutOff(method)
		case m := <-ch:
			return decodeResult(method, m, result)
		}
	}
}

func decodeResult(method string, m *jsonrpc.Response, result any) error {
	if m.Error != nil {
		return fmt.Errorf("codex: %s: %w", method, (*RPCError)(m.Error))
	}
	if result == nil {
		return nil
	}
	if err := json.Unmarshal(m.Result, result); err != nil {
		return fmt.Errorf("codex: %s result: %w", method, err)
	}
	return nil
}

// notify queues a notification.
func (c *conn) notify(method string, params any) error {
	n, err := jsonrpc.NewNotification(method, params)
	if err != nil {
		return fmt.Errorf("codex: encode: %w", err)
	}
	_, err = c.send(n)
	return err
}

// read is the reader goroutine: it routes every line until the stream
// ends, then fails what is still waiting.
func (c *conn) read(r io.Reader) {
	defer close(c.readEnd)
	if c.deliver != nil {
		defer close(c.events) // after end: the last event was delivered
	}
	lr := jsonrpc.NewReader(r, c.maxLine)
	var err error
	for {
		var line []byte
		line, err = lr.ReadLine()
		var tooLong *jsonrpc.TooLongError
		if errors.As(err, &tooLong) {
			c.bad(nil, fmt.Errorf("codex: %w", err))
			continue
		}
		if err != nil {
			break
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		c.record(DirRecv, line)
		c.route(line)
	}
	if errors.Is(err, io.EOF) {
		err = ErrClosed
	} else {
		err = fmt.Errorf("codex: read from app-server: %w", err)
	}
	c.end(err)
}

// end marks the connection over (the first reason wins) and wakes
// everything waiting on it.
func (c *conn) end(err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
		close(c.done)
		c.reqStop()
	}
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *conn) bad(line []byte, err error) {
	if c.onBadLine != nil {
		c.onBadLine(line, err)
	}
}

// route handles one line read from the server.
func (c *conn) route(line []byte) {
	if ev, ok := deltaLine(line); ok {
		if c.observe != nil {
			c.observe(ev)
		}
		c.enqueue(ev)
		return
	}
	c.routeDecoded(line)
}

// routeDecoded handles one line read from the server, decoded by
// encoding/json: every line deltaLine does not read.
func (c *conn) routeDecoded(line []byte) {
	msg, err := jsonrpc.Bare.Decode(line)
	if err != nil {
		c.bad(line, decodeError(err))
		return
	}
	at, err := emittedAt(line)
	if err != nil {
		c.bad(line, err)
		return
	}
	switch m := msg.(type) {
	case *jsonrpc.Request:
		if c.inBand[m.Method] {
			id := m.ID
			c.enqueue(Event{Method: m.Method, Params: m.Params, respond: func(result any, rpcErr *RPCError) error {
				return c.reply(id, result, rpcErr)
			}})
			return
		}
		c.handlers.Add(1)
		go c.answer(m)
	case *jsonrpc.Notification:
		ev := Event{Method: m.Method, Params: m.Params, EmittedAtMs: at}
		if _, known := notificationParams[m.Method]; !known {
			c.bad(line, fmt.Errorf("codex: unknown notification %q", m.Method))
		}
		if c.observe != nil {
			c.observe(ev)
		}
		c.enqueue(ev)
	case *jsonrpc.Response:
		id, isInt := m.ID.Int64()
		c.mu.Lock()
		ch, ok := c.pending[id]
		c.mu.Unlock()
		if !isInt || !ok {
			c.bad(line, fmt.Errorf("codex: response to no request in flight (id %s)", m.ID))
			return
		}
		ch <- m
	}
}

// decodeError words a line jsonrpc refused as a bad line of the server.
func decodeError(err error) error {
	var pe *jsonrpc.ParseError
	switch {
	case errors.Is(err, jsonrpc.ErrNotObject):
		return errors.New("codex: line is not a JSON object")
	case errors.As(err, &pe):
		return fmt.Errorf("codex: line does not parse: %w", pe.Err)
	case errors.Is(err, jsonrpc.ErrNotMessage):
		return errors.New("codex: line is neither a request, a notification nor a response")
	}
	return fmt.Errorf("codex: %w", err)
}

// emittedAtKey is the member the server adds to its messages beside
// JSON-RPC's: when it sent them.
var emittedAtKey = []byte(`"emittedAtMs"`)

// emittedAt is the server's emittedAtMs of a line (one JSON object, which
// jsonrpc decoded), 0 when absent; a line whose emittedAtMs is not an
// integer does not parse. The server writes it last, `,"emittedAtMs":N}`,
// and there it is read without decoding the line a second time: in valid
// JSON, a member that starts after a ',' or the '{' and ends at the
// object's last '}' is a member of the top-level object, and its last.
// Any other spelling is decoded as encoding/json reads it.
func emittedAt(line []byte) (int64, error) {
	if !bytes.Contains(line, emittedAtKey) {
		return 0, nil
	}
	if body, ok := bytes.CutSuffix(bytes.TrimRight(line, " \t\r\n"), []byte("}")); ok {
		key := append(emittedAtKey[:len(emittedAtKey):len(emittedAtKey)], ':')
		if i := bytes.LastIndex(body, key); i > 0 && (body[i-1] == ',' || body[i-1] == '{') {
			if n, err := strconv.ParseInt(string(body[i+len(key):]), 10, 64); err == nil {
				return n, nil
			}
		}
	}
	var m struct {
		EmittedAtMs *int64 `json:"emittedAtMs"`
	}
	if err := json.Unmarshal(line, &m); err != nil {
		return 0, fmt.Errorf("codex: line does not parse: %w", err)
	}
	if m.EmittedAtMs == nil {
		return 0, nil
	}
	return *m.EmittedAtMs, nil
}

// enqueue queues ev for the pump, on the reader goroutine, or hands it to
// the consumer's deliver there (Options.OnEvent). At the queue's
// bounds it waits for the pump to take an event (one event alone always
// fits): the reader stops reading, so the server's writes wait. The event
// is dropped once nobody will take it.
func (c *conn) enqueue(ev Event) {
	if c.deliver != nil {
		c.deliver(ev)
		return
	}
	size := len(ev.Params)
	c.mu.Lock()
	for len(c.queue) > 0 && (len(c.queue) >= c.maxQueued || c.queued+size > c.maxBytes) {
		c.mu.Unlock()
		if c.onFull != nil {
			c.onFull()
		}
		select {
		case <-c.room:
		case <-c.quit:
			return
		}
		c.mu.Lock()
	}
	c.queue = append(c.queue, ev)
	c.queued += size
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// pump hands queued events to Events in order, and closes it once the
// connection has ended and the queue is empty.
func (c *conn) pump() {
	defer close(c.events)
	for {
		c.mu.Lock()
		if len(c.queue) == 0 {
			over := c.err != nil
			c.mu.Unlock()
			if over {
				return
			}
			select {
			case <-c.wake:
			case <-c.quit:
				return
			}
			continue
		}
		ev := c.queue[0]
		c.queue[0] = Event{}
		c.queue = c.queue[1:]
		c.queued -= len(ev.Params)
		c.mu.Unlock()
		select {
		case c.room <- struct{}{}:
		default:
		}
		select {
		case c.events <- ev:
		case <-c.quit:
			return
		}
	}
}

// stopPump ends the delivery of events: Events is closed, and what was
// not taken is dropped.
func (c *conn) stopPump() {
	c.quitOne.Do(func() { close(c.quit) })
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// answer runs one server request's handler and sends its response.
func (c *conn) answer(m *jsonrpc.Request) {
	defer c.handlers.Done()
	var result any
	var rpcErr *RPCError
	if c.onRequest == nil {
		rpcErr = &RPCError{Code: CodeMethodNotFound, Message: "openmax does not handle " + m.Method}
	} else {
		result, rpcErr = c.onRequest(c.reqCtx, m.Method, m.Params)
	}
	if err := c.reply(m.ID, result, rpcErr); err != nil {
		c.bad(nil, fmt.Errorf("codex: answer %s: %w", m.Method, err))
	}
}

// reply queues the response to the server request id; it does not wait
// for the write. No result is answered as an empty object.
func (c *conn) reply(id jsonrpc.ID, result any, rpcErr *RPCError) error {
	if rpcErr == nil && result == nil {
		result = struct{}{}
	}
	resp, err := jsonrpc.NewResponse(id, result, (*jsonrpc.Error)(rpcErr))
	if err != nil {
		return fmt.Errorf("codex: encode: %w", err)
	}
	_, err = c.send(resp)
	return err
}
