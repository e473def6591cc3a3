package anthropic

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/codec"
	"github.com/openmax/openmax/provider/internal/wireread"
)

// Reading recorded Messages traffic (Wire.Parse): a stream's events, or a
// whole message or error body, in this package's shapes. Each event says
// what it holds as notes (blocks as they open, text, thinking, signatures,
// tool input, the stop reason, message_stop, error events) and as the
// parts the client's own parser (state.event) yields from it.

// reader reads a recorded Messages body.
var reader = wireread.Reader{
	Meta:  wireread.MetaOptions{Usage: true, Signatures: true},
	Event: readEvent,
	Whole: readWholeBody,
	WholeParts: func(body []byte, yield func(provider.Part) bool) {
		yield(provider.Error{Err: jsonReply(bytes.NewReader(body))})
	},
	Client: func(string) wireread.Client { return newState() },
}

// recordedEvent is the data of a stream event as a recording is read:
// Event, with the fields not shown held raw and the error object of
// either shape.
type recordedEvent struct {
	Event
	Message      json.RawMessage       `json:"message"` // not shown
	Usage        json.RawMessage       `json:"usage"`   // not shown
	Error        *wireread.ErrorObject `json:"error"`
	ContentBlock *recordedBlock        `json:"content_block"`
}

// recordedBlock is a ContentBlock as a recording is read: the start of a
// streamed block, or a block of a whole message. The data of a
// redacted_thinking block is not shown, so it is held raw; Text and
// Thinking must be strings (see ok).
type recordedBlock struct {
	ContentBlock
	Data json.RawMessage `json:"data"` // not shown
}

// ok reports whether b's text and thinking are JSON strings (or absent, or
// null), the types shown.
func (b *recordedBlock) ok() bool {
	if b == nil {
		return true
	}
	_, okText := wireread.Str(b.Text)
	_, okThinking := wireread.Str(b.Thinking)
	return okText && okThinking
}

// readEvent reads one stream event into b and says what it holds.
func readEvent(b *wireread.Builder, typ, data string) (notes []codec.Note, unparsed bool) {
	if strings.TrimSpace(data) == "[DONE]" {
		b.Signal = "[DONE]"
		return []codec.Note{{Kind: "[DONE]"}}, false
	}
	var ev recordedEvent
	if json.Unmarshal([]byte(data), &ev) != nil || !ev.ContentBlock.ok() {
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
	index := -1
	if ev.Index != nil {
		index = *ev.Index
	}
	switch ev.Type {
	case "content_block_start":
		if cb := ev.ContentBlock; cb != nil {
			switch cb.Type {
			case "text":
				t := wireread.Text(cb.Text)
				b.Text.WriteString(t)
				out = append(out, codec.Note{Kind: "text block"})
				if t != "" {
					out = append(out, codec.Note{Kind: codec.NoteText, Text: t})
				}
			case "thinking":
				t := wireread.Text(cb.Thinking)
				b.Thinking.WriteString(t)
				out = append(out, codec.Note{Kind: "thinking block"})
				if t != "" {
					out = append(out, codec.Note{Kind: codec.NoteThinking, Text: t})
				}
			case "tool_use", "server_tool_use":
				t := b.Tool(index)
				t.ID, t.Name = cb.ID, cb.Name
				out = append(out, codec.Note{Kind: "tool " + cb.Name})
				if in := string(bytes.TrimSpace(cb.Input)); in != "" && in != "{}" && in != "null" {
					t.Args.WriteString(in)
					out = append(out, codec.Note{Kind: codec.NoteArgs, Text: in})
				}
			default:
				out = append(out, codec.Note{Kind: cb.Type + " block"})
			}
		}
	case "content_block_delta":
		if d := ev.Delta; d != nil {
			switch d.Type {
			case "text_delta":
				b.Text.WriteString(d.Text)
				out = append(out, codec.Note{Kind: codec.NoteText, Text: d.Text})
			case "thinking_delta":
				b.Thinking.WriteString(d.Thinking)
				out = append(out, codec.Note{Kind: codec.NoteThinking, Text: d.Thinking})
			case "input_json_delta":
				b.Tool(index).Args.WriteString(d.PartialJSON)
				out = append(out, codec.Note{Kind: codec.NoteArgs, Text: d.PartialJSON})
			case "signature_delta":
				b.Signatures++
				out = append(out, codec.Note{Kind: "signature"})
			default:
				out = append(out, codec.Note{Kind: d.Type})
			}
		}
	case "message_delta":
		if d := ev.Delta; d != nil && d.StopReason != nil && *d.StopReason != "" {
			b.Finish = *d.StopReason
			out = append(out, codec.Note{Kind: "stop " + *d.StopReason})
		} else {
			out = append(out, codec.Note{Kind: ev.Type})
		}
	case "message_stop":
		b.Signal = "message_stop"
		out = append(out, codec.Note{Kind: ev.Type})
	case "":
		if strings.Contains(data, `"usage"`) {
			out = append(out, codec.Note{Kind: "usage"})
		}
	default:
		out = append(out, codec.Note{Kind: ev.Type})
	}
	if len(out) == 0 {
		out = append(out, codec.Note{Kind: "event"})
	}
	return out, false
}

// readWholeBody reads a body that is not a stream into b: an error body,
// or a whole message.
func readWholeBody(b *wireread.Builder, body string) {
	var v struct {
		Error      *wireread.ErrorObject `json:"error"`
		Content    []recordedBlock       `json:"content"`
		StopReason string                `json:"stop_reason"`
	}
	if json.Unmarshal([]byte(body), &v) != nil {
		return
	}
	for i := range v.Content {
		if !v.Content[i].ok() {
			return
		}
	}
	if v.Error != nil {
		b.Errs = append(b.Errs, v.Error.String())
		return
	}
	for _, cb := range v.Content {
		switch cb.Type {
		case "text":
			b.Text.WriteString(wireread.Text(cb.Text))
		case "thinking":
			b.Thinking.WriteString(wireread.Text(cb.Thinking))
		case "tool_use", "server_tool_use":
			t := b.Tool(len(b.Tools))
			t.ID, t.Name = cb.ID, cb.Name
			t.Args.Write(cb.Input)
		}
	}
	if v.StopReason != "" {
		b.Finish = v.StopReason
	}
}

// claimsBody reports whether a recorded body is a Messages reply: a
// stream holding a message_start event, a whole message, or Anthropic's
// error object ({"type": "error", "error": ...}).
func claimsBody(contentType string, body []byte) bool {
	text := string(body)
	if wireread.IsEventStream(contentType, text) {
		return IsStreamBody(text)
	}
	var v struct {
		Type  string          `json:"type"`
		Role  string          `json:"role"`
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &v) != nil {
		return false
	}
	return v.Type == "message" && v.Role == "assistant" || v.Type == "error" && len(v.Error) > 0
}
