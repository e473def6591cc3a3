package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"maps"
	"mime"
	"net/http"
	"slices"
	"strings"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/httpx"
	"github.com/openmax/openmax/provider/internal/wireread"
	"github.com/openmax/openmax/provider/sse"
)

// The Messages stream as a reader decodes it, declared once: the client's
// parser (ParseStream, Client.Stream) and readers of recorded streams (the
// recorder/edit package behind openmax cassette show) decode each event's
// data with Event. The encoder writes its own shapes (see encode.go) but
// shares Usage and ErrorDetail.
//
// A field the client reads has its type, so an event where it holds
// another is malformed; a field only other readers need (the text of a
// text or thinking block's start) is json.RawMessage, so it cannot fail an
// event the client would take.

// Event is the data of one event of a Messages stream. Its Type names the
// kind, and each kind sets its own fields:
//
//	message_start        Message (the prompt side of the usage)
//	content_block_start  Index, ContentBlock
//	content_block_delta  Index, Delta (text_delta: Text; thinking_delta:
//	                     Thinking; signature_delta: Signature;
//	                     input_json_delta: PartialJSON)
//	content_block_stop   Index
//	message_delta        Delta (StopReason), Usage (the output side, and in
//	                     newer servers the input side again)
//	message_stop         no fields
//	error                Error (an ErrorBody in shape)
//	ping                 no fields
//
// A kind the API adds later decodes too: its fields are ignored.
type Event struct {
	Type         string        `json:"type"`
	Message      *StartMessage `json:"message"`
	Index        *int          `json:"index"` // nil when absent
	ContentBlock *ContentBlock `json:"content_block"`
	Delta        *Delta        `json:"delta"`
	Usage        *Usage        `json:"usage"`
	Error        *ErrorDetail  `json:"error"`
}

// StartMessage is the message of a message_start event, as far as a
// reader needs it: its usage.
type StartMessage struct {
	Usage Usage `json:"usage"`
}

// ContentBlock is the block a content_block_start event opens: text,
// thinking, redacted_thinking (Data), tool_use or server_tool_use (ID,
// Name, Input), or a type the API adds later. Text and Thinking are raw
// JSON strings: the start of a text or thinking block usually holds an
// empty one, the content follows in deltas, and the client does not read
// them.
type ContentBlock struct {
	Type     string          `json:"type"`
	ID       string          `json:"id"`
	Name     string          `json:"name"`
	Input    json.RawMessage `json:"input"`
	Data     string          `json:"data"`
	Text     json.RawMessage `json:"text"`
	Thinking json.RawMessage `json:"thinking"`
}

// Delta is the delta of a content_block_delta event (Type names which of
// its fields it sets) or of a message_delta event (StopReason, nil when
// absent or null).
type Delta struct {
	Type        string  `json:"type"`
	Text        string  `json:"text"`
	Thinking    string  `json:"thinking"`
	Signature   string  `json:"signature"`
	PartialJSON string  `json:"partial_json"`
	StopReason  *string `json:"stop_reason"`
}

// Usage is the token usage of a message_start or message_delta event, in
// both directions: a count is nil when absent. Anthropic's input_tokens
// leave out the cached part of the prompt: cache reads and cache writes
// are counted apart. The field order and omissions are the ones the
// Encoder writes.
type Usage struct {
	InputTokens          *int `json:"input_tokens"`
	CacheReadInputTokens *int `json:"cache_read_input_tokens,omitempty"`
	OutputTokens         *int `json:"output_tokens"`
	// Cache writes are billed as prompt tokens too.
	CacheCreationInputTokens *int `json:"cache_creation_input_tokens,omitempty"`
}

// index is e's block index, 0 when absent.
func (e *Event) index() int {
	if e.Index == nil {
		return 0
	}
	return *e.Index
}

// knownEvents are the SSE event names whose data is parsed; any other
// named event (ping, or one the API adds later) is skipped unread.
var knownEvents = map[string]bool{
	"message_start": true, "content_block_start": true, "content_block_delta": true,
	"content_block_stop": true, "message_delta": true, "message_stop": true,
	"error": true, "message": true, // "message": an event with no name
}

// block is one content block of the reply, by index.
type block struct {
	typ       string
	id, name  string
	input     strings.Builder
	startJSON json.RawMessage // content_block.input as the start event gave it
}

