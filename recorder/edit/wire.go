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
	"github.com/openmax/openmax/recorder/cassette"
)

// The wires a cassette's traffic speaks.
const (
	wireOpenAI    = "openai"
	wireAnthropic = "anthropic"
)

// wireOf is the wire of an interaction: Anthropic for a path ending in
// /messages, OpenAI for one ending in /chat/completions; otherwise
// Anthropic when the request carried an Anthropic-Version header or the
// body holds a message_start event, OpenAI else.
func wireOf(it *cassette.Interaction) string {
	p := urlPath(it.Request.URL)
	switch {
	case anthropic.IsPath(p):
		return wireAnthropic
	case openai.IsPath(p):
		return wireOpenAI
	case anthropic.HasVersionHeader(it.Request.Headers), anthropic.IsStreamBody(it.Body()):
		return wireAnthropic
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

// eventEnd is the length of the prefix of s that ends at the last event
// boundary (a blank line), 0 when there is none.
func eventEnd(s string) int {
	end := 0
	for _, sep := range []string{"\n\n", "\r\n\r\n", "\r\r"} {
		if i := strings.LastIndex(s, sep); i >= 0 && i+len(sep) > end {
			end = i + len(sep)
		}
	}
	return end
}

// endsEvent reports whether s (non-empty) ends at an event boundary.
func endsEvent(s string) bool { return eventEnd(s) == len(s) }

// nextEventEnd is the length of the prefix of s that completes the event
// in progress, -1 when s never completes it.
func nextEventEnd(s string) int {
	best := -1
	for _, sep := range []string{"\n\n", "\r\n\r\n", "\r\r"} {
		if i := strings.Index(s, sep); i >= 0 && (best < 0 || i+len(sep) < best) {
			best = i + len(sep)
		}
	}
	return best
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
		t = &toolCall{}
		r.byKey[key] = t
		r.tools = append(r.tools, t)
	}
	return t
}

// reconstruct reads an interaction's body.
func reconstruct(it *cassette.Interaction) *reconstruction {
	body := it.Body()
	r := &reconstruction{}
	if body == "" {
		return r
	}
	if isEventStream(it) {
		r.stream = true
		evs, tail := splitEvents(body)
		chunks := it.Chunks()
		r.chunkGists = make([][]gist, len(chunks))
		r.chunkRest = make([]int, len(chunks))
		j, start := 0, 0 // the chunk an event ends in, and its offset
		lastEnd := 0
		for _, ev := range evs {
			for j < len(chunks) && ev.end > start+len(chunks[j].Data) {
				r.chunkRest[j] = len(chunks[j].Data) - max(lastEnd-start, 0)
				start += len(chunks[j].Data)
				j++
			}
			r.events++
			g := r.event(ev.typ, ev.data)
			if j < len(chunks) {
				r.chunkGists[j] = append(r.chunkGists[j], g...)
			}
			lastEnd = ev.end
		}
		for ; j < len(chunks); j++ {
			r.chunkRest[j] = len(chunks[j].Data) - max(lastEnd-start, 0)
			start += len(chunks[j].Data)
		}
		r.partial = tail
		return r
	}
	r.complete(body)
	return r
}

// rawEvent is one SSE event of a body and the offset just past its end.
type rawEvent struct {
	typ, data string
	end       int
}

// splitEvents parses an SSE body by the WHATWG rules (as provider/sse
// does: data lines joined by newlines, comments skipped, LF, CRLF or CR
// line ends, an event dispatched only at a blank line), keeping where
// each event ends. tail is the size of an unterminated last event, 0 when
// the body ends at an event boundary (or in blank lines and comments).
func splitEvents(body string) (evs []rawEvent, tail int) {
	var typ string
	var data strings.Builder
	hasData, pending := false, false
	last := 0 // offset past the last dispatched event or ignorable line
	for i := 0; i < len(body); {
		j := strings.IndexAny(body[i:], "\r\n")
		if j < 0 {
			break // an unterminated line
		}
		line := body[i : i+j]
		next := i + j + 1
		if body[i+j] == '\r' && next < len(body) && body[next] == '\n' {
			next++
		}
		i = next
		if line == "" {
			if hasData {
				evs = append(evs, rawEvent{typ: typ, data: strings.TrimSuffix(data.String(), "\n"), end: i})
			}
			typ, hasData, pending = "", false, false
			data.Reset()
			last = i
			continue
		}
		if line[0] == ':' {
			if !pending {
				last = i
			}
			continue
		}
		pending = true
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "data":
			data.WriteString(value)
			data.WriteByte('\n')
			hasData = true
		case "event":
			typ = value
		}
	}
	return evs, len(body) - last
}

