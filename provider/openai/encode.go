package openai

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/codec"
	"github.com/openmax/openmax/provider/internal/wirejson"
)

// Encoder writes a reply as the Server-Sent Events of a Chat Completions
// stream, the way the API sends it: a first chunk with the assistant role,
// one chunk per text or reasoning delta, two per tool call (its head, then
// its arguments; see ArgChunk), a finish chunk, the usage in a chunk of its own with no
// choices, and [DONE]. Usage is held until the finish chunk has gone out.
// An Encoder is not safe for concurrent use.
type Encoder struct {
	// ArgChunk, when positive, sends a tool call's arguments in chunks of
	// at most that many bytes (cut between runes), as models stream them;
	// zero sends them whole, in one chunk after the call's head.
	ArgChunk int

	id, model, created json.RawMessage
	tools              int
	finished           bool
	usage              *provider.Usage
}

// NewEncoder returns an encoder for one reply with the given id, model and
// created timestamp (seconds since the epoch).
func NewEncoder(id, model string, created int64) *Encoder {
	return &Encoder{id: wirejson.String(id), model: wirejson.String(model), created: json.RawMessage(strconv.FormatInt(created, 10))}
}

// Open is the event that starts the stream.
func (e *Encoder) Open() []byte {
	return e.chunk(&Delta{Role: wirejson.String("assistant"), Content: wirejson.String("")}, nil)
}

// Part is the events of one part; nil for a part the wire does not carry
// (a thinking signature, a retry, usage before the finish). An Error part
// is an in-stream error frame, after which a stream ends.
func (e *Encoder) Part(p provider.Part) []byte {
	switch p := p.(type) {
	case provider.TextDelta:
		return e.chunk(&Delta{Content: wirejson.String(p.Text)}, nil)
	case provider.ThinkingDelta:
		if p.Text == "" {
			return nil // the wire has no reasoning signatures
		}
		return e.chunk(&Delta{ReasoningContent: &p.Text}, nil)
	case provider.ToolCallPart:
		i := e.tools
		e.tools++
		head := e.chunk(&Delta{ToolCalls: []ToolCallDelta{{Index: &i, ID: p.Call.ID, Type: wirejson.String("function"),
			Function: FunctionDelta{Name: p.Call.Name, Arguments: wirejson.String("")}}}}, nil)
		for _, a := range wirejson.Split(string(p.Call.Args), e.ArgChunk) {
			head = append(head, e.chunk(&Delta{ToolCalls: []ToolCallDelta{{Index: &i, Function: FunctionDelta{Arguments: wirejson.String(a)}}}}, nil)...)
		}
		return head
	case provider.Usage:
		e.usage = &p
		if e.finished {
			return e.usageChunk()
		}
		return nil
	case provider.Finish:
		e.finished = true
		reason := p.Reason
		out := e.chunk(&Delta{}, &reason)
		if e.usage != nil {
			out = append(out, e.usageChunk()...)
		}
		return out
	case provider.Error:
		return ErrorEvent(provider.StreamErrorOf(p.Err))
	}
	return nil // retry announcements are not on the wire
}

// Close is what ends a stream whose parts ran out: [DONE] when the reply
// finished, nothing otherwise (the stream just stops).
func (e *Encoder) Close() []byte {
	if !e.finished {
		return nil
	}
	return []byte("data: [DONE]\n\n")
}

func (e *Encoder) chunk(d *Delta, finish *string) []byte {
	return e.event(Chunk{Choices: []Choice{{Delta: d, FinishReason: finish}}})
}

func (e *Encoder) event(c Chunk) []byte {
	c.ID, c.Object, c.Created, c.Model = e.id, wirejson.String("chat.completion.chunk"), e.created, e.model
	return sseData(wirejson.Marshal(c))
}

func (e *Encoder) usageChunk() []byte {
	u := *e.usage
	e.usage = nil
	return e.event(Chunk{Choices: []Choice{}, Usage: usageOf(u)})
}

