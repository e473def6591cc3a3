package edit

import (
	"bytes"
	"encoding/json"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/openmax/openmax/provider/anthropic"
	"github.com/openmax/openmax/provider/openai"
	"github.com/openmax/openmax/provider/openai/responses"
	"github.com/openmax/openmax/provider/sse"
	"github.com/openmax/openmax/recorder/cassette"
)

// The wires a cassette's traffic speaks.
const (
	wireOpenAI    = "openai"
	wireAnthropic = "anthropic"
	wireResponses = "responses" // OpenAI's Responses API
)

// wireOf is the wire of an interaction: Anthropic for a path ending in
// /messages, OpenAI Chat Completions for one ending in /chat/completions,
// the OpenAI Responses API for one ending in /responses; otherwise
// Anthropic when the request carried an Anthropic-Version header or the
// body holds a message_start event, Responses when the body names its
// events response.* (isResponsesBody), Chat Completions else.
func wireOf(it *cassette.Interaction) string {
	p := urlPath(it.Request.URL)
	switch {
	case anthropic.IsPath(p):
		return wireAnthropic
	case openai.IsPath(p):
		return wireOpenAI
	case responses.IsPath(pathOnly(it.Request.URL)):
		return wireResponses
	case anthropic.HasVersionHeader(it.Request.Headers), anthropic.IsStreamBody(it.Body()):
		return wireAnthropic
	case isResponsesBody(it.Body()):
		return wireResponses
	}
	return wireOpenAI
}

// urlPath is the path of a recorded URL ("/" when empty), with its query.
func urlPath(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	p := u.EscapedPath()
	if p == "" {
		p = "/"
	}
	if u.RawQuery != "" {
		p += "?" + u.RawQuery
	}
	return p
}

// pathOnly is the path of a recorded URL without its query.
func pathOnly(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		p, _, _ := strings.Cut(raw, "?")
		return p
	}
	return u.EscapedPath()
}

// header is the first value of a header, its name matched in any case.
func header(h map[string][]string, name string) (string, bool) {
	for _, k := range sortedKeys(h) {
		if strings.EqualFold(k, name) && len(h[k]) > 0 {
			return h[k][0], true
		}
	}
	return "", false
}

func sortedKeys(h map[string][]string) []string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// isEventStream reports whether an interaction's body is an SSE stream: by
// its Content-Type, or (without one) by how the body starts.
func isEventStream(it *cassette.Interaction) bool {
	if ct, ok := header(it.Response.Headers, "Content-Type"); ok {
		return strings.Contains(strings.ToLower(ct), "text/event-stream")
	}
	b := strings.TrimLeft(it.Body(), "\r\n")
	return strings.HasPrefix(b, "data:") || strings.HasPrefix(b, "event:") || strings.HasPrefix(b, ":")
}

// wireError is an error object of either wire.
type wireError struct {
	Type    string          `json:"type"`
	Message string          `json:"message"`
	Code    json.RawMessage `json:"code"`
}

