// Package fake serves a scenario (package provider/script) over real HTTP as
// a fake model vendor speaking every wire in the registry (provider/codec;
// the built-in ones are OpenAI Chat Completions, the OpenAI Responses API
// and Anthropic Messages). A POST to one of a wire's endpoints consumes the
// next reply of the scenario and gets it rendered the way the real API
// would send it, by the wire's own encoders: its event stream when the
// request asks for one, a complete JSON response otherwise, or the
// HTTP-level fault the reply scripts (an error status with its headers and
// body, a refused connection, a reset mid-body). A request no wire claims
// is a 404 in no vendor's shape, saying so.
//
// Everything that waits goes through the injected clock, and every id and
// timestamp in a body is derived from the request number, so a transcript
// of a session against the fake is byte-stable.
package fake

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/clock"
	"github.com/openmax/openmax/provider/codec"
	"github.com/openmax/openmax/provider/script"
	_ "github.com/openmax/openmax/provider/vendors" // every built-in wire
)

// Options configure a Server.
type Options struct {
	// Clock times scripted delays and stamps the Date header; nil means
	// the wall clock.
	Clock clock.Clock
}

// Created is the "created" (Responses: "created_at") timestamp of every
// OpenAI object the fake renders (2026-01-01T00:00:00Z), fixed so bodies
// are byte-stable.
const Created = 1767225600

// defaultModel names the model in a response when the request named none.
const defaultModel = "fake-model"

// Request is one request the server received.
type Request struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte
	// Wire is the name of the wire that served the request (openai,
	// responses, anthropic; codec.Info.Name), or empty for a request no
	// route matched.
	Wire string
}

// Server plays a scenario over HTTP. It is safe for concurrent use; the
// replies are consumed in the order the requests arrive.
type Server struct {
	sc    *script.Scenario
	clock clock.Clock

	ctx    context.Context // cancelled by Close: ends every wait
	cancel context.CancelFunc

	mu       sync.Mutex
	idle     *sync.Cond // signalled when active drops to 0
	active   int        // handlers running
	closed   bool
	next     int // replies consumed
	requests []Request
	srv      *http.Server

	afterHandle func() // test hook, called as each handler returns
}

// New returns a server playing sc.
func New(sc *script.Scenario, opts Options) *Server {
	c := opts.Clock
	if c == nil {
		c = clock.Real{}
	}
	if sc == nil {
		sc = &script.Scenario{}
	}
	s := &Server{sc: sc, clock: c}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.idle = sync.NewCond(&s.mu)
	return s
}

// Handler returns the server's HTTP handler, for mounting it elsewhere
// (httptest, a mux). Close still ends its waits.
func (s *Server) Handler() http.Handler { return http.HandlerFunc(s.serve) }

// Start listens on addr (such as "127.0.0.1:0") and serves in the
// background. It returns the base URL, "http://HOST:PORT" with no path: an
// OpenAI client (Chat Completions or Responses) takes base+"/v1", an
// Anthropic client base.
func (s *Server) Start(addr string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return "", errors.New("fake provider: server closed")
	}
	if s.srv != nil {
		return "", errors.New("fake provider: already started")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("fake provider: %w", err)
	}
	s.srv = &http.Server{Handler: s.Handler(), ErrorLog: log.New(io.Discard, "", 0)}
	go s.srv.Serve(ln) //nolint:errcheck // returns ErrServerClosed on Close
	return "http://" + ln.Addr().String(), nil
}

// Close stops the server: it ends every delay and stall, closes the
// listener and the connections, and returns once every handler has.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	srv := s.srv
	s.mu.Unlock()
	var err error
	if srv != nil {
		err = srv.Close() // first, so a stalled stream is cut, not ended
	}
	s.cancel()
	s.mu.Lock()
	for s.active > 0 {
		s.idle.Wait()
	}
	s.mu.Unlock()
	return err
}

// Requests returns what the server received so far, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.requests))
	for i, r := range s.requests {
		r.Header = r.Header.Clone()
		r.Body = bytes.Clone(r.Body)
		out[i] = r
	}
	return out
}

// route is the wire a request belongs to (nil with the registry's error
// when none claims it) and whether the server answers it: a POST to one
// of the wire's endpoints.
func route(r *http.Request) (w codec.Wire, served bool, err error) {
	w, claim, err := codec.ForRequest(codec.NewRequest(r))
	return w, err == nil && claim == codec.ClaimEndpoint && r.Method == http.MethodPost, err
}

// routes lists what the server answers: POST to every wire's endpoints.
func routes() string {
	var eps []string
	for _, w := range codec.Wires() {
		eps = append(eps, w.Info().Endpoints...)
	}
	if len(eps) > 1 {
		return "POST " + strings.Join(eps[:len(eps)-1], ", ") + " or " + eps[len(eps)-1]
	}
	return "POST " + strings.Join(eps, "")
}

