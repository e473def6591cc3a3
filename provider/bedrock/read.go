package bedrock

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/openmax/openmax/provider/anthropic"
	"github.com/openmax/openmax/provider/bedrock/eventstream"
	"github.com/openmax/openmax/provider/codec"
)

// Reading recorded Bedrock traffic: a body is split into its
// event-stream messages with their byte offsets, and each says what it
// holds, as notes for a person and as the parts the client's own parser
// (the streamState of its operation) yields from it, in the registry's
// shapes (provider/codec): each event is one event-stream message.

// reader accumulates what a reply says.
type reader struct {
	r     codec.Reading
	tools map[int]int // block index → index in r.Tools
	text  strings.Builder
	think strings.Builder
}

func (rd *reader) tool(i int) *codec.ToolCall {
	if rd.tools == nil {
		rd.tools = map[int]int{}
	}
	j, ok := rd.tools[i]
	if !ok {
		j = len(rd.r.Tools)
		rd.tools[i] = j
		rd.r.Tools = append(rd.r.Tools, codec.ToolCall{})
	}
	return &rd.r.Tools[j]
}

// Parse reads a recorded response body of api. contentType is the
// recorded Content-Type, "" when none was recorded: a body that starts
// with '{' is then a whole JSON body, anything else a stream. Parse never
// fails: what it cannot read it reports (Event.Unparsed, Tail) and leaves
// out.
func Parse(api API, contentType string, body []byte) *codec.Reading {
	rd := &reader{}
	if !isStream(contentType, body) {
		rd.whole(api, body)
		return rd.done()
	}
	rd.r.Stream = true
	frames, tail, ferr := eventstream.Split(body)
	st := newState(api)
	over := false
	for _, f := range frames {
		ev := codec.Event{Start: f.Start, End: f.End, Name: f.Message.String(":event-type")}
		if !over {
			ev.Parts, over = st.message(f.Message)
		}
		if api == APIInvoke {
			rd.invokeNotes(f.Message, &ev)
		} else {
			rd.converseNotes(f.Message, &ev)
		}
		rd.r.Events = append(rd.r.Events, ev)
	}
	end := len(body) - tail
	switch {
	case ferr != nil:
		// The framing broke: the rest is one unreadable event.
		rd.r.Events = append(rd.r.Events, codec.Event{Start: end, End: len(body), Unparsed: true, Notes: []codec.Note{{Kind: "malformed: " + ferr.Error()}}})
		rd.r.Errors = append(rd.r.Errors, ferr.Error())
	case tail > 0:
		rd.r.Tail = tail
	}
	if !over {
		rd.r.EndParts = st.end(endError(body, len(frames)))
	}
	return rd.done()
}

// endError is how the client's read of body ends after its first n
// messages: io.EOF at a clean end, else the decoder's own error (a
// truncation, a broken message), word for word.
func endError(body []byte, n int) error {
	d := eventstream.NewDecoder(bytes.NewReader(body))
	for {
		_, err := d.Next()
		if err != nil {
			return err
		}
		if n--; n < 0 {
			return io.EOF // not reached: Split and the decoder agree
		}
	}
}

// done is the reading put together.
func (rd *reader) done() *codec.Reading {
	rd.r.Text, rd.r.Thinking = rd.text.String(), rd.think.String()
	return &rd.r
}

// ClaimsBody reports whether a recorded response body is unmistakably a
// reply of api: an event stream whose first message parses and is an
// event of the operation (a chunk for invoke; a Converse event for
// converse) or an exception; or, for converse, a whole Converse reply
// (output and stopReason). A whole invoke reply is an Anthropic message
// and an error body Bedrock's bare {"message"}: neither is claimed, as
// another wire could have sent them.
func ClaimsBody(api API, contentType string, body []byte) bool {
	if len(body) == 0 {
		return false
	}
	if !isStream(contentType, body) {
		if api == APIInvoke {
			return false
		}
		var v struct {
			Output     *json.RawMessage `json:"output"`
			StopReason *string          `json:"stopReason"`
		}
		return json.Unmarshal(body, &v) == nil && v.Output != nil && v.StopReason != nil
	}
	frames, _, _ := eventstream.Split(body)
	if len(frames) == 0 {
		return false
	}
	m := frames[0].Message
	switch m.String(":message-type") {
	case "exception", "error":
		return true
	case "event":
	default:
		return false
	}
	typ := m.String(":event-type")
	if api == APIInvoke {
		return typ == "chunk"
	}
	switch typ {
	case "messageStart", "contentBlockStart", "contentBlockDelta", "contentBlockStop", "messageStop", "metadata":
		return true
	}
	return false
}

// isStream tells an event stream from a whole JSON body.
func isStream(contentType string, body []byte) bool {
	ct := strings.ToLower(contentType)
	switch {
	case strings.Contains(ct, "vnd.amazon.eventstream"):
		return true
	case ct != "":
		return false
	}
	return !bytes.HasPrefix(bytes.TrimSpace(body), []byte("{"))
}

