// Package fake serves a scenario (package provider/script) over real HTTP as
// a fake model vendor speaking three wires: OpenAI Chat Completions, the
// OpenAI Responses API and Anthropic Messages. Each request, on any wire,
// consumes the next reply of the scenario and gets it rendered the way the
// real API would send it: an SSE stream when the request asks for one, a
// complete JSON response otherwise, or the HTTP-level fault the reply
// scripts (an error status with its headers and body, a refused
// connection, a reset mid-body).
//
// Everything that waits goes through the injected clock, and every id and
// timestamp in a body is derived from the request number, so a transcript
// of a session against the fake is byte-stable.
package fake

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/anthropic"
	"github.com/openmax/openmax/provider/clock"
	"github.com/openmax/openmax/provider/script"
)

// Options configure a Server.
type Options struct {
	// Clock times scripted delays and stamps the Date header; nil means
	// the wall clock.
	Clock clock.Clock
}

// Wires a request can speak.
const (
	WireOpenAI    = "openai"
	WireAnthropic = "anthropic"
	// WireResponses is the OpenAI Responses API (POST /v1/responses): a
	// scenario finish of length, max_output_tokens, max_tokens or
	// content_filter is response.incomplete, any other
	// response.completed, and an in-stream failure response.failed.
	WireResponses = "responses"
)

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
	// Wire is WireOpenAI, WireResponses or WireAnthropic, or empty for a
	// request no route matched.
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

func route(r *http.Request) string {
	if r.Method != http.MethodPost {
		return ""
	}
	for wire, c := range codecs {
		if slices.Contains(c.paths, r.URL.Path) {
			return wire
		}
	}
	return ""
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

	wire := route(r)
	if r.ContentLength > MaxRequestBody {
		// Refused unread: a declared size over the cap is never buffered.
		writeJSON(w, http.StatusRequestEntityTooLarge, errorBody(wire, http.StatusRequestEntityTooLarge, "request_too_large",
			fmt.Sprintf("fake provider: the request body is %d bytes, over the limit of %d (%d MiB)", r.ContentLength, MaxRequestBody, MaxRequestBody>>20)))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBody)) // to the end, so a client going away cancels ctx
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		writeJSON(w, http.StatusRequestEntityTooLarge, errorBody(wire, http.StatusRequestEntityTooLarge, "request_too_large",
			fmt.Sprintf("fake provider: the request body is over the limit of %d bytes (%d MiB)", MaxRequestBody, MaxRequestBody>>20)))
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body, Wire: wire})
	s.mu.Unlock()

	w.Header().Set("Date", s.clock.Now().UTC().Format(http.TimeFormat))
	if wire == "" {
		writeJSON(w, http.StatusNotFound, anthropic.HTTPErrorBody(http.StatusNotFound, "not_found_error",
			fmt.Sprintf("fake provider: no route for %s %s (POST /v1/chat/completions, /chat/completions, /v1/responses, /responses or /v1/messages)", r.Method, r.URL.Path)))
		return
	}
	var in struct {
		Model  string `json:"model"`
		Stream bool   `json:"stream"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		writeJSON(w, http.StatusBadRequest, errorBody(wire, http.StatusBadRequest, "invalid_request_error", "fake provider: the request body is not JSON: "+err.Error()))
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
		writeJSON(w, http.StatusInternalServerError, errorBody(wire, http.StatusInternalServerError, "scenario_exhausted",
			fmt.Sprintf("fake provider: no reply left for request %d (the scenario has %d)", index+1, len(s.sc.Replies))))
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
	wire  string
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
		body = errorBody(p.wire, p.reply.Status, p.reply.Code, p.reply.Message)
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
		return provider.Finish{Reason: codecOf(p.wire).impliedFinish(f.Reason)}
	}
	return s.Part
}

func (p *play) stream() {
	p.header("text/event-stream; charset=utf-8")
	p.w.Header().Set("Cache-Control", "no-cache")
	p.w.WriteHeader(http.StatusOK)
	steps := p.reply.Steps(p.n - 1)
	st := codecOf(p.wire).stream(p.n, p.model, steps)
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
				p.header("application/json")
				p.w.WriteHeader(status)
				p.w.Write(errorBody(p.wire, status, se.Type, se.Message)) //nolint:errcheck
				return
			}
			parts = append(parts, p.part(step))
		}
	}
	body, ok := codecOf(p.wire).whole(p.n, p.model, parts)
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

// errorBody is a wire's usual error JSON. code is the vendor's error code
// or type; empty takes the usual type for the status.
func errorBody(wire string, status int, code, message string) []byte {
	return codecOf(wire).errorBody(status, code, message)
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body) //nolint:errcheck // the client went away
}