// MaxRequestBody is the largest request body the server reads (32 MiB). A
// request that declares a longer Content-Length is answered 413 without
// its body being read; one that sends more (chunked) is cut off there and
// answered 413. Neither is recorded in Requests.
const MaxRequestBody = 32 << 20

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	s.active++
	s.mu.Unlock()
	defer func() {
		if s.afterHandle != nil {
			s.afterHandle()
		}
		s.mu.Lock()
		s.active--
		if s.active == 0 {
			s.idle.Broadcast()
		}
		s.mu.Unlock()
	}()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(s.ctx, cancel)()

	wire, served, unknown := route(r)
	if r.ContentLength > MaxRequestBody {
		// Refused unread: a declared size over the cap is never buffered.
		writeError(w, wire, http.StatusRequestEntityTooLarge, "request_too_large",
			fmt.Sprintf("fake provider: the request body is %d bytes, over the limit of %d (%d MiB)", r.ContentLength, MaxRequestBody, MaxRequestBody>>20))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBody)) // to the end, so a client going away cancels ctx
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		writeError(w, wire, http.StatusRequestEntityTooLarge, "request_too_large",
			fmt.Sprintf("fake provider: the request body is over the limit of %d bytes (%d MiB)", MaxRequestBody, MaxRequestBody>>20))
		return
	}
	name := ""
	if served {
		name = wire.Info().Name
	}
	s.mu.Lock()
	s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body, Wire: name})
	s.mu.Unlock()

	w.Header().Set("Date", s.clock.Now().UTC().Format(http.TimeFormat))
	if !served {
		why := ""
		if unknown != nil {
			why = unknown.Error() + "; "
		}
		// A wire that only hints at the request answers in its shape.
		writeError(w, wire, http.StatusNotFound, "", fmt.Sprintf("fake provider: no route for %s %s (%sserves %s)", r.Method, r.URL.Path, why, routes()))
		return
	}
	in, err := wire.ReadRequest(codec.NewRequest(r), body)
	if err != nil {
		writeError(w, wire, http.StatusBadRequest, "invalid_request_error", "fake provider: the request body is not JSON: "+err.Error())
		return
	}
	if in.Model == "" {
		in.Model = defaultModel
	}

	s.mu.Lock()
	index := s.next
	s.next++
	s.mu.Unlock()
	if index >= len(s.sc.Replies) {
		writeError(w, wire, http.StatusInternalServerError, "scenario_exhausted",
			fmt.Sprintf("fake provider: no reply left for request %d (the scenario has %d)", index+1, len(s.sc.Replies)))
		return
	}
	reply := s.sc.Replies[index]
	p := &play{s: s, ctx: ctx, w: w, wire: wire, reply: reply, n: index + 1, model: in.Model, limit: -1}
	if reply.ResetAfterBytes != nil {
		p.limit = *reply.ResetAfterBytes
	}
	switch {
	case reply.Refuse:
		reset(w)
	case reply.Status != 0:
		p.httpError()
	case in.Stream:
		p.stream()
	default:
		p.complete()
	}
}

// play renders one reply.
type play struct {
	s     *Server
	ctx   context.Context
	w     http.ResponseWriter
	wire  codec.Wire
	reply script.Reply
	n     int // the request number, 1-based
	model string

	limit   int // body bytes before a reset, -1 for none
	written int
}

// errCut stops rendering once the connection was reset (or the client went
// away).
var errCut = errors.New("fake provider: connection cut")

// header sets the reply's scripted headers over the defaults, names kept
// verbatim.
func (p *play) header(contentType string) {
	h := p.w.Header()
	h.Set("Content-Type", contentType)
	for k, v := range p.reply.Headers {
		h.Del(k)
		h[k] = []string{v}
	}
}

func (p *play) httpError() {
	p.header("application/json")
	var body []byte
	if p.reply.Body != nil {
		body = []byte(*p.reply.Body)
	} else {
		var extra http.Header
		body, extra = p.wire.HTTPError(codec.Failure{Status: p.reply.Status, Type: p.reply.Code, Message: p.reply.Message})
		for k, v := range extra {
			if _, scripted := p.reply.Headers[k]; !scripted {
				p.w.Header()[k] = v
			}
		}
	}
	p.w.WriteHeader(p.reply.Status)
	p.w.Write(body) //nolint:errcheck // the client went away
}

// write sends body bytes and flushes them, resetting the connection once
// the reply's reset_after_bytes went out.
func (p *play) write(b []byte) error {
	if p.limit >= 0 && p.written+len(b) >= p.limit {
		b = b[:p.limit-p.written]
		p.written += len(b)
		if len(b) > 0 {
			p.w.Write(b) //nolint:errcheck // reset next anyway
		}
		http.NewResponseController(p.w).Flush() //nolint:errcheck
		reset(p.w)
		p.limit = -1
		return errCut
	}
	p.written += len(b)
	if _, err := p.w.Write(b); err != nil {
		return errCut
	}
	if err := http.NewResponseController(p.w).Flush(); err != nil {
		return errCut
	}
	return nil
}

