package openai

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/codec"
	"github.com/openmax/openmax/provider/internal/wireread"
	"github.com/openmax/openmax/provider/sse"
)

// Reading recorded Chat Completions traffic (Wire.Parse): a stream's
// chunks, or a whole completion or error body, in this package's shapes.
// Each event says what it holds as notes (the role, the content, the
// reasoning, tool calls with their arguments, the finish reason, [DONE],
// error frames) and as the parts the client's own parser (chatStream)
// yields from it.

// reader reads a recorded Chat Completions body.
var reader = wireread.Reader{
	Meta:  wireread.MetaOptions{Usage: true},
	Event: readEvent,
	Whole: readWholeBody,
	WholeParts: func(body []byte, yield func(provider.Part) bool) {
		readWhole(context.Background(), body, yield)
	},
	Client: func(contentType string) wireread.Client { return &chatStream{contentType: contentType} },
}

// recordedEvent is the data of a stream event as a recording is read:
// the choices in this package's shapes (see recordedChoice), an error
// frame, and a type some servers name their events with.
type recordedEvent struct {
	Type    string                `json:"type"`
	Error   *wireread.ErrorObject `json:"error"`
	Choices []recordedChoice      `json:"choices"`
}

// recordedChoice is a Choice as a recording is read. A stream chunk is
// read for its delta and a whole completion for its message, so both are
// held raw here and the one that matters is decoded by itself
// (recordedDelta, recordedMessage); the index is held raw too, as a whole
// completion's is never read.
//
// An event whose data does not decode is unparsed, and a whole response
// that does not decode says nothing. The fields shown must have the types
// shown (role, content and arguments strings, see wireread.Str); a field
// not shown may hold anything (the wrappers hold those raw).
type recordedChoice struct {
	Choice
	Index   json.RawMessage `json:"index"`
	Delta   json.RawMessage `json:"delta"`
	Message json.RawMessage `json:"message"`
}

// recordedDelta is the delta of a stream chunk's choice.
type recordedDelta struct {
	Delta
	Refusal json.RawMessage `json:"refusal"` // not shown
}

// recordedMessage is the message of a whole completion's choice.
type recordedMessage struct {
	Delta
	Refusal   json.RawMessage `json:"refusal"`   // not shown
	Reasoning json.RawMessage `json:"reasoning"` // not shown for a whole completion
}