func (e *wireError) String() string {
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

// toolCall is a tool call put together from a stream.
type toolCall struct {
	id, name string
	args     strings.Builder
	key      int // its index in the stream (a Responses output_index)
}

// reconstruction is what a body says, put together from its events (or
// read from a complete JSON response).
type reconstruction struct {
	stream     bool // parsed as SSE
	events     int  // SSE events
	unparsed   int  // events whose data was not JSON
	partial    int  // bytes of an unterminated last event
	text       strings.Builder
	thinking   strings.Builder
	signatures int
	tools      []*toolCall
	byKey      map[int]*toolCall
	finish     string   // finish_reason / stop_reason
	signal     string   // the completion signal: [DONE] or message_stop
	errs       []string // error events, or the error of an error body

	// The Responses API's own: its reasoning items, what was refused, and
	// the usage of the terminal event (see responses.go).
	wire        string
	reasoning   []*reasoningItem
	reasoningBy map[int]*reasoningItem // by output index
	itemIndexes map[string]int         // item id → output index
	refusal     strings.Builder
	usage       *responses.Usage // any wire's (see meta)

	// What every wire says beside the content (see meta).
	msgID, model string
	sigBytes     []int    // each Anthropic signature's length
	phases       []string // each Responses message item's phase

	// For a stream: what the events that end in each chunk say, and how
	// many bytes of each chunk belong to an event that does not end in it.
	chunkGists [][]gist
	chunkRest  []int
}

func (r *reconstruction) tool(key int) *toolCall {
	if r.byKey == nil {
		r.byKey = map[int]*toolCall{}
	}
	t := r.byKey[key]
	if t == nil {
		t = &toolCall{key: key}
		r.byKey[key] = t
		r.tools = append(r.tools, t)
	}
	return t
}

// reconstruct reads an interaction's body.
func reconstruct(it *cassette.Interaction) *reconstruction {
	body := it.Body()
	r := &reconstruction{wire: wireOf(it)}
	if body == "" {
		return r
	}
	if isEventStream(it) {
		r.stream = true
		evs, tail := sse.Split(body)
		chunks := it.Chunks()
		r.chunkGists = make([][]gist, len(chunks))
		r.chunkRest = make([]int, len(chunks))
		j, start := 0, 0 // the chunk an event ends in, and its offset
		lastEnd := 0
		for _, ev := range evs {
			for j < len(chunks) && ev.End > start+len(chunks[j].Data) {
				r.chunkRest[j] = len(chunks[j].Data) - max(lastEnd-start, 0)
				start += len(chunks[j].Data)
				j++
			}
			r.events++
			typ := ""
			if ev.Named {
				typ = ev.Type
			}
			r.meta(ev.Data)
			var g []gist
			if r.wire == wireResponses {
				g = r.responsesEvent(typ, ev.Data)
			} else {
				g = r.event(typ, ev.Data)
			}
			if j < len(chunks) {
				r.chunkGists[j] = append(r.chunkGists[j], g...)
			}
			lastEnd = ev.End
		}
		for ; j < len(chunks); j++ {
			r.chunkRest[j] = len(chunks[j].Data) - max(lastEnd-start, 0)
			start += len(chunks[j].Data)
		}
		r.partial = tail
		if r.wire == wireResponses {
			// The calls in output order, as the client hands them over.
			sort.SliceStable(r.tools, func(a, b int) bool { return r.tools[a].key < r.tools[b].key })
		}
		return r
	}
	r.meta(body)
	if r.wire != wireResponses || !r.responsesComplete(body) {
		r.complete(body)
	}
	return r
}

// sseEvent is the data of an event of either wire: Anthropic's in the
// anthropic package's shape (anthropic.Event) and OpenAI's choices in the
// openai package's shapes (see choice). The fields show does not read are
// held raw (as in choice, below), and the error object is either wire's.
type sseEvent struct {
	anthropic.Event
	Message      json.RawMessage `json:"message"` // not shown
	Usage        json.RawMessage `json:"usage"`   // not shown
	Error        *wireError      `json:"error"`
	ContentBlock *block          `json:"content_block"`
	Choices      []choice        `json:"choices"`
}

// block is an Anthropic content block (anthropic.ContentBlock) as show
// reads it: the start of a streamed block, or a block of a whole message.
// The data of a redacted_thinking block is not shown, so it is held raw;
// Text and Thinking must be strings (see ok).
type block struct {
	anthropic.ContentBlock
	Data json.RawMessage `json:"data"` // not shown
}

// ok reports whether b's text and thinking are JSON strings (or absent, or
// null), the types show prints.
func (b *block) ok() bool {
	if b == nil {
		return true
	}
	_, okText := str(b.Text)
	_, okThinking := str(b.Thinking)
	return okText && okThinking
}

// choice is an OpenAI choice (openai.Choice) as show reads it. A stream
// chunk is read for its delta and a whole completion for its message, so
// both are held raw here and the one that matters is decoded by itself
// (openAIDelta, openAIMessage); the index is held raw too, as a whole
// completion's is never read.
//
// Show counts an event whose data does not decode as unparsed, and a
// whole response that does not decode as saying nothing. What decodes is
// what it always did: the fields show prints must have the types it
// prints (role, content and arguments strings, see str), and a field it
// does not print may hold anything (the wrappers hold those raw).
type choice struct {
	openai.Choice
	Index   json.RawMessage `json:"index"`
	Delta   json.RawMessage `json:"delta"`
	Message json.RawMessage `json:"message"`
}

// openAIDelta is the delta of a stream chunk's choice.
type openAIDelta struct {
	openai.Delta
	Refusal json.RawMessage `json:"refusal"` // not shown
}

// openAIMessage is the message of a whole completion's choice.
type openAIMessage struct {
	openai.Delta
	Refusal   json.RawMessage `json:"refusal"`   // not shown
	Reasoning json.RawMessage `json:"reasoning"` // not shown for a whole completion
}

// str reads a JSON string; absent or null is nil. ok is false for any
// other value.
func str(raw json.RawMessage) (s *string, ok bool) {
	if len(raw) == 0 {
		return nil, true
	}
	return s, json.Unmarshal(raw, &s) == nil
}

// text is the JSON string in raw, "" when it holds none.
func text(raw json.RawMessage) string {
	if s, _ := str(raw); s != nil {
		return *s
	}
	return ""
}

// deltas decodes the delta of each choice of a stream chunk, or the
// message of each choice of a whole completion (nil where a choice has
// none). ok is false when one does not decode, or holds a content (or, in
// a stream, a role) or tool call arguments that are not strings.
func deltas(cs []choice, stream bool) (out []*openai.Delta, ok bool) {
	out = make([]*openai.Delta, len(cs))
	for i, c := range cs {
		var d *openai.Delta
		if stream {
			var idx *int
			if len(c.Index) > 0 && json.Unmarshal(c.Index, &idx) != nil {
				return nil, false
			}
			var v *openAIDelta
			if len(c.Delta) > 0 && json.Unmarshal(c.Delta, &v) != nil {
				return nil, false
			}
			if v != nil {
				d = &v.Delta
			}
		} else {
			var v *openAIMessage
			if len(c.Message) > 0 && json.Unmarshal(c.Message, &v) != nil {
				return nil, false
			}
			if v != nil {
				d = &v.Delta
			}
		}
		if d == nil {
			continue
		}
		if _, ok := str(d.Content); !ok {
			return nil, false
		}
		if _, ok := str(d.Role); stream && !ok {
			return nil, false
		}
		for _, tc := range d.ToolCalls {
			if _, ok := str(tc.Function.Arguments); !ok {
				return nil, false
			}
		}
		out[i] = d
	}
	return out, true
}

// gist is one thing an event says, for a chunk preview.
type gist struct {
	kind string // text, thinking and args merge with their neighbours
	text string
}

// event takes one SSE event and returns what it says.
func (r *reconstruction) event(typ, data string) []gist {
	if strings.TrimSpace(data) == "[DONE]" {
		r.signal = "[DONE]"
		return []gist{{kind: "[DONE]"}}
	}
	var ev sseEvent
	err := json.Unmarshal([]byte(data), &ev)
	var ds []*openai.Delta
	ok := err == nil && ev.ContentBlock.ok()
	if ok {
		ds, ok = deltas(ev.Choices, true)
	}
	if !ok {
		r.unparsed++
		return []gist{{kind: "unparsed " + typ}}
	}
	if ev.Error != nil {
		r.errs = append(r.errs, ev.Error.String())
		return []gist{{kind: "error event " + quote(ev.Error.String())}}
	}
	if typ == "error" || ev.Type == "error" {
		r.errs = append(r.errs, "error event")
		return []gist{{kind: "error event"}}
	}
	var out []gist
	index := -1
	if ev.Index != nil {
		index = *ev.Index
	}
	switch ev.Type {
	case "content_block_start":
		if b := ev.ContentBlock; b != nil {
			switch b.Type {
			case "text":
				t := text(b.Text)
				r.text.WriteString(t)
				out = append(out, gist{kind: "text block"})
				if t != "" {
					out = append(out, gist{kind: "text", text: t})
				}
			case "thinking":
				t := text(b.Thinking)
				r.thinking.WriteString(t)
				out = append(out, gist{kind: "thinking block"})
				if t != "" {
					out = append(out, gist{kind: "thinking", text: t})
				}
			case "tool_use", "server_tool_use":
				t := r.tool(index)
				t.id, t.name = b.ID, b.Name
				out = append(out, gist{kind: "tool " + b.Name})
				if in := string(bytes.TrimSpace(b.Input)); in != "" && in != "{}" && in != "null" {
					t.args.WriteString(in)
					out = append(out, gist{kind: "args", text: in})
				}
			default:
				out = append(out, gist{kind: b.Type + " block"})
			}
		}
	case "content_block_delta":
		if d := ev.Delta; d != nil {
			switch d.Type {
			case "text_delta":
				r.text.WriteString(d.Text)
				out = append(out, gist{kind: "text", text: d.Text})
			case "thinking_delta":
				r.thinking.WriteString(d.Thinking)
				out = append(out, gist{kind: "thinking", text: d.Thinking})
			case "input_json_delta":
				r.tool(index).args.WriteString(d.PartialJSON)
				out = append(out, gist{kind: "args", text: d.PartialJSON})
			case "signature_delta":
				r.signatures++
				out = append(out, gist{kind: "signature"})
			default:
				out = append(out, gist{kind: d.Type})
			}
		}
	case "message_delta":
		if d := ev.Delta; d != nil && d.StopReason != nil && *d.StopReason != "" {
			r.finish = *d.StopReason
			out = append(out, gist{kind: "stop " + *d.StopReason})
		} else {
			out = append(out, gist{kind: ev.Type})
		}
	case "message_stop":
		r.signal = "message_stop"
		out = append(out, gist{kind: ev.Type})
	case "":
	default:
		out = append(out, gist{kind: ev.Type})
	}
	for i, c := range ev.Choices {
		if d := ds[i]; d != nil {
			if role := text(d.Role); role != "" {
				out = append(out, gist{kind: "role " + role})
			}
			if content, _ := str(d.Content); content != nil {
				r.text.WriteString(*content)
				if *content != "" {
					out = append(out, gist{kind: "text", text: *content})
				}
			}
			th := d.ReasoningContent
			if th == nil {
				th = d.Reasoning
			}
			if th != nil {
				r.thinking.WriteString(*th)
				out = append(out, gist{kind: "thinking", text: *th})
			}
			for i, tc := range d.ToolCalls {
				key := i
				if tc.Index != nil {
					key = *tc.Index
				}
				t := r.tool(key)
				if tc.ID != "" {
					t.id = tc.ID
				}
				if tc.Function.Name != "" {
					t.name += tc.Function.Name
					out = append(out, gist{kind: "tool " + tc.Function.Name})
				}
				args := text(tc.Function.Arguments)
				t.args.WriteString(args)
				if args != "" {
					out = append(out, gist{kind: "args", text: args})
				}
			}
		}
		if c.FinishReason != nil && *c.FinishReason != "" {
			r.finish = *c.FinishReason
			out = append(out, gist{kind: "finish " + *c.FinishReason})
		}
	}
	if len(ev.Choices) == 0 && strings.Contains(data, `"usage"`) && ev.Type == "" {
		out = append(out, gist{kind: "usage"})
	}
	if len(out) == 0 {
		out = append(out, gist{kind: "event"})
	}
	return out
}

// describeGists renders what a chunk's events say, neighbouring text
// (thinking, arguments) merged.
func describeGists(gs []gist) string {
	var merged []gist
	for _, g := range gs {
		if n := len(merged); n > 0 && g.text != "" && merged[n-1].kind == g.kind && merged[n-1].text != "" {
			merged[n-1].text += g.text
			continue
		}
		merged = append(merged, g)
	}
	parts := make([]string, len(merged))
	for i, g := range merged {
		switch g.kind {
		case "text", "thinking", "args", "summary", "refusal":
			parts[i] = g.kind + " " + quote(g.text)
		default:
			parts[i] = g.kind
		}
	}
	return strings.Join(parts, ", ")
}

// complete reads a body that is not a stream: an error body, or a complete
// response of either wire.
func (r *reconstruction) complete(body string) {
	var v struct {
		Type       string     `json:"type"`
		Error      *wireError `json:"error"`
		Choices    []choice   `json:"choices"`
		Content    []block    `json:"content"`
		StopReason string     `json:"stop_reason"`
	}
	if json.Unmarshal([]byte(body), &v) != nil {
		return
	}
	for i := range v.Content {
		if !v.Content[i].ok() {
			return
		}
	}
	ms, ok := deltas(v.Choices, false)
	if !ok {
		return
	}
	if v.Error != nil {
		r.errs = append(r.errs, v.Error.String())
		return
	}
	for i, c := range v.Choices {
		if m := ms[i]; m != nil {
			if content, _ := str(m.Content); content != nil {
				r.text.WriteString(*content)
			}
			if m.ReasoningContent != nil {
				r.thinking.WriteString(*m.ReasoningContent)
			}
			for _, tc := range m.ToolCalls {
				t := r.tool(len(r.tools))
				t.id, t.name = tc.ID, tc.Function.Name
				t.args.WriteString(text(tc.Function.Arguments))
			}
		}
		if c.FinishReason != nil && *c.FinishReason != "" {
			r.finish = *c.FinishReason
		}
	}
	for _, b := range v.Content {
		switch b.Type {
		case "text":
			r.text.WriteString(text(b.Text))
		case "thinking":
			r.thinking.WriteString(text(b.Thinking))
		case "tool_use", "server_tool_use":
			t := r.tool(len(r.tools))
			t.id, t.name = b.ID, b.Name
			t.args.Write(b.Input)
		}
	}
	if v.StopReason != "" {
		r.finish = v.StopReason
	}
}

// quote renders s on one line: Go-quoted, so every byte is visible.
func quote(s string) string { return strconv.Quote(s) }
