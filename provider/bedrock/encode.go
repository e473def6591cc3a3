package bedrock

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/anthropic"
	"github.com/openmax/openmax/provider/bedrock/eventstream"
	"github.com/openmax/openmax/provider/internal/wirejson"
)

// The writers of Bedrock's wire, for servers that play it (the fake
// provider, cassette inject): both streams frame by frame, the exception
// frame, the HTTP error, and the whole replies of the non-streaming
// operations. Every JSON payload carries the p padding Bedrock adds, here
// of a length that depends only on the message's place in the stream, so
// the same reply always encodes to the same bytes.

// padding is the p field of the n-th message of a stream: a prefix of
// a-z A-Z 0-9, between 1 and 40 bytes, as Bedrock's random one looks.
func padding(n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	return alphabet[:1+(n*17+5)%40]
}

// EventFrame is one event message: the three string headers Bedrock
// sends, in its order, and the payload.
func EventFrame(eventType string, payload []byte) []byte {
	return eventstream.MustEncode(eventstream.Message{Headers: []eventstream.Header{
		{Name: ":event-type", Value: eventType},
		{Name: ":content-type", Value: "application/json"},
		{Name: ":message-type", Value: "event"},
	}, Payload: payload})
}

// ExceptionFrame is the exception message that ends a stream with se: its
// type in :exception-type, its message in the payload.
func ExceptionFrame(se *provider.StreamError) []byte {
	return eventstream.MustEncode(eventstream.Message{Headers: []eventstream.Header{
		{Name: ":exception-type", Value: se.Type},
		{Name: ":content-type", Value: "application/json"},
		{Name: ":message-type", Value: "exception"},
	}, Payload: wirejson.Marshal(struct {
		Message string `json:"message"`
	}{se.Message})})
}

// errorTypeURI is what follows the type in Bedrock's x-amzn-ErrorType.
const errorTypeURI = ":http://internal.amazon.com/coral/com.amazon.bedrock/"

// HTTPErrorBody is the JSON body Bedrock answers an error status with:
// only the message (an empty one is the status text); the type goes in a
// header (HTTPErrorHeader).
func HTTPErrorBody(status int, code, message string) []byte {
	_ = code // named by HTTPErrorHeader
	if message == "" {
		message = provider.StatusText(status)
	}
	if message == "" {
		message = fmt.Sprintf("HTTP %d", status)
	}
	return wirejson.Marshal(struct {
		Message string `json:"message"`
	}{message})
}

// HTTPErrorHeader is the header Bedrock names an error's type in,
// x-amzn-ErrorType; an empty code is ErrorType's for the status.
func HTTPErrorHeader(status int, code string) http.Header {
	if code == "" {
		code = ErrorType(status)
	}
	return http.Header{"X-Amzn-Errortype": {code + errorTypeURI}}
}

// StopReason says a finish reason of the generic (OpenAI) vocabulary the
// Converse way: stop is end_turn, tool_calls tool_use, length max_tokens,
// content_filter content_filtered; any other reason is returned as is.
func StopReason(reason string) string {
	switch reason {
	case "stop":
		return "end_turn"
	case "tool_calls":
		return "tool_use"
	case "length":
		return "max_tokens"
	case "content_filter":
		return "content_filtered"
	}
	return reason
}

// usageOut is usage the Converse way: inputTokens without the cached part.
func usageOut(u provider.Usage) *Usage {
	w := &Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, TotalTokens: u.PromptTokens + u.CompletionTokens}
	if u.CachedTokens != nil {
		c := *u.CachedTokens
		w.CacheReadInputTokens = &c
		w.InputTokens = max(u.PromptTokens-c, 0)
	}
	return w
}

// ConverseEncoder writes a reply as the events of a ConverseStream:
// messageStart, content blocks (consecutive text in one block, reasoning
// until its signature, each with no contentBlockStart, as Bedrock sends
// them; one block per tool call, opened by a contentBlockStart naming it,
// its input in toolUse deltas, see ArgChunk), messageStop with the stop
// reason, and metadata with the usage. A ConverseEncoder is not safe for
// concurrent use.
type ConverseEncoder struct {
	// ArgChunk, when positive, sends a tool call's input in deltas of at
	// most that many bytes (cut between runes); zero sends it whole.
	ArgChunk int

	usage    *provider.Usage
	next     int    // index of the next content block
	cur      string // kind of the open block: "", "text" or "reasoning"
	n        int    // messages written
	finished bool
	meta     bool // metadata went out
}

// NewConverseEncoder returns an encoder for one reply whose usage is
// usage (nil: none, or given later as a part).
func NewConverseEncoder(usage *provider.Usage) *ConverseEncoder {
	return &ConverseEncoder{usage: usage}
}