// deltas decodes the delta of each choice of a stream chunk, or the
// message of each choice of a whole completion (nil where a choice has
// none). ok is false when one does not decode, or holds a content (or, in
// a stream, a role) or tool call arguments that are not strings.
func deltas(cs []recordedChoice, stream bool) (out []*Delta, ok bool) {
	out = make([]*Delta, len(cs))
	for i, c := range cs {
		var d *Delta
		if stream {
			var idx *int
			if len(c.Index) > 0 && json.Unmarshal(c.Index, &idx) != nil {
				return nil, false
			}
			var v *recordedDelta
			if len(c.Delta) > 0 && json.Unmarshal(c.Delta, &v) != nil {
				return nil, false
			}
			if v != nil {
				d = &v.Delta
			}
		} else {
			var v *recordedMessage
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
		if _, ok := wireread.Str(d.Content); !ok {
			return nil, false
		}
		if _, ok := wireread.Str(d.Role); stream && !ok {
			return nil, false
		}
		for _, tc := range d.ToolCalls {
			if _, ok := wireread.Str(tc.Function.Arguments); !ok {
				return nil, false
			}
		}
		out[i] = d
	}
	return out, true
}

// readEvent reads one stream event into b and says what it holds.
func readEvent(b *wireread.Builder, typ, data string) (notes []codec.Note, unparsed bool) {
	if strings.TrimSpace(data) == "[DONE]" {
		b.Signal = "[DONE]"
		return []codec.Note{{Kind: "[DONE]"}}, false
	}
	var ev recordedEvent
	err := json.Unmarshal([]byte(data), &ev)
	var ds []*Delta
	ok := err == nil
	if ok {
		ds, ok = deltas(ev.Choices, true)
	}
	if !ok {
		return []codec.Note{{Kind: "unparsed " + typ}}, true
	}
	if ev.Error != nil {
		b.Errs = append(b.Errs, ev.Error.String())
		return []codec.Note{{Kind: "error event " + codec.Quote(ev.Error.String())}}, false
	}
	if typ == "error" || ev.Type == "error" {
		b.Errs = append(b.Errs, "error event")
		return []codec.Note{{Kind: "error event"}}, false
	}
	var out []codec.Note
	if ev.Type != "" {
		out = append(out, codec.Note{Kind: ev.Type})
	}
	for i, c := range ev.Choices {
		if d := ds[i]; d != nil {
			if role := wireread.Text(d.Role); role != "" {
				out = append(out, codec.Note{Kind: "role " + role})
			}
			if content, _ := wireread.Str(d.Content); content != nil {
				b.Text.WriteString(*content)
				if *content != "" {
					out = append(out, codec.Note{Kind: codec.NoteText, Text: *content})
				}
			}
			th := d.ReasoningContent
			if th == nil {
				th = d.Reasoning
			}
			if th != nil {
				b.Thinking.WriteString(*th)
				out = append(out, codec.Note{Kind: codec.NoteThinking, Text: *th})
			}
			for i, tc := range d.ToolCalls {
				key := i
				if tc.Index != nil {
					key = *tc.Index
				}
				t := b.Tool(key)
				if tc.ID != "" {
					t.ID = tc.ID
				}
				if tc.Function.Name != "" {
					t.Name += tc.Function.Name
					out = append(out, codec.Note{Kind: "tool " + tc.Function.Name})
				}
				args := wireread.Text(tc.Function.Arguments)
				t.Args.WriteString(args)
				if args != "" {
					out = append(out, codec.Note{Kind: codec.NoteArgs, Text: args})
				}
			}
		}
		if c.FinishReason != nil && *c.FinishReason != "" {
			b.Finish = *c.FinishReason
			out = append(out, codec.Note{Kind: "finish " + *c.FinishReason})
		}
	}
	if len(ev.Choices) == 0 && strings.Contains(data, `"usage"`) && ev.Type == "" {
		out = append(out, codec.Note{Kind: "usage"})
	}
	if len(out) == 0 {
		out = append(out, codec.Note{Kind: "event"})
	}
	return out, false
}

// readWholeBody reads a body that is not a stream into b: an error body,
// or a whole completion.
func readWholeBody(b *wireread.Builder, body string) {
	var v struct {
		Error   *wireread.ErrorObject `json:"error"`
		Choices []recordedChoice      `json:"choices"`
	}
	if json.Unmarshal([]byte(body), &v) != nil {
		return
	}
	ms, ok := deltas(v.Choices, false)
	if !ok {
		return
	}
	if v.Error != nil {
		b.Errs = append(b.Errs, v.Error.String())
		return
	}
	for i, c := range v.Choices {
		if m := ms[i]; m != nil {
			if content, _ := wireread.Str(m.Content); content != nil {
				b.Text.WriteString(*content)
			}
			if m.ReasoningContent != nil {
				b.Thinking.WriteString(*m.ReasoningContent)
			}
			for _, tc := range m.ToolCalls {
				t := b.Tool(len(b.Tools))
				t.ID, t.Name = tc.ID, tc.Function.Name
				t.Args.WriteString(wireread.Text(tc.Function.Arguments))
			}
		}
		if c.FinishReason != nil && *c.FinishReason != "" {
			b.Finish = *c.FinishReason
		}
	}
}

// claimsBody reports whether a recorded body is a Chat Completions reply:
// a chunk or completion (its object chat.completion*, or choices) in a
// stream's events or as the whole body.
func claimsBody(contentType string, body []byte) bool {
	is := func(data string) bool {
		var v struct {
			Object  string            `json:"object"`
			Choices []json.RawMessage `json:"choices"`
		}
		return json.Unmarshal([]byte(data), &v) == nil && (strings.HasPrefix(v.Object, "chat.completion") || len(v.Choices) > 0)
	}
	text := string(body)
	if !wireread.IsEventStream(contentType, text) {
		return is(text)
	}
	spans, _ := sse.Split(text)
	for _, sp := range spans {
		if is(sp.Data) {
			return true
		}
	}
	return false
}
