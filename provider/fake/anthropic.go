package fake

import (
	"encoding/json"
	"fmt"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/script"
)

// The Anthropic Messages wire.

type anthropicError struct {
	Type  string               `json:"type"`
	Error anthropicErrorDetail `json:"error"`
}

type anthropicErrorDetail struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// anthropicErrorType is the error type Anthropic gives a status when the
// script named no code.
func anthropicErrorType(status int) string {
	switch status {
	case 401:
		return "authentication_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 413:
		return "request_too_large"
	case 429:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}

// anthropicStopReason maps a finish to the wire: a finish the shorthand
// implied is said the Anthropic way (stop → end_turn, tool_calls →
// tool_use); a finish the scenario named goes out verbatim.
func anthropicStopReason(s script.Step) string {
	r := s.Part.(provider.Finish).Reason
	if s.Implied {
		switch r {
		case "stop":
			return "end_turn"
		case "tool_calls":
			return "tool_use"
		}
	}
	return r
}

type anthropicUsage struct {
	InputTokens          int  `json:"input_tokens"`
	CacheReadInputTokens *int `json:"cache_read_input_tokens,omitempty"`
	OutputTokens         int  `json:"output_tokens"`
}

// anthropicUsageOf renders usage the Anthropic way: input_tokens counts
// only the uncached part of the prompt, cache_read_input_tokens the cached
// part. start is the message_start form, before any output.
func anthropicUsageOf(u *provider.Usage, start bool) *anthropicUsage {
	if u == nil {
		return nil
	}
	out := &anthropicUsage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens}
	if u.CachedTokens != nil {
		c := *u.CachedTokens
		out.CacheReadInputTokens = &c
		out.InputTokens = max(u.PromptTokens-c, 0)
	}
	if start {
		out.OutputTokens = 0
	}
	return out
}

type anthropicMessageBody struct {
	ID           string          `json:"id"`
	Type         string          `json:"type"`
	Role         string          `json:"role"`
	Model        string          `json:"model"`
	Content      []any           `json:"content"`
	StopReason   *string         `json:"stop_reason"`
	StopSequence *string         `json:"stop_sequence"`
	Usage        *anthropicUsage `json:"usage,omitempty"`
}

type anthropicEvent struct {
	Type         string                `json:"type"`
	Message      *anthropicMessageBody `json:"message,omitempty"`
	Index        *int                  `json:"index,omitempty"`
	ContentBlock any                   `json:"content_block,omitempty"`
	Delta        any                   `json:"delta,omitempty"`
	Usage        *anthropicUsage       `json:"usage,omitempty"`
}

type anthropicText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type anthropicThinking struct {
	Type      string `json:"type"`
	Thinking  string `json:"thinking"`
	Signature string `json:"signature"`
}

type anthropicToolUse struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

type anthropicThinkingDelta struct {
	Type     string `json:"type"`
	Thinking string `json:"thinking"`
}

type anthropicSignatureDelta struct {
	Type      string `json:"type"`
	Signature string `json:"signature"`
}

type anthropicInputDelta struct {
	Type        string `json:"type"`
	PartialJSON string `json:"partial_json"`
}

