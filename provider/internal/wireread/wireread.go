// Package wireread holds what the JSON-over-SSE wires (provider/openai,
// provider/anthropic, provider/openai/responses) share in reading recorded
// traffic for the codec registry (provider/codec): splitting a body into
// events with their offsets, telling a stream from a whole body, the
// error objects and the id, model and usage every event may carry, the
// accumulation of what a reply says (Builder), and the request shapes
// Chat Completions and Messages have in common.
package wireread

import (
	"encoding/json"
	"io"
	"strings"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/codec"
	"github.com/openmax/openmax/provider/httpx"
	"github.com/openmax/openmax/provider/sse"
)

// IsEventStream reports whether a recorded body is an SSE stream: by its
// Content-Type, or (without one) by how the body starts.
func IsEventStream(contentType, body string) bool {
	if contentType != "" {
		return strings.Contains(strings.ToLower(contentType), "text/event-stream")
	}
	b := strings.TrimLeft(body, "\r\n")
	return strings.HasPrefix(b, "data:") || strings.HasPrefix(b, "event:") || strings.HasPrefix(b, ":")
}

// Split splits an SSE body into its events (as provider/sse reads them)
// with their offsets and names ("" when no event field named one), and
// calls read for each, in order, to fill in what it says; sp is the
// event as an sse.Reader gives it to a client. tail is the size of an
// unterminated last event.
func Split(body string, read func(sp sse.Event, ev *codec.Event)) (events []codec.Event, tail int) {
	spans, tail := sse.Split(body)
	events = make([]codec.Event, len(spans))
	start := 0
	for i, sp := range spans {
		ev := &events[i]
		ev.Start, ev.End = start, sp.End
		if sp.Named {
			ev.Name = sp.Type
		}
		read(sp.Event, ev)
		start = sp.End
	}
	return events, tail
}

// Collect returns a yield function that appends each part to *parts.
func Collect(parts *[]provider.Part) func(provider.Part) bool {
	return func(p provider.Part) bool {
		*parts = append(*parts, p)
		return true
	}
}

// Client is a vendor client's reading of one stream (httpx.EventReader).
type Client = httpx.EventReader

// Reader is how a wire reads a recorded body (codec.Wire.Parse).
type Reader struct {
	// Meta says what each event's (or the whole body's) id, model and
	// usage reading takes (Builder.Meta).
	Meta MetaOptions
	// Event reads one event of a stream into b (its name, "" when
	// unnamed, and data) and says what it holds.
	Event func(b *Builder, name, data string) (notes []codec.Note, unparsed bool)
	// Whole reads a body that is not a stream into b.
	Whole func(b *Builder, body string)
	// WholeParts yields the parts the client reads from a whole body.
	WholeParts func(body []byte, yield func(provider.Part) bool)
	// Client is the client's reading of a stream with this Content-Type.
	Client func(contentType string) Client
	// Reading makes the codec.Reading of b (nil: b.Reading).
	Reading func(b *Builder) *codec.Reading
}

// Parse reads a recorded body: a stream's events with their offsets, the
// notes rd.Event gives each and the parts rd.Client yields from it, or a
// whole body through rd.Whole and rd.WholeParts.
func (rd Reader) Parse(contentType string, body []byte) *codec.Reading {
	b := &Builder{}
	reading := rd.Reading
	if reading == nil {
		reading = (*Builder).Reading
	}
	text := string(body)
	if text == "" {
		return reading(b)
	}
	if !IsEventStream(contentType, text) {
		b.Meta(text, rd.Meta)
		rd.Whole(b, text)
		r := reading(b)
		rd.WholeParts(body, Collect(&r.EndParts))
		return r
	}
	client := rd.Client(contentType)
	live := true
	events, tail := Split(text, func(sp sse.Event, ev *codec.Event) {
		b.Meta(sp.Data, rd.Meta)
		ev.Notes, ev.Unparsed = rd.Event(b, ev.Name, sp.Data)
		if live {
			live = client.Event(sp, Collect(&ev.Parts))
		}
	})
	r := reading(b)
	r.Stream, r.Events, r.Tail = true, events, tail
	if live {
		client.End(io.EOF, Collect(&r.EndParts))
	}
	return r
}

// ErrorObject is an error object of Chat Completions or Messages: the
// "error" of an error body or an error event.
type ErrorObject struct {
	Type    string          `json:"type"`
	Message string          `json:"message"`
	Code    json.RawMessage `json:"code"`
}

// String renders the error as "type, code CODE: message", each part only
// when given (the code only when it differs from the type).
func (e *ErrorObject) String() string {
	var parts []string
	if e.Type != "" {
		parts = append(parts, e.Type)
	}
	var code string
	if json.Unmarshal(e.Code, &code) == nil && code != "" && code != e.Type {
		parts = append(parts, "code "+code)
	}
	s := strings.Join(parts, ", ")
	if s == "" {
		return e.Message
	}
	if e.Message == "" {
		return s
	}
	return s + ": " + e.Message
}

// Str reads a JSON string; absent or null is nil. ok is false for any
// other value.
func Str(raw json.RawMessage) (s *string, ok bool) {
	if len(raw) == 0 {
		return nil, true
	}
	return s, json.Unmarshal(raw, &s) == nil
}

// Text is the JSON string in raw, "" when it holds none.
func Text(raw json.RawMessage) string {
	if s, _ := Str(raw); s != nil {
		return *s
	}
	return ""
}