// exceptionNote records an exception message.
func (rd *reader) exceptionNote(m eventstream.Message, ev *codec.Event) bool {
	se := exceptionError(m)
	if se == nil {
		return false
	}
	ev.Name = m.String(":exception-type")
	if ev.Name == "" {
		ev.Name = m.String(":error-code")
	}
	rd.r.Errors = append(rd.r.Errors, se.Error())
	ev.Notes = []codec.Note{{Kind: "exception " + quote(se.Error())}}
	return true
}

// converseNotes reads a Converse message into the reading.
func (rd *reader) converseNotes(m eventstream.Message, ev *codec.Event) {
	if rd.exceptionNote(m, ev) {
		return
	}
	var e ConverseEvent
	if json.Unmarshal(m.Payload, &e) != nil {
		ev.Unparsed = true
		ev.Notes = []codec.Note{{Kind: "unparsed " + ev.Name}}
		return
	}
	idx := 0
	if e.ContentBlockIndex != nil {
		idx = *e.ContentBlockIndex
	}
	note := func(kind, text string) { ev.Notes = append(ev.Notes, codec.Note{Kind: kind, Text: text}) }
	switch ev.Name {
	case "contentBlockStart":
		if e.Start != nil && e.Start.ToolUse != nil {
			t := rd.tool(idx)
			t.ID, t.Name = e.Start.ToolUse.ToolUseID, e.Start.ToolUse.Name
			note("tool "+t.Name, "")
		} else {
			note("block start", "")
		}
	case "contentBlockDelta":
		switch d := e.Delta; {
		case d == nil:
			note("empty delta", "")
		case d.Text != nil:
			rd.text.WriteString(*d.Text)
			note(codec.NoteText, *d.Text)
		case d.ToolUse != nil:
			t := rd.tool(idx)
			t.Args += d.ToolUse.Input
			note(codec.NoteArgs, d.ToolUse.Input)
		case d.ReasoningContent != nil:
			r := d.ReasoningContent
			if r.Text != "" {
				rd.think.WriteString(r.Text)
				note(codec.NoteThinking, r.Text)
			}
			if r.Signature != "" {
				rd.r.Signatures++
				rd.r.SignatureBytes = append(rd.r.SignatureBytes, len(r.Signature))
				note("signature", "")
			}
			if r.RedactedContent != "" {
				rd.r.Signatures++
				rd.r.SignatureBytes = append(rd.r.SignatureBytes, len(r.RedactedContent))
				note("redacted reasoning", "")
			}
		default:
			note("delta", "")
		}
	case "contentBlockStop":
		note("block stop", "")
	case "messageStart":
		note("messageStart", "")
	case "messageStop":
		rd.r.Finish, rd.r.Signal = e.StopReason, "messageStop"
		note("stop "+e.StopReason, "")
	case "metadata":
		if u := e.Usage; u != nil {
			rd.r.Usage = &codec.Usage{Input: u.InputTokens, Output: u.OutputTokens, Total: u.TotalTokens, Cached: u.CacheReadInputTokens}
			note(fmt.Sprintf("usage %d in, %d out", u.InputTokens, u.OutputTokens), "")
		} else {
			note("metadata", "")
		}
	default:
		note(ev.Name, "")
	}
}

// invokeStart is the message of an invoke reply's message_start, as far
// as a reading shows it.
type invokeStart struct {
	Message *struct {
		ID    string          `json:"id"`
		Model string          `json:"model"`
		Usage anthropic.Usage `json:"usage"`
	} `json:"message"`
}

// invokeNotes reads an invoke message into the reading: a chunk by its
// Anthropic event.
func (rd *reader) invokeNotes(m eventstream.Message, ev *codec.Event) {
	if rd.exceptionNote(m, ev) {
		return
	}
	if ev.Name != "chunk" {
		ev.Notes = []codec.Note{{Kind: ev.Name}}
		return
	}
	data, err := chunkEvent(m)
	var e anthropic.Event
	if err != nil || json.Unmarshal(data, &e) != nil {
		ev.Unparsed = true
		ev.Notes = []codec.Note{{Kind: "unparsed chunk"}}
		return
	}
	note := func(kind, text string) { ev.Notes = append(ev.Notes, codec.Note{Kind: kind, Text: text}) }
	idx := 0
	if e.Index != nil {
		idx = *e.Index
	}
	switch e.Type {
	case "message_start":
		var s invokeStart
		if json.Unmarshal(data, &s) == nil && s.Message != nil {
			rd.r.MessageID, rd.r.Model = s.Message.ID, s.Message.Model
			rd.usage(&s.Message.Usage)
		}
		note("message_start", "")
	case "content_block_start":
		cb := e.ContentBlock
		switch {
		case cb == nil:
			note("block start", "")
		case cb.Type == "tool_use" || cb.Type == "server_tool_use":
			t := rd.tool(idx)
			t.ID, t.Name = cb.ID, cb.Name
			note("tool "+cb.Name, "")
		case cb.Type == "redacted_thinking":
			rd.r.Signatures++
			rd.r.SignatureBytes = append(rd.r.SignatureBytes, len(cb.Data))
			note("redacted_thinking block", "")
		default:
			note(cb.Type+" block", "")
		}
	case "content_block_delta":
		d := e.Delta
		if d == nil {
			note("empty delta", "")
			break
		}
		switch d.Type {
		case "text_delta":
			rd.text.WriteString(d.Text)
			note(codec.NoteText, d.Text)
		case "thinking_delta":
			rd.think.WriteString(d.Thinking)
			note(codec.NoteThinking, d.Thinking)
		case "signature_delta":
			rd.r.Signatures++
			rd.r.SignatureBytes = append(rd.r.SignatureBytes, len(d.Signature))
			note("signature", "")
		case "input_json_delta":
			t := rd.tool(idx)
			t.Args += d.PartialJSON
			note(codec.NoteArgs, d.PartialJSON)
		default:
			note(d.Type, "")
		}
	case "message_delta":
		if e.Delta != nil && e.Delta.StopReason != nil {
			rd.r.Finish = *e.Delta.StopReason
			note("stop "+rd.r.Finish, "")
		} else {
			note("message_delta", "")
		}
		rd.usage(e.Usage)
	case "message_stop":
		rd.r.Signal = "message_stop"
		note("message_stop", "")
	case "error":
		if e.Error != nil {
			s := e.Error.Type + ": " + e.Error.Message
			rd.r.Errors = append(rd.r.Errors, s)
			note("error event "+quote(s), "")
		}
	default:
		note(e.Type, "")
	}
}

