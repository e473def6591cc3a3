// Package script is the scenario language of openmax and the offline
// provider that plays it: a YAML file scripting, request by request, what
// the model streams back (text, thinking, tool calls, usage, finish reasons,
// failures, truncation, delays and stalls) and the HTTP-level faults a real
// endpoint can produce (error statuses with their headers and bodies,
// refused connections, resets mid-body). Waits go through an injectable
// clock, so tests script a one-hour stall and pass it instantly.
//
// The same scenario is played in-process by Provider and over real HTTP, on
// every vendor wire, by package provider/fake.
package script

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/clock"
)

// Scenario is a parsed script file.
type Scenario struct {
	// ContextTokens is the model window to report, 0 for the default.
	ContextTokens int `yaml:"context_tokens,omitempty"`
	// Replies are served in order, one per model request.
	Replies []Reply `yaml:"replies"`
}

// Reply scripts one model response. Either use the shorthand fields (text,
// thinking, tool_calls, usage, finish), which stream in that order and then
// finish (with "tool_calls" when there are calls, else "stop", unless finish
// says otherwise), or list Chunks explicitly, in which case nothing is
// implied: a reply whose chunks carry no finish ends with no completion
// signal, which the engine reports as truncated.
//
// The HTTP-level fields script how the response itself fails: Status makes
// it an HTTP error (with Headers, and Body verbatim or a vendor-shaped body
// built from Code and Message), Refuse drops the connection before any
// response, and ResetAfterBytes resets the connection once that many bytes
// of the streamed body went out.
type Reply struct {
	Text      string     `yaml:"text,omitempty"`
	Thinking  string     `yaml:"thinking,omitempty"`
	ToolCalls []ToolCall `yaml:"tool_calls,omitempty"`
	Usage     *Usage     `yaml:"usage,omitempty"`
	Finish    string     `yaml:"finish,omitempty"`
	Chunks    []Chunk    `yaml:"chunks,omitempty"`

	// Status, when set, makes the reply an HTTP error response (100..599).
	Status int `yaml:"status,omitempty"`
	// Headers are sent with the response (any reply but a refused one),
	// names and values verbatim: Retry-After, retry-after-ms, ...
	Headers map[string]string `yaml:"headers,omitempty"`
	// Body is the error response's body, verbatim. Without it the body is
	// the wire's usual error JSON, carrying Code and Message.
	Body    *string `yaml:"body,omitempty"`
	Code    string  `yaml:"code,omitempty"`
	Message string  `yaml:"message,omitempty"`
	// Refuse drops the connection without any response.
	Refuse bool `yaml:"refuse,omitempty"`
	// ResetAfterBytes resets the connection after that many bytes of the
	// response body.
	ResetAfterBytes *int `yaml:"reset_after_bytes,omitempty"`
}

// Chunk is one step of an explicit reply. Exactly one field is set.
type Chunk struct {
	Text        *string       `yaml:"text,omitempty"`
	Thinking    *string       `yaml:"thinking,omitempty"`
	Signature   *string       `yaml:"signature,omitempty"`
	ToolCall    *ToolCall     `yaml:"tool_call,omitempty"`
	Usage       *Usage        `yaml:"usage,omitempty"`
	Finish      *string       `yaml:"finish,omitempty"`
	Error       *string       `yaml:"error,omitempty"`        // the provider reports a failure (no type)
	StreamError *StreamError  `yaml:"stream_error,omitempty"` // the provider reports a typed failure
	Died        *string       `yaml:"died,omitempty"`         // the stream dies with no completion signal
	Reset       bool          `yaml:"reset,omitempty"`        // the connection is reset here, after the chunks before it
	Retry       *Retry        `yaml:"retry,omitempty"`        // the request is being resent
	Delay       time.Duration `yaml:"delay,omitempty"`        // wait this long (on the clock) before going on
	Stall       bool          `yaml:"stall,omitempty"`        // wait until the turn is cancelled

	// text is Text's part, made when the scenario is parsed, so playing a
	// reply of many text chunks makes no value per chunk (an allocation
	// each, which was most of what the scripted model cost a long reply).
	text provider.Part
}

// StreamError scripts a failure the provider reports inside a successful
// response, such as {type: overloaded_error, message: Overloaded}.
type StreamError struct {
	Type    string `yaml:"type,omitempty"`
	Message string `yaml:"message,omitempty"`
}

