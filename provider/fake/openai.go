package fake

import (
	"fmt"
	"strings"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/script"
)

// The OpenAI Chat Completions wire.

type openAIError struct {
	Error openAIErrorDetail `json:"error"`
}

type openAIErrorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// openAIErrorType is the error type OpenAI gives a status when the script
// named no code.
func openAIErrorType(status int) string {
	switch {
	case status >= 500:
		return "server_error"
	}
	return "invalid_request_error"
}

type openAIChunk struct {
	ID      string         `json:"id"`
	Object  string         `json:"object"`
	Created int64          `json:"created"`
	Model   string         `json:"model"`
	Choices []openAIChoice `json:"choices"`
	Usage   *openAIUsage   `json:"usage,omitempty"`
}

type openAIChoice struct {
	Index        int            `json:"index"`
	Delta        *openAIMessage `json:"delta,omitempty"`
	FinishReason *string        `json:"finish_reason"`
}

// openAIMessage is a delta of a stream or the message of a completion.
type openAIMessage struct {
	Role             string           `json:"role,omitempty"`
	Content          *string          `json:"content,omitempty"`
	ReasoningContent *string          `json:"reasoning_content,omitempty"`
	ToolCalls        []openAIToolCall `json:"tool_calls,omitempty"`
}

type openAIToolCall struct {
	Index    *int           `json:"index,omitempty"`
	ID       string         `json:"id,omitempty"`
	Type     string         `json:"type,omitempty"`
	Function openAIFunction `json:"function"`
}

type openAIFunction struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type openAIUsage struct {
	PromptTokens        int                `json:"prompt_tokens"`
	CompletionTokens    int                `json:"completion_tokens"`
	TotalTokens         int                `json:"total_tokens"`
	PromptTokensDetails *openAIUsageDetail `json:"prompt_tokens_details,omitempty"`
}

type openAIUsageDetail struct {
	CachedTokens int `json:"cached_tokens"`
}

func openAIUsageOf(u provider.Usage) *openAIUsage {
	out := &openAIUsage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.PromptTokens + u.CompletionTokens}
	if u.CachedTokens != nil {
		out.PromptTokensDetails = &openAIUsageDetail{CachedTokens: *u.CachedTokens}
	}
	return out
}

// openAIStream renders a reply as chat.completion.chunk events. Usage is
// held until the finish chunk has gone out, since OpenAI sends it last, in
// a chunk of its own with no choices.
type openAIStream struct {
	id, model string
	tools     int
	finished  bool
	usage     *provider.Usage
}

func newOpenAIStream(n int, model string) *openAIStream {
	return &openAIStream{id: fmt.Sprintf("chatcmpl-fake-%d", n), model: model}
}

func (o *openAIStream) chunk(delta *openAIMessage, finish *string) []byte {
	return o.event(openAIChunk{Choices: []openAIChoice{{Delta: delta, FinishReason: finish}}})
}

func (o *openAIStream) event(c openAIChunk) []byte {
	c.ID, c.Object, c.Created, c.Model = o.id, "chat.completion.chunk", Created, o.model
	return []byte("data: " + string(marshal(c)) + "\n\n")
}

func (o *openAIStream) usageChunk() []byte {
	u := *o.usage
	o.usage = nil
	return o.event(openAIChunk{Choices: []openAIChoice{}, Usage: openAIUsageOf(u)})
}

func (o *openAIStream) open() []byte {
	empty := ""
	return o.chunk(&openAIMessage{Role: "assistant", Content: &empty}, nil)
}