// usage folds an Anthropic usage into the reading: the latest count of
// each side wins.
func (rd *reader) usage(u *anthropic.Usage) {
	if u == nil || (u.InputTokens == nil && u.OutputTokens == nil) {
		return
	}
	if rd.r.Usage == nil {
		rd.r.Usage = &codec.Usage{}
	}
	if u.InputTokens != nil {
		rd.r.Usage.Input = *u.InputTokens
	}
	if u.OutputTokens != nil {
		rd.r.Usage.Output = *u.OutputTokens
	}
	if u.CacheReadInputTokens != nil {
		c := *u.CacheReadInputTokens
		rd.r.Usage.Cached = &c
	}
	rd.r.Usage.Total = rd.r.Usage.Input + rd.r.Usage.Output
}

// whole reads a body that is not a stream: an error body, a whole
// Converse reply, or (invoke) an Anthropic message.
func (rd *reader) whole(api API, body []byte) {
	var v struct {
		Message *string `json:"message"`
		Output  *struct {
			Message ConverseMessage `json:"message"`
		} `json:"output"`
		StopReason string `json:"stopReason"`
		Usage      *Usage `json:"usage"`
		ID         string `json:"id"`
		Model      string `json:"model"`
		Content    []struct {
			anthropic.ContentBlock
			Signature string `json:"signature"`
		} `json:"content"`
		StopReasonA *string                `json:"stop_reason"`
		Error       *anthropic.ErrorDetail `json:"error"`
	}
	if json.Unmarshal(body, &v) != nil {
		return
	}
	switch {
	case v.Message != nil:
		rd.r.Errors = append(rd.r.Errors, *v.Message)
	case v.Error != nil:
		rd.r.Errors = append(rd.r.Errors, v.Error.Type+": "+v.Error.Message)
	case v.Output != nil:
		for i, b := range v.Output.Message.Content {
			switch {
			case b.Text != nil:
				rd.text.WriteString(*b.Text)
			case b.ReasoningContent != nil && b.ReasoningContent.ReasoningText != nil:
				rd.think.WriteString(b.ReasoningContent.ReasoningText.Text)
				if s := b.ReasoningContent.ReasoningText.Signature; s != "" {
					rd.r.Signatures++
					rd.r.SignatureBytes = append(rd.r.SignatureBytes, len(s))
				}
			case b.ToolUse != nil:
				t := rd.tool(i)
				t.ID, t.Name, t.Args = b.ToolUse.ToolUseID, b.ToolUse.Name, string(b.ToolUse.Input)
			}
		}
		rd.r.Finish = v.StopReason
		if u := v.Usage; u != nil {
			rd.r.Usage = &codec.Usage{Input: u.InputTokens, Output: u.OutputTokens, Total: u.TotalTokens, Cached: u.CacheReadInputTokens}
		}
	case api == APIInvoke && v.Content != nil:
		rd.r.MessageID, rd.r.Model = v.ID, v.Model
		for i, b := range v.Content {
			switch b.Type {
			case "text":
				var s string
				_ = json.Unmarshal(b.Text, &s)
				rd.text.WriteString(s)
			case "thinking":
				var s string
				_ = json.Unmarshal(b.Thinking, &s)
				rd.think.WriteString(s)
				if b.Signature != "" {
					rd.r.Signatures++
					rd.r.SignatureBytes = append(rd.r.SignatureBytes, len(b.Signature))
				}
			case "tool_use":
				t := rd.tool(i)
				t.ID, t.Name, t.Args = b.ID, b.Name, string(b.Input)
			}
		}
		if v.StopReasonA != nil {
			rd.r.Finish = *v.StopReasonA
		}
	}
}

// quote quotes s for a note, cut to a readable length.
func quote(s string) string {
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return fmt.Sprintf("%q", s)
}