// ToolCall scripts a tool call. Args is any YAML value, sent as JSON;
// ArgsJSON, when set, is sent verbatim instead (for malformed arguments).
type ToolCall struct {
	ID   string `yaml:"id,omitempty"`
	Name string `yaml:"name,omitempty"`
	// Namespace is sent on the Responses wire only (a call of a tool inside
	// a namespace tool, as codex offers its dynamic tools).
	Namespace string `yaml:"namespace,omitempty"`
	Args      any    `yaml:"args,omitempty"`
	ArgsJSON  string `yaml:"args_json,omitempty"`
}

// Usage scripts token accounting. ReasoningTokens, the part of
// CompletionTokens spent reasoning, only the Responses wire carries.
type Usage struct {
	PromptTokens     int  `yaml:"prompt_tokens,omitempty"`
	CompletionTokens int  `yaml:"completion_tokens,omitempty"`
	CachedTokens     *int `yaml:"cached_tokens,omitempty"`
	ReasoningTokens  *int `yaml:"reasoning_tokens,omitempty"`
}

// Retry scripts a retry announcement.
type Retry struct {
	Attempt     int    `yaml:"attempt,omitempty"`
	MaxAttempts int    `yaml:"max_attempts,omitempty"`
	Reason      string `yaml:"reason,omitempty"`
}

// Load reads and validates a scenario file.
func Load(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("script: %w", err)
	}
	sc, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("script %s: %w", path, err)
	}
	return sc, nil
}

// Parse decodes and validates a scenario. Unknown keys are errors.
func Parse(data []byte) (*Scenario, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var sc Scenario
	if err := dec.Decode(&sc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("empty scenario")
		}
		return nil, err
	}
	for i, r := range sc.Replies {
		if err := r.validate(); err != nil {
			return nil, fmt.Errorf("reply %d: %w", i+1, err)
		}
		for j := range r.Chunks {
			if c := &r.Chunks[j]; c.Text != nil {
				c.text = provider.TextDelta{Text: *c.Text}
			}
		}
	}
	return &sc, nil
}

func (r Reply) validate() error {
	short := r.Text != "" || r.Thinking != "" || len(r.ToolCalls) > 0 || r.Usage != nil || r.Finish != ""
	if short && len(r.Chunks) > 0 {
		return fmt.Errorf("use either chunks or the shorthand fields (text, thinking, tool_calls, usage, finish), not both")
	}
	switch {
	case r.Refuse:
		if short || len(r.Chunks) > 0 || r.Status != 0 || len(r.Headers) > 0 || r.Body != nil || r.Code != "" || r.Message != "" || r.ResetAfterBytes != nil {
			return fmt.Errorf("refuse drops the connection before any response: it takes no other field")
		}
	case r.Status != 0:
		if r.Status < 100 || r.Status > 599 {
			return fmt.Errorf("status %d is not an HTTP status (100..599)", r.Status)
		}
		if short || len(r.Chunks) > 0 {
			return fmt.Errorf("status %d is an error response: it takes no chunks or shorthand fields (text, thinking, tool_calls, usage, finish)", r.Status)
		}
		if r.ResetAfterBytes != nil {
			return fmt.Errorf("status and reset_after_bytes do not combine")
		}
		if r.Body != nil && (r.Code != "" || r.Message != "") {
			return fmt.Errorf("body is sent verbatim: set body or code/message, not both")
		}
	case r.Body != nil || r.Code != "" || r.Message != "":
		return fmt.Errorf("body, code and message need a status")
	}
	if r.ResetAfterBytes != nil && *r.ResetAfterBytes < 0 {
		return fmt.Errorf("negative reset_after_bytes")
	}
	for name := range r.Headers {
		if name == "" || strings.ContainsAny(name, " :\r\n") {
			return fmt.Errorf("headers: %q is not a header name", name)
		}
	}
	for i, tc := range r.ToolCalls {
		if err := tc.validate(); err != nil {
			return fmt.Errorf("tool_calls[%d]: %w", i, err)
		}
	}
	for i, c := range r.Chunks {
		n := 0
		for _, set := range []bool{c.Text != nil, c.Thinking != nil, c.Signature != nil, c.ToolCall != nil, c.Usage != nil,
			c.Finish != nil, c.Error != nil, c.StreamError != nil, c.Died != nil, c.Reset, c.Retry != nil, c.Delay != 0, c.Stall} {
			if set {
				n++
			}
		}
		if n != 1 {
			return fmt.Errorf("chunk %d: set exactly one of text, thinking, signature, tool_call, usage, finish, error, stream_error, died, reset, retry, delay, stall (got %d)", i+1, n)
		}
		if c.StreamError != nil && c.StreamError.Type == "" && c.StreamError.Message == "" {
			return fmt.Errorf("chunk %d: stream_error needs a type or a message", i+1)
		}
		if c.ToolCall != nil {
			if err := c.ToolCall.validate(); err != nil {
				return fmt.Errorf("chunk %d: tool_call: %w", i+1, err)
			}
		}
		if c.Delay < 0 {
			return fmt.Errorf("chunk %d: negative delay", i+1)
		}
	}
	return nil
}