func (o *openAIStream) part(s script.Step) ([]byte, bool) {
	switch p := s.Part.(type) {
	case provider.TextDelta:
		return o.chunk(&openAIMessage{Content: &p.Text}, nil), false
	case provider.ThinkingDelta:
		if p.Text == "" {
			return nil, false // the wire has no reasoning signatures
		}
		return o.chunk(&openAIMessage{ReasoningContent: &p.Text}, nil), false
	case provider.ToolCallPart:
		i := o.tools
		o.tools++
		head := o.chunk(&openAIMessage{ToolCalls: []openAIToolCall{{Index: &i, ID: p.Call.ID, Type: "function",
			Function: openAIFunction{Name: p.Call.Name}}}}, nil)
		args := o.chunk(&openAIMessage{ToolCalls: []openAIToolCall{{Index: &i, Function: openAIFunction{Arguments: string(p.Call.Args)}}}}, nil)
		return append(head, args...), false
	case provider.Usage:
		o.usage = &p
		if o.finished {
			return o.usageChunk(), false
		}
		return nil, false
	case provider.Finish:
		o.finished = true
		reason := p.Reason
		out := o.chunk(&openAIMessage{}, &reason)
		if o.usage != nil {
			out = append(out, o.usageChunk()...)
		}
		return out, false
	case provider.Error:
		return []byte("data: " + string(marshal(openAIError{Error: openAIStreamError(p.Err)})) + "\n\n"), true
	}
	return nil, false // retry announcements are not on the wire
}

func (o *openAIStream) close() []byte {
	if !o.finished {
		return nil
	}
	return []byte("data: [DONE]\n\n")
}

// openAIStreamError is an in-stream error frame: the scripted type is both
// the type and the code (null when the script gave none).
func openAIStreamError(err error) openAIErrorDetail {
	se := streamError(err)
	d := openAIErrorDetail{Message: se.Message, Type: se.Type}
	if se.Type != "" {
		d.Code = &se.Type
	}
	return d
}

// openAICompletion renders a complete chat.completion; ok is false when
// the parts carry no finish.
func openAICompletion(n int, model string, parts []script.Step) ([]byte, bool) {
	var text, thinking strings.Builder
	var hasText, hasThinking bool
	var calls []openAIToolCall
	var usage *openAIUsage
	var finish *string
	for _, s := range parts {
		switch p := s.Part.(type) {
		case provider.TextDelta:
			text.WriteString(p.Text)
			hasText = true
		case provider.ThinkingDelta:
			thinking.WriteString(p.Text)
			hasThinking = hasThinking || p.Text != ""
		case provider.ToolCallPart:
			calls = append(calls, openAIToolCall{ID: p.Call.ID, Type: "function", Function: openAIFunction{Name: p.Call.Name, Arguments: string(p.Call.Args)}})
		case provider.Usage:
			usage = openAIUsageOf(p)
		case provider.Finish:
			r := p.Reason
			finish = &r
		}
	}
	if finish == nil {
		return nil, false
	}
	msg := openAICompletionMessage{Role: "assistant", ToolCalls: calls}
	if hasText {
		t := text.String()
		msg.Content = &t
	}
	if hasThinking {
		t := thinking.String()
		msg.ReasoningContent = &t
	}
	return marshal(openAICompletionBody{
		ID: fmt.Sprintf("chatcmpl-fake-%d", n), Object: "chat.completion", Created: Created, Model: model,
		Choices: []openAICompletionChoice{{Message: msg, FinishReason: *finish}},
		Usage:   usage,
	}), true
}

type openAICompletionBody struct {
	ID      string                   `json:"id"`
	Object  string                   `json:"object"`
	Created int64                    `json:"created"`
	Model   string                   `json:"model"`
	Choices []openAICompletionChoice `json:"choices"`
	Usage   *openAIUsage             `json:"usage,omitempty"`
}

type openAICompletionChoice struct {
	Index        int                     `json:"index"`
	Message      openAICompletionMessage `json:"message"`
	FinishReason string                  `json:"finish_reason"`
}

type openAICompletionMessage struct {
	Role             string           `json:"role"`
	Content          *string          `json:"content"`
	ReasoningContent *string          `json:"reasoning_content,omitempty"`
	ToolCalls        []openAIToolCall `json:"tool_calls,omitempty"`
}