func sseData(data []byte) []byte {
	return []byte("data: " + string(data) + "\n\n")
}

// Completion renders parts as one whole chat.completion, the reply to a
// request that did not ask for a stream; ok is false when the parts carry
// no Finish. Error and retry parts are not its business and are skipped.
func Completion(id, model string, created int64, parts []provider.Part) (body []byte, ok bool) {
	var text, thinking strings.Builder
	var hasText, hasThinking bool
	var calls []ToolCallDelta
	var usage *Usage
	var finish *string
	for _, p := range parts {
		switch p := p.(type) {
		case provider.TextDelta:
			text.WriteString(p.Text)
			hasText = true
		case provider.ThinkingDelta:
			thinking.WriteString(p.Text)
			hasThinking = hasThinking || p.Text != ""
		case provider.ToolCallPart:
			calls = append(calls, ToolCallDelta{ID: p.Call.ID, Type: wirejson.String("function"),
				Function: FunctionDelta{Name: p.Call.Name, Arguments: wirejson.String(string(p.Call.Args))}})
		case provider.Usage:
			usage = usageOf(p)
		case provider.Finish:
			r := p.Reason
			finish = &r
		}
	}
	if finish == nil {
		return nil, false
	}
	msg := &Delta{Role: wirejson.String("assistant"), Content: json.RawMessage("null"), ToolCalls: calls}
	if hasText {
		msg.Content = wirejson.String(text.String())
	}
	if hasThinking {
		t := thinking.String()
		msg.ReasoningContent = &t
	}
	return wirejson.Marshal(Chunk{
		ID: wirejson.String(id), Object: wirejson.String("chat.completion"),
		Created: json.RawMessage(strconv.FormatInt(created, 10)), Model: wirejson.String(model),
		Choices: []Choice{{Message: msg, FinishReason: finish}},
		Usage:   usage,
	}), true
}

// ErrorEvent is an in-stream error frame: the error's type is both the
// type and the code (null when it has none).
func ErrorEvent(se *provider.StreamError) []byte {
	d := ErrorDetail{Message: se.Message, Type: se.Type}
	if se.Type != "" {
		t := se.Type
		d.Code = &t
	}
	return sseData(wirejson.Marshal(ErrorBody{Error: d}))
}

// HTTPErrorBody is the JSON body OpenAI answers an error status with. code
// is the error code, written as the type too; empty gives the type OpenAI
// uses for the status (a 429 says the limit hit, "requests", in type and
// rate_limit_exceeded in code). An empty message is the status text.
func HTTPErrorBody(status int, code, message string) []byte {
	return FailureBody(codec.Failure{Status: status, Type: code, Message: message})
}

// FailureBody is the JSON error body of f (see codec.Failure): its type
// is f.Type, or the one OpenAI uses for the status; its code f.Code, else
// f.Type, else (for a 429) rate_limit_exceeded, else null. An empty
// message is the status text.
func FailureBody(f codec.Failure) []byte {
	message := f.Message
	if message == "" {
		message = provider.StatusText(f.Status)
	}
	if message == "" {
		message = fmt.Sprintf("HTTP %d", f.Status)
	}
	e := ErrorDetail{Message: message, Type: f.Type}
	code := f.Code
	if code == "" {
		code = f.Type
	}
	switch {
	case f.Type != "":
	case f.Status == 429:
		e.Type = "requests"
		if code == "" {
			code = "rate_limit_exceeded"
		}
	case f.Status >= 500:
		e.Type = "server_error"
	default:
		e.Type = "invalid_request_error"
	}
	if code != "" {
		e.Code = &code
	}
	return wirejson.Marshal(ErrorBody{Error: e})
}

// StatusMessage is the message OpenAI sends with an error status, where it
// has one of its own (429, 500); empty otherwise.
func StatusMessage(status int) string {
	switch status {
	case 429:
		return "Rate limit reached for requests"
	case 500:
		return "The server had an error while processing your request. Sorry about that!"
	}
	return ""
}