// state accumulates what message_stop reports.
type state struct {
	blocks   map[int]*block
	input    int
	output   int
	cached   *int
	created  int  // cache_creation_input_tokens
	sawUsage bool // the stream reported usage at all
	stop     string
	nEvents  int
	lastType string
}

// parse reads the event stream of a 2xx response. maxBytes caps the body
// once decoded (0: no cap).
func parse(ctx context.Context, resp *http.Response, maxBytes int64) iter.Seq[provider.Part] {
	return func(yield func(provider.Part) bool) {
		body, err := httpx.DecodeBody(resp, maxBytes)
		if err != nil {
			yield(provider.Error{Err: fmt.Errorf("anthropic: %w", err)})
			return
		}
		if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "application/json" {
			yield(provider.Error{Err: jsonReply(body)})
			return
		}
		events(ctx, body, yield)
	}
}

// ParseStream reads the event stream of a Messages reply and yields its
// parts as Client.Stream does: text, thinking and signatures as they
// stream, then, at message_stop, the tool calls in block order, Usage and
// Finish; a stream that fails or ends early ends with one Error part.
func ParseStream(body io.Reader) iter.Seq[provider.Part] {
	return func(yield func(provider.Part) bool) { events(context.Background(), body, yield) }
}

// events parses an event stream.
func events(ctx context.Context, body io.Reader, yield func(provider.Part) bool) {
	st := newState()
	httpx.ReadEvents(ctx, body, st, yield)
}

func newState() *state { return &state{blocks: map[int]*block{}} }

// NewEventReader returns the client's parser of one reply, for a framing
// other than SSE: Bedrock's InvokeModelWithResponseStream carries each
// event's JSON in a binary frame, fed here as an unnamed ("message") event.
func NewEventReader() wireread.Client { return newState() }

// Event folds one SSE event into the state, yielding the parts it
// carries. It reports false once the reply is over (message_stop, a
// failure, or yield returned false).
func (st *state) Event(ev sse.Event, yield func(provider.Part) bool) bool {
	if !knownEvents[ev.Type] {
		return true
	}
	var e Event
	if err := json.Unmarshal([]byte(ev.Data), &e); err != nil {
		yield(provider.Error{Err: fmt.Errorf("anthropic: malformed %s event: %v", ev.Type, err)})
		return false
	}
	typ := e.Type
	if typ == "" {
		typ = ev.Type
	}
	st.nEvents++
	st.lastType = typ
	parts, done, err := st.apply(typ, &e)
	for _, p := range parts {
		if !yield(p) {
			return false
		}
	}
	if err != nil {
		yield(provider.Error{Err: err})
		return false
	}
	return !done
}

// End ends a stream whose events stopped with err (io.EOF at the end of
// the body) before message_stop.
func (st *state) End(err error, yield func(provider.Part) bool) {
	yield(provider.Error{Err: st.readFailure(err)})
}

// apply folds one event into the state. It returns the parts to yield,
// whether the reply is complete, or the failure that ends it.
func (st *state) apply(typ string, e *Event) ([]provider.Part, bool, error) {
	switch typ {
	case "message_start":
		if e.Message != nil {
			u := e.Message.Usage
			st.sawUsage = st.sawUsage || u.InputTokens != nil || u.OutputTokens != nil
			if u.CacheCreationInputTokens != nil {
				st.created = *u.CacheCreationInputTokens
			}
			if u.InputTokens != nil {
				st.input = *u.InputTokens
			}
			if u.OutputTokens != nil {
				st.output = *u.OutputTokens
			}
			if u.CacheReadInputTokens != nil {
				v := *u.CacheReadInputTokens
				st.cached = &v
			}
		}
	case "content_block_start":
		b := st.block(e.index())
		if cb := e.ContentBlock; cb != nil {
			b.typ, b.id, b.name, b.startJSON = cb.Type, cb.ID, cb.Name, cb.Input
			if cb.Type == "redacted_thinking" && cb.Data != "" {
				// Keep it so it can be sent back; it has no readable text.
				return []provider.Part{provider.ThinkingDelta{Signature: redactedPrefix + cb.Data}}, false, nil
			}
		}
	case "content_block_delta":
		d := e.Delta
		if d == nil {
			return nil, false, nil
		}
		switch d.Type {
		case "text_delta":
			if d.Text != "" {
				return []provider.Part{provider.TextDelta{Text: d.Text}}, false, nil
			}
		case "thinking_delta":
			if d.Thinking != "" {
				return []provider.Part{provider.ThinkingDelta{Text: d.Thinking}}, false, nil
			}
		case "signature_delta":
			if d.Signature != "" {
				return []provider.Part{provider.ThinkingDelta{Signature: d.Signature}}, false, nil
			}
		case "input_json_delta":
			st.block(e.index()).input.WriteString(d.PartialJSON)
		}
	case "message_delta":
		if e.Delta != nil && e.Delta.StopReason != nil {
			st.stop = *e.Delta.StopReason
		}
		if u := e.Usage; u != nil {
			st.sawUsage = true
			if u.CacheCreationInputTokens != nil && *u.CacheCreationInputTokens > st.created {
				st.created = *u.CacheCreationInputTokens
			}
			if u.OutputTokens != nil {
				st.output = *u.OutputTokens
			}
			// Newer servers repeat the (cumulative) input counts here.
			if u.InputTokens != nil && *u.InputTokens > st.input {
				st.input = *u.InputTokens
			}
			if u.CacheReadInputTokens != nil && (st.cached == nil || *u.CacheReadInputTokens > *st.cached) {
				v := *u.CacheReadInputTokens
				st.cached = &v
			}
		}
	case "message_stop":
		return st.finish(), true, nil
	case "error":
		se := &provider.StreamError{Type: "error"}
		if e.Error != nil {
			se.Type, se.Message = e.Error.Type, e.Error.Message
		}
		return nil, false, se
	}
	return nil, false, nil
}