func (tc ToolCall) validate() error {
	if tc.Name == "" {
		return fmt.Errorf("name is required")
	}
	if tc.ArgsJSON != "" && tc.Args != nil {
		return fmt.Errorf("set args or args_json, not both")
	}
	_, err := tc.rawArgs()
	return err
}

func (tc ToolCall) rawArgs() (json.RawMessage, error) {
	if tc.ArgsJSON != "" {
		return json.RawMessage(tc.ArgsJSON), nil
	}
	if tc.Args == nil {
		return json.RawMessage("{}"), nil
	}
	b, err := json.Marshal(tc.Args)
	if err != nil {
		return nil, fmt.Errorf("args: %w", err)
	}
	return b, nil
}

// Step is one action of a reply as played: deliver Part, or wait Wait on
// the clock, or (Stall) wait until the client goes away.
type Step struct {
	Part  provider.Part
	Wait  time.Duration
	Stall bool
	// Died marks the end of the stream with no completion signal; Part is
	// then the Error the in-process provider yields for it.
	Died bool
	// Reset marks the end of the stream in a connection reset (over HTTP,
	// after what was written so far); Part is then the Error the
	// in-process provider yields for it.
	Reset bool
	// Implied marks a Finish the shorthand implied ("stop" or "tool_calls")
	// rather than one the scenario named; a wire may render it in its own
	// vocabulary.
	Implied bool
}

// Steps expands the index-th reply (0-based; it numbers default tool call
// ids) into the steps it plays. Provider-reported failures are Error parts
// whose Err is a *provider.StreamError. HTTP-level fields (status, refuse,
// reset_after_bytes, headers) are not steps; the player reads them off the
// reply.
func (r Reply) Steps(index int) []Step { return slices.Collect(r.StepSeq(index)) }

// StepSeq yields what Steps returns, one step at a time, building each
// only when it is asked for: a reply of many chunks starts streaming at
// once instead of after all its parts are made.
func (r Reply) StepSeq(index int) iter.Seq[Step] {
	return func(yield func(Step) bool) {
		if len(r.Chunks) == 0 {
			for _, st := range r.wholeSteps(index) {
				if !yield(st) {
					return
				}
			}
			return
		}
		for i := range r.Chunks {
			if !yield(r.Chunks[i].step(index, i)) { // by pointer: a Chunk is a dozen words
				return
			}
		}
	}
}

// wholeSteps are the steps of a reply given whole (no chunks).
func (r Reply) wholeSteps(index int) []Step {
	if r.Status != 0 || r.Refuse {
		return nil
	}
	var out []Step
	if r.Thinking != "" {
		out = append(out, Step{Part: provider.ThinkingDelta{Text: r.Thinking}})
	}
	if r.Text != "" {
		out = append(out, Step{Part: provider.TextDelta{Text: r.Text}})
	}
	for i, tc := range r.ToolCalls {
		out = append(out, Step{Part: provider.ToolCallPart{Call: tc.call(index, i)}})
	}
	if r.Usage != nil {
		out = append(out, Step{Part: r.Usage.part()})
	}
	finish, implied := r.Finish, false
	if finish == "" {
		finish, implied = "stop", true
		if len(r.ToolCalls) > 0 {
			finish = "tool_calls"
		}
	}
	return append(out, Step{Part: provider.Finish{Reason: finish}, Implied: implied})
}

// step is the step of chunk i of reply index.
func (c *Chunk) step(index, i int) Step {
	var s Step
	switch {
	case c.Text != nil:
		if d, ok := c.text.(provider.TextDelta); ok && d.Text == *c.Text {
			s.Part = c.text // as parsed (a chunk changed since is made anew)
			break
		}
		s.Part = provider.TextDelta{Text: *c.Text}
	case c.Thinking != nil:
		s.Part = provider.ThinkingDelta{Text: *c.Thinking}
	case c.Signature != nil:
		s.Part = provider.ThinkingDelta{Signature: *c.Signature}
	case c.ToolCall != nil:
		s.Part = provider.ToolCallPart{Call: c.ToolCall.call(index, i)}
	case c.Usage != nil:
		s.Part = c.Usage.part()
	case c.Finish != nil:
		s.Part = provider.Finish{Reason: *c.Finish}
	case c.Error != nil:
		s.Part = provider.Error{Err: &provider.StreamError{Message: *c.Error}}
	case c.StreamError != nil:
		s.Part = provider.Error{Err: &provider.StreamError{Type: c.StreamError.Type, Message: c.StreamError.Message}}
	case c.Died != nil:
		s.Part = provider.Error{Err: fmt.Errorf("%w: %s", provider.ErrIncomplete, *c.Died)}
		s.Died = true
	case c.Reset:
		s.Part = provider.Error{Err: errReset}
		s.Reset = true
	case c.Retry != nil:
		s.Part = provider.Retry{Attempt: c.Retry.Attempt, MaxAttempts: c.Retry.MaxAttempts, Reason: c.Retry.Reason}
	case c.Delay > 0:
		s.Wait = c.Delay
	case c.Stall:
		s.Stall = true
	}
	return s
}