type anthropicStop struct {
	StopReason   string  `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
}

// anthropicStream renders a reply as Messages stream events. The reply's
// usage (its last usage step, wherever it stands) goes out where the wire
// carries it: the prompt side in message_start, everything in
// message_delta.
type anthropicStream struct {
	id, model string
	usage     *provider.Usage
	next      int    // index of the next content block
	cur       string // type of the open block: "", "text" or "thinking"
	finished  bool
}

func newAnthropicStream(n int, model string, steps []script.Step) *anthropicStream {
	a := &anthropicStream{id: fmt.Sprintf("msg_fake_%d", n), model: model}
	for _, s := range steps {
		if u, ok := s.Part.(provider.Usage); ok {
			a.usage = &u
		}
	}
	return a
}

func anthropicSSE(ev anthropicEvent) []byte {
	return []byte("event: " + ev.Type + "\ndata: " + string(marshal(ev)) + "\n\n")
}

func (a *anthropicStream) open() []byte {
	return anthropicSSE(anthropicEvent{Type: "message_start", Message: &anthropicMessageBody{
		ID: a.id, Type: "message", Role: "assistant", Model: a.model, Content: []any{},
		Usage: anthropicUsageOf(a.usage, true),
	}})
}

// start opens a content block of the given kind, closing any open one.
func (a *anthropicStream) start(kind string, block any) []byte {
	out := a.stop()
	i := a.next
	a.next++
	a.cur = kind
	return append(out, anthropicSSE(anthropicEvent{Type: "content_block_start", Index: &i, ContentBlock: block})...)
}

// ensure makes sure a block of kind is open.
func (a *anthropicStream) ensure(kind string, block any) []byte {
	if a.cur == kind {
		return nil
	}
	return a.start(kind, block)
}

func (a *anthropicStream) delta(d any) []byte {
	i := a.next - 1
	return anthropicSSE(anthropicEvent{Type: "content_block_delta", Index: &i, Delta: d})
}

// stop closes the open block, if any.
func (a *anthropicStream) stop() []byte {
	if a.cur == "" {
		return nil
	}
	a.cur = ""
	i := a.next - 1
	return anthropicSSE(anthropicEvent{Type: "content_block_stop", Index: &i})
}

func (a *anthropicStream) part(s script.Step) ([]byte, bool) {
	switch p := s.Part.(type) {
	case provider.TextDelta:
		out := a.ensure("text", anthropicText{Type: "text"})
		return append(out, a.delta(anthropicText{Type: "text_delta", Text: p.Text})...), false
	case provider.ThinkingDelta:
		out := a.ensure("thinking", anthropicThinking{Type: "thinking"})
		if p.Text != "" {
			out = append(out, a.delta(anthropicThinkingDelta{Type: "thinking_delta", Thinking: p.Text})...)
		}
		if p.Signature != "" {
			out = append(out, a.delta(anthropicSignatureDelta{Type: "signature_delta", Signature: p.Signature})...)
			out = append(out, a.stop()...)
		}
		return out, false
	case provider.ToolCallPart:
		out := a.start("tool_use", anthropicToolUse{Type: "tool_use", ID: p.Call.ID, Name: p.Call.Name, Input: json.RawMessage("{}")})
		out = append(out, a.delta(anthropicInputDelta{Type: "input_json_delta", PartialJSON: string(p.Call.Args)})...)
		return append(out, a.stop()...), false
	case provider.Finish:
		a.finished = true
		out := a.stop()
		return append(out, anthropicSSE(anthropicEvent{Type: "message_delta",
			Delta: anthropicStop{StopReason: anthropicStopReason(s)}, Usage: anthropicUsageOf(a.usage, false)})...), false
	case provider.Error:
		se := streamError(p.Err)
		return []byte("event: error\ndata: " + string(marshal(anthropicError{Type: "error",
			Error: anthropicErrorDetail{Type: se.Type, Message: se.Message}})) + "\n\n"), true
	}
	return nil, false // usage goes out with message_start/message_delta; retries are not on the wire
}

func (a *anthropicStream) close() []byte {
	if !a.finished {
		return nil
	}
	return anthropicSSE(anthropicEvent{Type: "message_stop"})
}

// anthropicMessage renders a complete message; ok is false when the parts
// carry no finish. Blocks group as in the stream: consecutive text in one
// block, thinking until its signature, one block per tool call.
func anthropicMessage(n int, model string, parts []script.Step) ([]byte, bool) {
	var content []any
	var usage *provider.Usage
	var reason *string
	open := "" // kind of the last block while it can still grow
	for _, s := range parts {
		switch p := s.Part.(type) {
		case provider.TextDelta:
			if open != "text" {
				content = append(content, &anthropicText{Type: "text"})
				open = "text"
			}
			content[len(content)-1].(*anthropicText).Text += p.Text
		case provider.ThinkingDelta:
			if open != "thinking" {
				content = append(content, &anthropicThinking{Type: "thinking"})
				open = "thinking"
			}
			b := content[len(content)-1].(*anthropicThinking)
			b.Thinking += p.Text
			if p.Signature != "" {
				b.Signature = p.Signature
				open = ""
			}
		case provider.ToolCallPart:
			content = append(content, anthropicToolUse{Type: "tool_use", ID: p.Call.ID, Name: p.Call.Name, Input: rawArgs(p.Call.Args)})
			open = ""
		case provider.Usage:
			usage = &p
		case provider.Finish:
			r := anthropicStopReason(s)
			reason = &r
		}
	}
	if reason == nil {
		return nil, false
	}
	if content == nil {
		content = []any{}
	}
	return marshal(anthropicMessageBody{
		ID: fmt.Sprintf("msg_fake_%d", n), Type: "message", Role: "assistant", Model: model,
		Content: content, StopReason: reason, Usage: anthropicUsageOf(usage, false),
	}), true
}