// sseEvent is the data of an event of either wire.
type sseEvent struct {
	Type         string     `json:"type"`
	Error        *wireError `json:"error"`
	Index        *int       `json:"index"`
	ContentBlock *block     `json:"content_block"`
	Delta        *struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		Thinking    string `json:"thinking"`
		PartialJSON string `json:"partial_json"`
		Signature   string `json:"signature"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Choices []struct {
		Index *int `json:"index"`
		Delta *struct {
			Role             string           `json:"role"`
			Content          *string          `json:"content"`
			ReasoningContent *string          `json:"reasoning_content"`
			Reasoning        *string          `json:"reasoning"`
			ToolCalls        []openAIToolCall `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
}

type block struct {
	Type     string          `json:"type"`
	Text     string          `json:"text"`
	Thinking string          `json:"thinking"`
	ID       string          `json:"id"`
	Name     string          `json:"name"`
	Input    json.RawMessage `json:"input"`
}

type openAIToolCall struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
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
	if err := json.Unmarshal([]byte(data), &ev); err != nil {
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
				r.text.WriteString(b.Text)
				out = append(out, gist{kind: "text block"})
				if b.Text != "" {
					out = append(out, gist{kind: "text", text: b.Text})
				}
			case "thinking":
				r.thinking.WriteString(b.Thinking)
				out = append(out, gist{kind: "thinking block"})
				if b.Thinking != "" {
					out = append(out, gist{kind: "thinking", text: b.Thinking})
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
		if ev.Delta != nil && ev.Delta.StopReason != "" {
			r.finish = ev.Delta.StopReason
			out = append(out, gist{kind: "stop " + ev.Delta.StopReason})
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
	for _, c := range ev.Choices {
		if d := c.Delta; d != nil {
			if d.Role != "" {
				out = append(out, gist{kind: "role " + d.Role})
			}
			if d.Content != nil {
				r.text.WriteString(*d.Content)
				if *d.Content != "" {
					out = append(out, gist{kind: "text", text: *d.Content})
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
				t.args.WriteString(tc.Function.Arguments)
				if tc.Function.Arguments != "" {
					out = append(out, gist{kind: "args", text: tc.Function.Arguments})
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
		case "text", "thinking", "args":
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
		Type    string     `json:"type"`
		Error   *wireError `json:"error"`
		Choices []struct {
			Message *struct {
				Content          *string          `json:"content"`
				ReasoningContent *string          `json:"reasoning_content"`
				ToolCalls        []openAIToolCall `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Content    []block `json:"content"`
		StopReason string  `json:"stop_reason"`
	}
	if json.Unmarshal([]byte(body), &v) != nil {
		return
	}
	if v.Error != nil {
		r.errs = append(r.errs, v.Error.String())
		return
	}
	for _, c := range v.Choices {
		if m := c.Message; m != nil {
			if m.Content != nil {
				r.text.WriteString(*m.Content)
			}
			if m.ReasoningContent != nil {
				r.thinking.WriteString(*m.ReasoningContent)
			}
			for _, tc := range m.ToolCalls {
				t := r.tool(len(r.tools))
				t.id, t.name = tc.ID, tc.Function.Name
				t.args.WriteString(tc.Function.Arguments)
			}
		}
		if c.FinishReason != "" {
			r.finish = c.FinishReason
		}
	}
	for _, b := range v.Content {
		switch b.Type {
		case "text":
			r.text.WriteString(b.Text)
		case "thinking":
			r.thinking.WriteString(b.Thinking)
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