// finish ends the body: a reset the reply still owes happens now.
func (p *play) finish() {
	if p.limit >= 0 {
		http.NewResponseController(p.w).Flush() //nolint:errcheck
		reset(p.w)
	}
}

// reset takes the connection over and closes it so the peer sees a reset
// (SO_LINGER 0), after whatever was already flushed.
func reset(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(interface{ SetLinger(int) error }); ok {
		tc.SetLinger(0) //nolint:errcheck
	}
	conn.Close()
}

// closeConn takes the connection over and closes it cleanly, with no
// response: a server that died before answering.
func closeConn(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err == nil {
		conn.Close()
	}
}

// part is a step's part as the wire says it: a finish the shorthand
// implied is said the wire's way (on Anthropic stop → end_turn,
// tool_calls → tool_use); a finish the scenario named goes out verbatim.
func (p *play) part(s script.Step) provider.Part {
	if f, ok := s.Part.(provider.Finish); ok && s.Implied {
		return provider.Finish{Reason: p.wire.ImpliedFinish(f.Reason)}
	}
	return s.Part
}

func (p *play) stream() {
	p.header(p.wire.Info().StreamType)
	p.w.Header().Set("Cache-Control", "no-cache")
	p.w.WriteHeader(http.StatusOK)
	steps := p.reply.Steps(p.n - 1)
	var parts []provider.Part
	for _, s := range steps {
		if s.Part != nil {
			parts = append(parts, s.Part)
		}
	}
	st := p.wire.NewEncoder(codec.Reply{Seq: p.n, Model: p.model, Created: Created, Parts: parts})
	if p.write(st.Open()) != nil {
		return
	}
	for _, step := range steps {
		switch {
		case step.Stall:
			<-p.ctx.Done()
			return
		case step.Wait > 0:
			if clock.Sleep(p.ctx, p.s.clock, step.Wait) != nil {
				return
			}
		case step.Died:
			p.finish()
			return
		case step.Reset:
			http.NewResponseController(p.w).Flush() //nolint:errcheck
			reset(p.w)
			return
		default:
			ev := st.Part(p.part(step))
			if len(ev) > 0 && p.write(ev) != nil {
				return
			}
			if _, end := step.Part.(provider.Error); end {
				p.finish()
				return
			}
		}
	}
	if ev := st.Close(); len(ev) > 0 && p.write(ev) != nil {
		return
	}
	p.finish()
}

// complete answers a request that did not ask for a stream: it plays the
// waits, then sends the whole response. A reply that dies (or never
// finishes) closes the connection without a response; one that fails
// in-stream becomes an HTTP error of that type.
func (p *play) complete() {
	var parts []provider.Part
	for _, step := range p.reply.Steps(p.n - 1) {
		switch {
		case step.Stall:
			<-p.ctx.Done()
			return
		case step.Wait > 0:
			if clock.Sleep(p.ctx, p.s.clock, step.Wait) != nil {
				return
			}
		case step.Died:
			closeConn(p.w)
			return
		case step.Reset:
			reset(p.w)
			return
		default:
			if e, ok := step.Part.(provider.Error); ok {
				se := provider.StreamErrorOf(e.Err)
				status := http.StatusInternalServerError
				switch {
				case strings.Contains(se.Type, "overloaded"):
					status = 529
				case strings.Contains(se.Type, "rate_limit"):
					status = http.StatusTooManyRequests
				}
				if fs, ok := p.wire.(codec.FailureStatuser); ok {
					if st, ok := fs.FailureStatus(se.Type); ok {
						status = st
					}
				}
				body, extra := p.wire.HTTPError(codec.Failure{Status: status, Type: se.Type, Message: se.Message})
				p.header("application/json")
				for k, v := range extra {
					p.w.Header()[k] = v
				}
				p.w.WriteHeader(status)
				p.w.Write(body) //nolint:errcheck
				return
			}
			parts = append(parts, p.part(step))
		}
	}
	body, ok := p.wire.Whole(codec.Reply{Seq: p.n, Model: p.model, Created: Created, Parts: parts})
	if !ok {
		closeConn(p.w)
		return
	}
	p.header("application/json")
	if p.limit < 0 {
		p.w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	}
	p.w.WriteHeader(http.StatusOK)
	if p.write(body) == nil {
		p.finish()
	}
}

// writeError answers with status: the wire's error body when a wire
// claims the request (code its error type, "" for the wire's usual one),
// and otherwise, for a request no wire claims, the message as plain text,
// in no vendor's shape.
func writeError(w http.ResponseWriter, wire codec.Wire, status int, code, message string) {
	if wire == nil {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(status)
		w.Write([]byte(message + "\n")) //nolint:errcheck // the client went away
		return
	}
	body, extra := wire.HTTPError(codec.Failure{Status: status, Type: code, Message: message})
	for k, v := range extra {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body) //nolint:errcheck // the client went away
}
