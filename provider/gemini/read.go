package gemini

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/openmax/openmax/provider/sse"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/codec"
	"github.com/openmax/openmax/provider/internal/wireread"
)

// Reading recorded Gemini traffic (Wire.Parse): a stream's events, or a
// whole reply (one response, or a JSON array of chunks) or an error body.
// Each event says what it holds as notes (text, thoughts, signatures,
// function calls, usage, the finish reason, a blocked prompt, an error
// event) and as the parts the client's own parser (state.Event) yields
// from it: text and thoughts as they stream; the calls, the usage and the
// finish once the stream has ended, so they are the reading's EndParts.

// reader reads a recorded Gemini body.
var reader = wireread.Reader{
	Event: readEvent,
	Whole: readWholeBody,
	WholeParts: func(body []byte, yield func(provider.Part) bool) {
		readWhole(context.Background(), body, yield)
	},
	Client: func(contentType string) wireread.Client { return &state{contentType: contentType} },
}

// readEvent reads one stream event into b and says what it holds.
func readEvent(b *wireread.Builder, _, data string) (notes []codec.Note, unparsed bool) {
	var ch Response
	if json.Unmarshal([]byte(strings.TrimSpace(data)), &ch) != nil {
		return []codec.Note{{Kind: "unparsed event"}}, true
	}
	return readChunk(b, &ch), false
}

// readWholeBody reads a body that is not a stream into b: an error body,
// a whole reply, or a JSON array of chunks (streamGenerateContent without
// alt=sse).
func readWholeBody(b *wireread.Builder, body string) {
	t := bytes.TrimSpace([]byte(body))
	var chunks []Response
	if len(t) > 0 && t[0] == '[' {
		if json.Unmarshal(t, &chunks) != nil {
			return
		}
	} else {
		var ch Response
		if json.Unmarshal(t, &ch) != nil {
			return
		}
		chunks = []Response{ch}
	}
	for i := range chunks {
		readChunk(b, &chunks[i])
	}
}

// readChunk folds one chunk into b and says what it holds, in order.
func readChunk(b *wireread.Builder, ch *Response) []codec.Note {
	var out []codec.Note
	if ch.ResponseID != "" && b.MsgID == "" {
		b.MsgID = ch.ResponseID
	}
	if ch.ModelVersion != "" && b.Model == "" {
		b.Model = ch.ModelVersion
	}
	if s := ch.Error; s != nil {
		e := statusError(s)
		msg := e.Type
		if e.Message != "" {
			msg += ": " + e.Message
		}
		b.Errs = append(b.Errs, msg)
		return []codec.Note{{Kind: "error event " + codec.Quote(msg)}}
	}
	if pf := ch.PromptFeedback; pf != nil && pf.BlockReason != "" {
		msg := "prompt blocked " + pf.BlockReason
		if pf.BlockReasonMessage != "" {
			msg += ": " + pf.BlockReasonMessage
		}
		b.Errs = append(b.Errs, msg)
		out = append(out, codec.Note{Kind: msg})
	}
	for i := range ch.Candidates {
		c := &ch.Candidates[i]
		if c.Index != nil && *c.Index != 0 {
			out = append(out, codec.Note{Kind: "another candidate (not read)"})
			continue
		}
		if c.Content != nil {
			for j := range c.Content.Parts {
				out = append(out, readPart(b, &c.Content.Parts[j])...)
			}
		}
		if c.FinishReason != "" {
			b.Finish = c.FinishReason
			n := "finish " + c.FinishReason
			if c.FinishMessage != "" {
				n += " " + codec.Quote(c.FinishMessage)
			}
			out = append(out, codec.Note{Kind: n})
		}
	}
	if u := ch.UsageMetadata; u != nil {
		readUsage(b, u)
		out = append(out, codec.Note{Kind: "usage"})
	}
	if len(out) == 0 {
		out = append(out, codec.Note{Kind: "event"})
	}
	return out
}