// Tool is a tool call put together from a recording.
type Tool struct {
	ID, Name string
	Args     strings.Builder
	// Key is the call's index in the stream (a Responses output_index).
	Key int
}

// Builder puts together what a recorded reply says, event by event (or
// from a whole body), for a codec.Reading.
type Builder struct {
	Text, Thinking, Refusal strings.Builder
	Signatures              int
	SigBytes                []int
	Tools                   []*Tool
	byKey                   map[int]*Tool
	Finish, Signal          string
	Errs                    []string
	Usage                   *codec.Usage
	MsgID, Model            string
	Phases                  []string
}

// Tool is the call at key, made when new.
func (b *Builder) Tool(key int) *Tool {
	if b.byKey == nil {
		b.byKey = map[int]*Tool{}
	}
	t := b.byKey[key]
	if t == nil {
		t = &Tool{Key: key}
		b.byKey[key] = t
		b.Tools = append(b.Tools, t)
	}
	return t
}

// Reading is what b put together.
func (b *Builder) Reading() *codec.Reading {
	r := &codec.Reading{
		MessageID: b.MsgID, Model: b.Model,
		Text: b.Text.String(), Thinking: b.Thinking.String(), Refusal: b.Refusal.String(),
		Phases: b.Phases, Signatures: b.Signatures, SignatureBytes: b.SigBytes,
		Finish: b.Finish, Signal: b.Signal, Errors: b.Errs, Usage: b.Usage,
	}
	for _, t := range b.Tools {
		r.Tools = append(r.Tools, codec.ToolCall{ID: t.ID, Name: t.Name, Args: t.Args.String()})
	}
	return r
}

// MetaOptions say what Meta reads beside the id and model.
type MetaOptions struct {
	// Usage: a Chat Completions or Messages usage object.
	Usage bool
	// Signatures: the length of a Messages signature_delta's signature.
	Signatures bool
	// Phases: the phase of a Responses message item.
	Phases bool
}

// metaEvent is what any wire's event (or whole body) says about the
// message beside its content: its id and model (at the top, in a
// Messages message_start's message, or in a Responses event's response),
// its usage, a signature's bytes and a Responses message item's phase.
// Fields of the wrong type leave the event saying nothing here but its id
// and model.
type metaEvent struct {
	ID       string     `json:"id"`
	Model    string     `json:"model"`
	Usage    *metaUsage `json:"usage"`
	Message  *metaEvent `json:"message"`
	Response *metaEvent `json:"response"`
	Delta    *struct {
		Type      string `json:"type"`
		Signature string `json:"signature"`
	} `json:"delta"`
	Item *struct {
		Type  string `json:"type"`
		Phase string `json:"phase"`
	} `json:"item"`
}

// metaUsage is a usage object of Chat Completions or Messages.
type metaUsage struct {
	PromptTokens        *int `json:"prompt_tokens"`
	CompletionTokens    *int `json:"completion_tokens"`
	InputTokens         *int `json:"input_tokens"`
	OutputTokens        *int `json:"output_tokens"`
	CacheRead           *int `json:"cache_read_input_tokens"`
	PromptTokensDetails *struct {
		CachedTokens *int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

// Meta reads what data (an event's, or a whole body) says about the
// message into b: the first id and model given, and what o asks for.
func (b *Builder) Meta(data string, o MetaOptions) {
	var ev metaEvent
	if json.Unmarshal([]byte(data), &ev) != nil {
		// A usage of the wrong type must not hide the id and model.
		ev = metaEvent{}
		var head struct {
			ID    string `json:"id"`
			Model string `json:"model"`
		}
		if json.Unmarshal([]byte(data), &head) != nil {
			return
		}
		ev.ID, ev.Model = head.ID, head.Model
	}
	for _, m := range []*metaEvent{&ev, ev.Message, ev.Response} {
		if m == nil {
			continue
		}
		if m.ID != "" && b.MsgID == "" {
			b.MsgID = m.ID
		}
		if m.Model != "" && b.Model == "" {
			b.Model = m.Model
		}
		if o.Usage {
			b.addUsage(m.Usage)
		}
	}
	if d := ev.Delta; o.Signatures && d != nil && d.Type == "signature_delta" {
		b.SigBytes = append(b.SigBytes, len(d.Signature))
	}
	if it := ev.Item; o.Phases && it != nil && it.Type == "message" && it.Phase != "" {
		b.Phases = append(b.Phases, it.Phase)
	}
}

// addUsage folds a Chat Completions or Messages usage into b.Usage, each
// count the last one said (Messages says output_tokens again, cumulative,
// in message_delta).
func (b *Builder) addUsage(u *metaUsage) {
	if u == nil {
		return
	}
	if b.Usage == nil {
		b.Usage = &codec.Usage{}
	}
	set := func(dst *int, v *int) {
		if v != nil {
			*dst = *v
		}
	}
	set(&b.Usage.Input, u.PromptTokens)
	set(&b.Usage.Input, u.InputTokens)
	set(&b.Usage.Output, u.CompletionTokens)
	set(&b.Usage.Output, u.OutputTokens)
	cached := u.CacheRead
	if d := u.PromptTokensDetails; d != nil && d.CachedTokens != nil {
		cached = d.CachedTokens
	}
	if cached != nil {
		n := *cached
		b.Usage.Cached = &n
	}
	b.Usage.Total = b.Usage.Input + b.Usage.Output
}
