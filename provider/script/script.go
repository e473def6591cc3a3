// Package script is the scenario language of openmax and the offline
// provider that plays it: a YAML file scripting, request by request, what
// the model streams back (text, thinking, tool calls, usage, finish reasons,
// failures, truncation, delays and stalls). Waits go through an injectable
// clock, so tests script a one-hour stall and pass it instantly.
package script

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/clock"
)

// Scenario is a parsed script file.
type Scenario struct {
	// ContextTokens is the model window to report, 0 for the default.
	ContextTokens int `yaml:"context_tokens"`
	// Replies are served in order, one per model request.
	Replies []Reply `yaml:"replies"`
}

// Reply scripts one model response. Either use the shorthand fields (text,
// thinking, tool_calls, usage, finish), which stream in that order and then
// finish (with "tool_calls" when there are calls, else "stop", unless finish
// says otherwise), or list Chunks explicitly, in which case nothing is
// implied: a reply whose chunks carry no finish ends with no completion
// signal, which the engine reports as truncated.
type Reply struct {
	Text      string     `yaml:"text"`
	Thinking  string     `yaml:"thinking"`
	ToolCalls []ToolCall `yaml:"tool_calls"`
	Usage     *Usage     `yaml:"usage"`
	Finish    string     `yaml:"finish"`
	Chunks    []Chunk    `yaml:"chunks"`
}

// Chunk is one step of an explicit reply. Exactly one field is set.
type Chunk struct {
	Text      *string       `yaml:"text"`
	Thinking  *string       `yaml:"thinking"`
	Signature *string       `yaml:"signature"`
	ToolCall  *ToolCall     `yaml:"tool_call"`
	Usage     *Usage        `yaml:"usage"`
	Finish    *string       `yaml:"finish"`
	Error     *string       `yaml:"error"` // the provider reports a failure
	Died      *string       `yaml:"died"`  // the stream dies with no completion signal
	Retry     *Retry        `yaml:"retry"` // the request is being resent
	Delay     time.Duration `yaml:"delay"` // wait this long (on the clock) before going on
	Stall     bool          `yaml:"stall"` // wait until the turn is cancelled
}

// ToolCall scripts a tool call. Args is any YAML value, sent as JSON;
// ArgsJSON, when set, is sent verbatim instead (for malformed arguments).
type ToolCall struct {
	ID       string `yaml:"id"`
	Name     string `yaml:"name"`
	Args     any    `yaml:"args"`
	ArgsJSON string `yaml:"args_json"`
}

// Usage scripts token accounting.
type Usage struct {
	PromptTokens     int  `yaml:"prompt_tokens"`
	CompletionTokens int  `yaml:"completion_tokens"`
	CachedTokens     *int `yaml:"cached_tokens"`
}

// Retry scripts a retry announcement.
type Retry struct {
	Attempt     int    `yaml:"attempt"`
	MaxAttempts int    `yaml:"max_attempts"`
	Reason      string `yaml:"reason"`
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
	}
	return &sc, nil
}

func (r Reply) validate() error {
	short := r.Text != "" || r.Thinking != "" || len(r.ToolCalls) > 0 || r.Usage != nil || r.Finish != ""
	if short && len(r.Chunks) > 0 {
		return fmt.Errorf("use either chunks or the shorthand fields (text, thinking, tool_calls, usage, finish), not both")
	}
	for i, tc := range r.ToolCalls {
		if err := tc.validate(); err != nil {
			return fmt.Errorf("tool_calls[%d]: %w", i, err)
		}
	}
	for i, c := range r.Chunks {
		n := 0
		for _, set := range []bool{c.Text != nil, c.Thinking != nil, c.Signature != nil, c.ToolCall != nil, c.Usage != nil,
			c.Finish != nil, c.Error != nil, c.Died != nil, c.Retry != nil, c.Delay != 0, c.Stall} {
			if set {
				n++
			}
		}
		if n != 1 {
			return fmt.Errorf("chunk %d: set exactly one of text, thinking, signature, tool_call, usage, finish, error, died, retry, delay, stall (got %d)", i+1, n)
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

// steps expands a reply into the parts it streams and the waits between
// them (a step with wait set pauses; one with stall waits for cancellation).
func (r Reply) steps(index int) []step {
	if len(r.Chunks) == 0 {
		var out []step
		if r.Thinking != "" {
			out = append(out, step{part: provider.ThinkingDelta{Text: r.Thinking}})
		}
		if r.Text != "" {
			out = append(out, step{part: provider.TextDelta{Text: r.Text}})
		}
		for i, tc := range r.ToolCalls {
			out = append(out, step{part: provider.ToolCallPart{Call: tc.call(index, i)}})
		}
		if r.Usage != nil {
			out = append(out, step{part: r.Usage.part()})
		}
		finish := r.Finish
		if finish == "" {
			finish = "stop"
			if len(r.ToolCalls) > 0 {
				finish = "tool_calls"
			}
		}
		return append(out, step{part: provider.Finish{Reason: finish}})
	}
	out := make([]step, 0, len(r.Chunks))
	for i, c := range r.Chunks {
		var s step
		switch {
		case c.Text != nil:
			s.part = provider.TextDelta{Text: *c.Text}
		case c.Thinking != nil:
			s.part = provider.ThinkingDelta{Text: *c.Thinking}
		case c.Signature != nil:
			s.part = provider.ThinkingDelta{Signature: *c.Signature}
		case c.ToolCall != nil:
			s.part = provider.ToolCallPart{Call: c.ToolCall.call(index, i)}
		case c.Usage != nil:
			s.part = c.Usage.part()
		case c.Finish != nil:
			s.part = provider.Finish{Reason: *c.Finish}
		case c.Error != nil:
			s.part = provider.Error{Err: errors.New(*c.Error)}
		case c.Died != nil:
			s.part = provider.Error{Err: fmt.Errorf("%w: %s", provider.ErrIncomplete, *c.Died)}
		case c.Retry != nil:
			s.part = provider.Retry{Attempt: c.Retry.Attempt, MaxAttempts: c.Retry.MaxAttempts, Reason: c.Retry.Reason}
		case c.Delay > 0:
			s.wait = c.Delay
		case c.Stall:
			s.stall = true
		}
		out = append(out, s)
	}
	return out
}

func (tc ToolCall) call(reply, i int) provider.ToolCall {
	id := tc.ID
	if id == "" {
		id = fmt.Sprintf("call_%d_%d", reply+1, i+1)
	}
	args, _ := tc.rawArgs() // validated by Parse
	return provider.ToolCall{ID: id, Name: tc.Name, Args: args}
}

func (u Usage) part() provider.Usage {
	return provider.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, CachedTokens: u.CachedTokens}
}

type step struct {
	part  provider.Part
	wait  time.Duration
	stall bool
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

// Stream serves the next scripted reply.
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
		for _, s := range p.scenario.Replies[index].steps(index) {
			if ctx.Err() != nil {
				return
			}
			switch {
			case s.stall:
				<-ctx.Done()
				return
			case s.wait > 0:
				if clock.Sleep(ctx, p.clock, s.wait) != nil {
					return
				}
			default:
				if !yield(s.part) {
					return
				}
			}
		}
	}
}