// readPart folds one part of candidate 0 into b.
func readPart(b *wireread.Builder, p *Part) []codec.Note {
	var out []codec.Note
	switch {
	case p.FunctionCall != nil:
		fc := p.FunctionCall
		t := b.Tool(len(b.Tools))
		t.ID, t.Name = fc.ID, fc.Name
		if t.ID == "" {
			// The id the client gives a call the wire sent without one
			// (state.callID), so the reading names it as the client does.
			t.ID = "call_" + strconv.Itoa(len(b.Tools))
			if b.MsgID != "" {
				t.ID = "call_" + b.MsgID + "_" + strconv.Itoa(len(b.Tools))
			}
		}
		args := string(bytes.TrimSpace(fc.Args))
		t.Args.WriteString(args)
		out = append(out, codec.Note{Kind: "call " + fc.Name})
		if args != "" && args != "{}" && args != "null" {
			out = append(out, codec.Note{Kind: codec.NoteArgs, Text: args})
		}
	case p.Thought:
		if p.Text != nil && *p.Text != "" {
			b.Thinking.WriteString(*p.Text)
			out = append(out, codec.Note{Kind: codec.NoteThinking, Text: *p.Text})
		}
	case p.Text != nil:
		if *p.Text != "" {
			b.Text.WriteString(*p.Text)
			out = append(out, codec.Note{Kind: codec.NoteText, Text: *p.Text})
		}
	default:
		out = append(out, codec.Note{Kind: "part (not read)"})
	}
	if p.ThoughtSignature != "" {
		b.Signatures++
		b.SigBytes = append(b.SigBytes, len(p.ThoughtSignature))
		out = append(out, codec.Note{Kind: "signature"})
	}
	return out
}

// readUsage takes the running totals u says into b: input is the prompt
// (cached part included), output the candidates and the thoughts.
func readUsage(b *wireread.Builder, u *UsageMetadata) {
	if b.Usage == nil {
		b.Usage = &codec.Usage{}
	}
	p := u.Part()
	if u.PromptTokenCount != nil {
		b.Usage.Input = p.PromptTokens
	}
	if u.CandidatesTokenCount != nil || u.ThoughtsTokenCount != nil {
		b.Usage.Output = p.CompletionTokens
	}
	if u.TotalTokenCount != nil {
		b.Usage.Total = *u.TotalTokenCount
	}
	if p.CachedTokens != nil {
		b.Usage.Cached = p.CachedTokens
	}
	if p.ReasoningTokens != nil {
		b.Usage.Reasoning = p.ReasoningTokens
	}
}

// claimsBody reports whether a recorded body is a Gemini reply: a stream
// whose first event is a chunk (or the wire's error object), a whole
// reply or a JSON array of chunks, or the wire's error object
// (google.rpc.Status with its status name).
func claimsBody(contentType string, body []byte) bool {
	text := string(body)
	if wireread.IsEventStream(contentType, text) {
		return IsStreamBody(text)
	}
	return IsWholeBody(text)
}

// IsStreamBody reports whether a response body reads as a Gemini event
// stream: its first event's data is a chunk (candidates, usageMetadata
// or promptFeedback) or the wire's error object.
func IsStreamBody(body string) bool {
	spans, _ := sse.Split(body)
	for _, sp := range spans {
		if d := strings.TrimSpace(sp.Data); d != "" {
			return isChunk(d)
		}
	}
	return false
}

// IsWholeBody reports whether a JSON body reads as a whole Gemini reply
// (a chunk, or a JSON array of them).
func IsWholeBody(body string) bool {
	t := strings.TrimSpace(body)
	if strings.HasPrefix(t, "[") {
		var many []json.RawMessage
		return json.Unmarshal([]byte(t), &many) == nil && len(many) > 0 && isChunk(string(many[0]))
	}
	return isChunk(t)
}

// isChunk reports whether data is a JSON object with a member only a
// chunk (or the wire's error object, with its status) has.
func isChunk(data string) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(data), &m) != nil {
		return false
	}
	for _, k := range []string{"candidates", "usageMetadata", "promptFeedback"} {
		if _, ok := m[k]; ok {
			return true
		}
	}
	var e ErrorBody
	return json.Unmarshal([]byte(data), &e) == nil && e.Error != nil && e.Error.Status != ""
}
