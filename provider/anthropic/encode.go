package anthropic

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/internal/wirejson"
)

// The Messages wire as the encoders write it: the shapes below are the
// events and bodies in the field order the API sends. Usage and
// ErrorDetail are shared with the reader's shapes (Event, in stream.go);
// the rest are the writer's own, as each kind of block and delta carries
// only its fields, with empty values written out.

// ErrorBody is the error object Anthropic sends: as an HTTP error body, or
// as the data of an in-stream error event.
type ErrorBody struct {
	Type  string      `json:"type"`
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is the inside of an ErrorBody.
type ErrorDetail struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// ErrorType is the error type Anthropic gives an HTTP status.
func ErrorType(status int) string {
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

// StopReason says a finish reason of the generic (OpenAI) vocabulary the
// Anthropic way: stop is end_turn, tool_calls is tool_use; any other
// reason is returned as is.
func StopReason(reason string) string {
	switch reason {
	case "stop":
		return "end_turn"
	case "tool_calls":
		return "tool_use"
	}
	return reason
}

// usageOut renders usage the Anthropic way: input_tokens counts only the
// uncached part of the prompt, cache_read_input_tokens the cached part.
// start is the message_start form, before any output.
func usageOut(u *provider.Usage, start bool) *Usage {
	if u == nil {
		return nil
	}
	in, out := u.PromptTokens, u.CompletionTokens
	w := &Usage{}
	if u.CachedTokens != nil {
		c := *u.CachedTokens
		w.CacheReadInputTokens = &c
		in = max(u.PromptTokens-c, 0)
	}
	if start {
		out = 0
	}
	w.InputTokens, w.OutputTokens = &in, &out
	return w
}

type wireOutMessage struct {
	ID           string  `json:"id"`
	Type         string  `json:"type"`
	Role         string  `json:"role"`
	Model        string  `json:"model"`
	Content      []any   `json:"content"`
	StopReason   *string `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
	Usage        *Usage  `json:"usage,omitempty"`
}

type wireOutEvent struct {
	Type         string          `json:"type"`
	Message      *wireOutMessage `json:"message,omitempty"`
	Index        *int            `json:"index,omitempty"`
	ContentBlock any             `json:"content_block,omitempty"`
	Delta        any             `json:"delta,omitempty"`
	Usage        *Usage          `json:"usage,omitempty"`
}

type wireText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type wireThinking struct {
	Type      string `json:"type"`
	Thinking  string `json:"thinking"`
	Signature string `json:"signature"`
}

type wireToolUse struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

type wireThinkingDelta struct {
	Type     string `json:"type"`
	Thinking string `json:"thinking"`
}

type wireSignatureDelta struct {
	Type      string `json:"type"`
	Signature string `json:"signature"`
}

type wireInputDelta struct {
	Type        string `json:"type"`
	PartialJSON string `json:"partial_json"`
}

type wireStop struct {
	StopReason   string  `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
}

// Encoder writes a reply as the events of a Messages stream: message_start
// (with the prompt side of the usage), content blocks (consecutive text in
// one block, thinking until its signature, one block per tool call with
// its input in input_json_delta events, see ArgChunk), message_delta (stop reason and
// usage) and message_stop. An Encoder is not safe for concurrent use.
type Encoder struct {
	// ArgChunk, when positive, sends a tool call's input in
	// input_json_delta events of at most that many bytes (cut between
	// runes), as models stream it; zero sends it whole, in one event.
	ArgChunk int
	// Frame, when set, frames each event the encoder writes, given its
	// type and its JSON data, in place of an SSE event (Bedrock's
	// InvokeModelWithResponseStream sends each as a binary frame). The
	// in-stream error event of an Error part is not framed by it: each
	// framing has its own error (see ErrorEvent).
	Frame func(typ string, data []byte) []byte

	id, model string
	usage     *provider.Usage
	next      int    // index of the next content block
	cur       string // type of the open block: "", "text" or "thinking"
	finished  bool
}

// NewEncoder returns an encoder for one reply with the given message id
// and model. usage is the reply's usage, nil for none: the wire carries it
// at the start and the end, so it is needed before the first part.
func NewEncoder(id, model string, usage *provider.Usage) *Encoder {
	return &Encoder{id: id, model: model, usage: usage}
}

func eventBytes(ev wireOutEvent) []byte {
	return []byte("event: " + ev.Type + "\ndata: " + string(wirejson.Marshal(ev)) + "\n\n")
}

// event is one event as the encoder frames it.
func (e *Encoder) event(ev wireOutEvent) []byte {
	if e.Frame != nil {
		return e.Frame(ev.Type, wirejson.Marshal(ev))
	}
	return eventBytes(ev)
}

// Open is the message_start event.
func (e *Encoder) Open() []byte {
	return e.event(wireOutEvent{Type: "message_start", Message: &wireOutMessage{
		ID: e.id, Type: "message", Role: "assistant", Model: e.model, Content: []any{},
		Usage: usageOut(e.usage, true),
	}})
}

// start opens a content block of the given kind, closing any open one.
func (e *Encoder) start(kind string, block any) []byte {
	out := e.stop()
	i := e.next
	e.next++
	e.cur = kind
	return append(out, e.event(wireOutEvent{Type: "content_block_start", Index: &i, ContentBlock: block})...)
}

// ensure makes sure a block of kind is open.
func (e *Encoder) ensure(kind string, block any) []byte {
	if e.cur == kind {
		return nil
	}
	return e.start(kind, block)
}

func (e *Encoder) delta(d any) []byte {
	i := e.next - 1
	return e.event(wireOutEvent{Type: "content_block_delta", Index: &i, Delta: d})
}

// stop closes the open block, if any.
func (e *Encoder) stop() []byte {
	if e.cur == "" {
		return nil
	}
	e.cur = ""
	i := e.next - 1
	return e.event(wireOutEvent{Type: "content_block_stop", Index: &i})
}

// Part is the events of one part. A Finish reason goes out verbatim (see
// StopReason); usage parts write nothing (the usage given to NewEncoder
// goes out with message_start and message_delta), nor do retries. An Error
// part is an in-stream error event, after which a stream ends.
func (e *Encoder) Part(p provider.Part) []byte {
	switch p := p.(type) {
	case provider.TextDelta:
		out := e.ensure("text", wireText{Type: "text"})
		return append(out, e.delta(wireText{Type: "text_delta", Text: p.Text})...)
	case provider.ThinkingDelta:
		out := e.ensure("thinking", wireThinking{Type: "thinking"})
		if p.Text != "" {
			out = append(out, e.delta(wireThinkingDelta{Type: "thinking_delta", Thinking: p.Text})...)
		}
		if p.Signature != "" {
			out = append(out, e.delta(wireSignatureDelta{Type: "signature_delta", Signature: p.Signature})...)
			out = append(out, e.stop()...)
		}
		return out
	case provider.ToolCallPart:
		out := e.start("tool_use", wireToolUse{Type: "tool_use", ID: p.Call.ID, Name: p.Call.Name, Input: json.RawMessage("{}")})
		for _, a := range wirejson.Split(string(p.Call.Args), e.ArgChunk) {
			out = append(out, e.delta(wireInputDelta{Type: "input_json_delta", PartialJSON: a})...)
		}
		return append(out, e.stop()...)
	case provider.Finish:
		e.finished = true
		out := e.stop()
		return append(out, e.event(wireOutEvent{Type: "message_delta",
			Delta: wireStop{StopReason: p.Reason}, Usage: usageOut(e.usage, false)})...)
	case provider.Error:
		return ErrorEvent(provider.StreamErrorOf(p.Err))
	}
	return nil
}

// Close is what ends a stream whose parts ran out: message_stop when the
// reply finished, nothing otherwise (the stream just stops).
func (e *Encoder) Close() []byte {
	if !e.finished {
		return nil
	}
	return e.event(wireOutEvent{Type: "message_stop"})
}

// Message renders parts as one whole message, the reply to a request that
// did not ask for a stream; ok is false when the parts carry no Finish.
// Blocks group as in the stream. Error and retry parts are skipped.
func Message(id, model string, parts []provider.Part) (body []byte, ok bool) {
	var content []any
	var usage *provider.Usage
	var reason *string
	open := "" // kind of the last block while it can still grow
	for _, p := range parts {
		switch p := p.(type) {
		case provider.TextDelta:
			if open != "text" {
				content = append(content, &wireText{Type: "text"})
				open = "text"
			}
			content[len(content)-1].(*wireText).Text += p.Text
		case provider.ThinkingDelta:
			if open != "thinking" {
				content = append(content, &wireThinking{Type: "thinking"})
				open = "thinking"
			}
			b := content[len(content)-1].(*wireThinking)
			b.Thinking += p.Text
			if p.Signature != "" {
				b.Signature = p.Signature
				open = ""
			}
		case provider.ToolCallPart:
			content = append(content, wireToolUse{Type: "tool_use", ID: p.Call.ID, Name: p.Call.Name, Input: rawArgs(p.Call.Args)})
			open = ""
		case provider.Usage:
			usage = &p
		case provider.Finish:
			r := p.Reason
			reason = &r
		}
	}
	if reason == nil {
		return nil, false
	}
	if content == nil {
		content = []any{}
	}
	return wirejson.Marshal(wireOutMessage{
		ID: id, Type: "message", Role: "assistant", Model: model,
		Content: content, StopReason: reason, Usage: usageOut(usage, false),
	}), true
}

// rawArgs is a tool call's arguments as a JSON value, or as a JSON string
// when they are malformed (a complete body must stay JSON).
func rawArgs(args json.RawMessage) json.RawMessage {
	if json.Valid(args) {
		return args
	}
	return wirejson.String(string(args))
}

// ErrorEvent is an in-stream error event.
func ErrorEvent(se *provider.StreamError) []byte {
	return []byte("event: error\ndata: " + string(wirejson.Marshal(ErrorBody{Type: "error",
		Error: ErrorDetail{Type: se.Type, Message: se.Message}})) + "\n\n")
}

// HTTPErrorBody is the JSON body Anthropic answers an error status with.
// code is the error type; empty gives the type Anthropic uses for the
// status (ErrorType). An empty message is the status text.
func HTTPErrorBody(status int, code, message string) []byte {
	if message == "" {
		message = provider.StatusText(status)
	}
	if message == "" {
		message = fmt.Sprintf("HTTP %d", status)
	}
	if code == "" {
		code = ErrorType(status)
	}
	return wirejson.Marshal(ErrorBody{Type: "error", Error: ErrorDetail{Type: code, Message: message}})
}

// StatusMessage is the message Anthropic sends with an error status, where
// it has one of its own (429, 500); empty otherwise.
func StatusMessage(status int) string {
	switch status {
	case 429:
		return "Rate limit exceeded"
	case 500:
		return "Internal server error"
	}
	return ""
}

// Path is the Messages endpoint below the API root (BaseURL).
const Path = "/v1/messages"

// IsPath reports whether a request path is the Messages endpoint under any
// root or version: it ends in /messages.
func IsPath(p string) bool { return strings.HasSuffix(p, "/messages") }

// HasVersionHeader reports whether request headers carry anthropic-version
// (the name in any case), which every Messages request does.
func HasVersionHeader(h map[string][]string) bool {
	for k := range h {
		if strings.EqualFold(k, "Anthropic-Version") {
			return true
		}
	}
	return false
}

// IsStreamBody reports whether a response body reads as a Messages event
// stream: it holds a message_start event.
func IsStreamBody(body string) bool { return strings.Contains(body, `"type":"message_start"`) }