// HTTPError is the failure an HTTP error reply (Status set) stands for,
// as a vendor client would classify it: the scripted code and message (or,
// with a verbatim body, what that body carries) and the wait its headers
// ask for, read against now.
func (r Reply) HTTPError(now time.Time) *provider.HTTPError {
	e := &provider.HTTPError{Status: r.Status, Code: r.Code, Message: r.Message}
	if r.Body != nil {
		e.Code, e.Message = provider.ParseErrorBody([]byte(*r.Body))
	}
	e.RetryAfter, e.HasRetryAfter = provider.ParseRetryAfter(r.Header(), now)
	return e
}

// Header returns the scripted headers as an http.Header (names
// canonicalized, for lookups).
func (r Reply) Header() http.Header {
	h := make(http.Header, len(r.Headers))
	for k, v := range r.Headers {
		h.Add(k, v)
	}
	return h
}

func (tc ToolCall) call(reply, i int) provider.ToolCall {
	id := tc.ID
	if id == "" {
		id = fmt.Sprintf("call_%d_%d", reply+1, i+1)
	}
	args, _ := tc.rawArgs() // validated by Parse
	return provider.ToolCall{ID: id, Name: tc.Name, Namespace: tc.Namespace, Args: args}
}

func (u Usage) part() provider.Usage {
	return provider.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, CachedTokens: u.CachedTokens,
		ReasoningTokens: u.ReasoningTokens}
}

// Provider plays a scenario: the n-th request gets the n-th reply. It is
// safe for concurrent use.
type Provider struct {
	clock    clock.Clock
	scenario *Scenario

	mu       sync.Mutex
	next     int
	requests []provider.Request
}

// New returns a provider playing sc, waiting on c (nil means the real clock).
func New(sc *Scenario, c clock.Clock) *Provider {
	if c == nil {
		c = clock.Real{}
	}
	return &Provider{clock: c, scenario: sc}
}

// Requests returns the requests received so far.
func (p *Provider) Requests() []provider.Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]provider.Request(nil), p.requests...)
}

// Stream serves the next scripted reply. HTTP-level faults become the
// failures a vendor client reports for them: a status an
// *provider.HTTPError, a refused connection an unreachable
// *provider.TransportError, and a reset an incomplete stream (approximated
// as a reset after every chunk before the completion signal).
func (p *Provider) Stream(ctx context.Context, req provider.Request) iter.Seq[provider.Part] {
	p.mu.Lock()
	index := p.next
	p.next++
	p.requests = append(p.requests, req)
	p.mu.Unlock()
	return func(yield func(provider.Part) bool) {
		if index >= len(p.scenario.Replies) {
			yield(provider.Error{Err: fmt.Errorf("script: no reply left for request %d (the scenario has %d)", index+1, len(p.scenario.Replies))})
			return
		}
		r := p.scenario.Replies[index]
		switch {
		case r.Refuse:
			yield(provider.Error{Err: &provider.TransportError{Err: errors.New("connection refused (scripted)"), Unreachable: true}})
			return
		case r.Status != 0:
			yield(provider.Error{Err: r.HTTPError(p.clock.Now())})
			return
		}
		reset := r.ResetAfterBytes != nil
		for s := range r.StepSeq(index) {
			if ctx.Err() != nil {
				return
			}
			switch {
			case s.Stall:
				<-ctx.Done()
				return
			case s.Wait > 0:
				if clock.Sleep(ctx, p.clock, s.Wait) != nil {
					return
				}
			default:
				if _, ok := s.Part.(provider.Finish); ok && reset {
					yield(provider.Error{Err: errReset})
					return
				}
				if !yield(s.Part) {
					return
				}
				if _, ok := s.Part.(provider.Error); ok {
					return // a failed reply ends with its Error
				}
			}
		}
		if reset && ctx.Err() == nil {
			yield(provider.Error{Err: errReset})
		}
	}
}

var errReset = fmt.Errorf("%w: connection reset (scripted)", provider.ErrIncomplete)