// event is one event with the stream's padding.
func (e *ConverseEncoder) event(typ string, ev ConverseEvent) []byte {
	ev.P = padding(e.n)
	e.n++
	return EventFrame(typ, wirejson.Marshal(ev))
}

// Open is the messageStart event.
func (e *ConverseEncoder) Open() []byte {
	return e.event("messageStart", ConverseEvent{Role: "assistant"})
}

// ensure makes sure a block of kind is open; text and reasoning blocks
// have no start event.
func (e *ConverseEncoder) ensure(kind string) []byte {
	if e.cur == kind {
		return nil
	}
	out := e.stop()
	e.cur = kind
	e.next++
	return out
}

// stop closes the open block, if any.
func (e *ConverseEncoder) stop() []byte {
	if e.cur == "" {
		return nil
	}
	e.cur = ""
	i := e.next - 1
	return e.event("contentBlockStop", ConverseEvent{ContentBlockIndex: &i})
}

func (e *ConverseEncoder) delta(d BlockDelta) []byte {
	i := e.next - 1
	return e.event("contentBlockDelta", ConverseEvent{ContentBlockIndex: &i, Delta: &d})
}

func (e *ConverseEncoder) metadata() []byte {
	e.meta = true
	ev := ConverseEvent{Metrics: &Metrics{}}
	if e.usage != nil {
		ev.Usage = usageOut(*e.usage)
	}
	return e.event("metadata", ev)
}

// Part is the events of one part. A Finish reason goes out verbatim (see
// StopReason), followed by the metadata when the usage is known; a usage
// given after the finish goes out then. An Error part is an exception
// frame, after which a stream ends; retries write nothing.
func (e *ConverseEncoder) Part(p provider.Part) []byte {
	switch p := p.(type) {
	case provider.TextDelta:
		out := e.ensure("text")
		text := p.Text
		return append(out, e.delta(BlockDelta{Text: &text})...)
	case provider.ThinkingDelta:
		out := e.ensure("reasoning")
		if p.Text != "" {
			out = append(out, e.delta(BlockDelta{ReasoningContent: &ReasoningDelta{Text: p.Text}})...)
		}
		switch {
		case strings.HasPrefix(p.Signature, redactedPrefix):
			out = append(out, e.delta(BlockDelta{ReasoningContent: &ReasoningDelta{RedactedContent: strings.TrimPrefix(p.Signature, redactedPrefix)}})...)
			out = append(out, e.stop()...)
		case p.Signature != "":
			out = append(out, e.delta(BlockDelta{ReasoningContent: &ReasoningDelta{Signature: p.Signature}})...)
			out = append(out, e.stop()...)
		}
		return out
	case provider.ToolCallPart:
		out := e.stop()
		i := e.next
		e.next++
		out = append(out, e.event("contentBlockStart", ConverseEvent{ContentBlockIndex: &i,
			Start: &BlockStart{ToolUse: &ToolUseStart{Name: p.Call.Name, ToolUseID: p.Call.ID}}})...)
		for _, a := range wirejson.Split(string(p.Call.Args), e.ArgChunk) {
			out = append(out, e.delta(BlockDelta{ToolUse: &ToolUseDelta{Input: a}})...)
		}
		e.cur = "tool"
		return append(out, e.stop()...)
	case provider.Usage:
		e.usage = &p
		if e.finished && !e.meta {
			return e.metadata()
		}
	case provider.Finish:
		e.finished = true
		out := e.stop()
		out = append(out, e.event("messageStop", ConverseEvent{StopReason: p.Reason})...)
		if e.usage != nil {
			out = append(out, e.metadata()...)
		}
		return out
	case provider.Error:
		return ExceptionFrame(provider.StreamErrorOf(p.Err))
	}
	return nil
}

// Close is what ends a stream whose parts ran out: the metadata, when the
// reply finished and it has not gone out (with no usage then); nothing
// otherwise (the stream just stops).
func (e *ConverseEncoder) Close() []byte {
	if !e.finished || e.meta {
		return nil
	}
	return e.metadata()
}

// ConverseResponse is the body of a whole (non-streaming) Converse reply.
type ConverseResponse struct {
	Metrics *Metrics `json:"metrics,omitempty"`
	Output  struct {
		Message ConverseMessage `json:"message"`
	} `json:"output"`
	StopReason string `json:"stopReason"`
	Usage      *Usage `json:"usage,omitempty"`
}