func (st *state) block(i int) *block {
	b := st.blocks[i]
	if b == nil {
		b = &block{}
		st.blocks[i] = b
	}
	return b
}

// finish is the completed reply's tail: tool calls in block order, usage,
// and the stop reason.
func (st *state) finish() []provider.Part {
	var parts []provider.Part
	for _, i := range slices.Sorted(maps.Keys(st.blocks)) {
		b := st.blocks[i]
		if b.typ != "tool_use" {
			continue
		}
		args := json.RawMessage(b.input.String())
		if strings.TrimSpace(b.input.String()) == "" {
			args = json.RawMessage(`{}`)
			if s := strings.TrimSpace(string(b.startJSON)); s != "" && s != "null" && s != "{}" {
				// No input was streamed, but the start event carried one.
				args = json.RawMessage(s)
			}
		}
		parts = append(parts, provider.ToolCallPart{Call: provider.ToolCall{ID: b.id, Name: b.name, Args: args}})
	}
	if st.sawUsage {
		// Anthropic's input_tokens leave out cache reads and writes; the
		// wire's prompt_tokens counts the whole prompt, as OpenAI's does.
		prompt := st.input + st.created
		if st.cached != nil {
			prompt += *st.cached
		}
		parts = append(parts, provider.Usage{PromptTokens: prompt, CompletionTokens: st.output, CachedTokens: st.cached})
	}
	return append(parts, provider.Finish{Reason: st.stop})
}

// readFailure is the error of a stream that ended or broke before
// message_stop.
func (st *state) readFailure(err error) error {
	where := "before any event"
	if st.nEvents > 0 {
		where = fmt.Sprintf("after %d events (last %s)", st.nEvents, st.lastType)
	}
	switch {
	case errors.Is(err, io.EOF):
		return fmt.Errorf("%w: the response ended without message_stop, %s", provider.ErrIncomplete, where)
	case errors.Is(err, provider.ErrIncomplete):
		// The idle watchdog, or a client limit (reply deadline, byte cap,
		// SSE line or event cap): incomplete either way.
		return fmt.Errorf("%w, %s", err, where)
	}
	return fmt.Errorf("%w: reading the response failed %s: %w", provider.ErrIncomplete, where, err)
}

// jsonReply is the failure of a 2xx response that came back as one JSON
// document instead of an event stream: the API's error object when it is
// one, else a plain error.
func jsonReply(body io.Reader) error {
	data, _ := io.ReadAll(io.LimitReader(body, 64<<10))
	var e Event
	if json.Unmarshal(data, &e) == nil && e.Type == "error" && e.Error != nil {
		return &provider.StreamError{Type: e.Error.Type, Message: e.Error.Message}
	}
	cut := strings.TrimSpace(string(data))
	if len(cut) > 200 {
		cut = cut[:200] + "…"
	}
	return fmt.Errorf("anthropic: expected an event stream, got application/json: %s", cut)
}