// ConverseWhole renders parts as a whole Converse reply, the answer to a
// Converse (not ConverseStream) request; ok is false when the parts carry
// no Finish. Blocks group as in the stream; error and retry parts are
// skipped.
func ConverseWhole(parts []provider.Part) (body []byte, ok bool) {
	var r ConverseResponse
	r.Metrics = &Metrics{}
	msg := &r.Output.Message
	msg.Role = "assistant"
	msg.Content = []ContentBlock{}
	open := "" // kind of the last block while it can still grow
	finished := false
	for _, p := range parts {
		switch p := p.(type) {
		case provider.TextDelta:
			if open != "text" {
				s := ""
				msg.Content = append(msg.Content, ContentBlock{Text: &s})
				open = "text"
			}
			*msg.Content[len(msg.Content)-1].Text += p.Text
		case provider.ThinkingDelta:
			if strings.HasPrefix(p.Signature, redactedPrefix) && p.Text == "" {
				msg.Content = append(msg.Content, ContentBlock{ReasoningContent: &ReasoningContent{RedactedContent: strings.TrimPrefix(p.Signature, redactedPrefix)}})
				open = ""
				continue
			}
			if open != "reasoning" {
				msg.Content = append(msg.Content, ContentBlock{ReasoningContent: &ReasoningContent{ReasoningText: &ReasoningText{}}})
				open = "reasoning"
			}
			rt := msg.Content[len(msg.Content)-1].ReasoningContent.ReasoningText
			rt.Text += p.Text
			if p.Signature != "" {
				rt.Signature = p.Signature
				open = ""
			}
		case provider.ToolCallPart:
			msg.Content = append(msg.Content, ContentBlock{ToolUse: &ToolUse{ToolUseID: p.Call.ID, Name: p.Call.Name, Input: wirejson.Object(p.Call.Args)}})
			open = ""
		case provider.Usage:
			r.Usage = usageOut(p)
		case provider.Finish:
			r.StopReason, finished = p.Reason, true
		}
	}
	if !finished {
		return nil, false
	}
	return wirejson.Marshal(r), true
}

// InvokeEncoder writes a reply as the frames of an
// InvokeModelWithResponseStream: the events of an Anthropic Messages
// stream (provider/anthropic's Encoder), each as a chunk whose bytes are
// the event's JSON; message_stop carries Bedrock's invocation metrics. An
// Error part is an exception frame. An InvokeEncoder is not safe for
// concurrent use.
type InvokeEncoder struct {
	// ArgChunk is the anthropic Encoder's: when positive, a tool call's
	// input goes out in input_json_delta events of at most that many
	// bytes.
	ArgChunk int

	inner *anthropic.Encoder
	usage *provider.Usage
	n     int
}

// NewInvokeEncoder returns an encoder for one reply with the given message
// id, model and usage (nil: none), as anthropic.NewEncoder.
func NewInvokeEncoder(id, model string, usage *provider.Usage) *InvokeEncoder {
	e := &InvokeEncoder{inner: anthropic.NewEncoder(id, model, usage), usage: usage}
	e.inner.Frame = e.chunk
	return e
}

// InvocationMetrics is what message_stop carries on Bedrock.
type InvocationMetrics struct {
	InputTokenCount   int `json:"inputTokenCount"`
	OutputTokenCount  int `json:"outputTokenCount"`
	InvocationLatency int `json:"invocationLatency"`
	FirstByteLatency  int `json:"firstByteLatency"`
}

// chunk frames one Anthropic event.
func (e *InvokeEncoder) chunk(typ string, data []byte) []byte {
	if typ == "message_stop" && e.usage != nil {
		data = wirejson.Marshal(struct {
			Type    string            `json:"type"`
			Metrics InvocationMetrics `json:"amazon-bedrock-invocationMetrics"`
		}{typ, InvocationMetrics{InputTokenCount: e.usage.PromptTokens, OutputTokenCount: e.usage.CompletionTokens}})
	}
	payload := wirejson.Marshal(Chunk{Bytes: data, P: padding(e.n)})
	e.n++
	return EventFrame("chunk", payload)
}

// Open is the chunk of message_start.
func (e *InvokeEncoder) Open() []byte { return e.inner.Open() }

// Part is the chunks of one part, as the anthropic Encoder's events; an
// Error part is an exception frame.
func (e *InvokeEncoder) Part(p provider.Part) []byte {
	if err, ok := p.(provider.Error); ok {
		return ExceptionFrame(provider.StreamErrorOf(err.Err))
	}
	e.inner.ArgChunk = e.ArgChunk
	return e.inner.Part(p)
}

// Close is the chunk of message_stop when the reply finished, nothing
// otherwise.
func (e *InvokeEncoder) Close() []byte { return e.inner.Close() }

// InvokeWhole renders parts as the body of a whole InvokeModel reply: an
// Anthropic message (anthropic.Message); ok is false without a Finish.
func InvokeWhole(id, model string, parts []provider.Part) (body []byte, ok bool) {
	return anthropic.Message(id, model, parts)
}
