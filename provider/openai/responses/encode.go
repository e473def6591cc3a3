package responses

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/internal/wirejson"
	"github.com/openmax/openmax/provider/openai"
)

// Encoder writes a reply as the typed events of a Responses stream, the
// way the API sends them: response.created and response.in_progress, then
// one output item per run of parts of one kind, and a terminal event.
//
//   - Text is a message item: output_item.added (content []),
//     content_part.added, an output_text.delta per TextDelta, then
//     output_text.done, content_part.done and output_item.done.
//   - Reasoning is a reasoning item with summary parts:
//     reasoning_summary_part.added, a reasoning_summary_text.delta per
//     ThinkingDelta, reasoning_summary_text.done, reasoning_summary_part.done.
//     A ThinkingDelta whose text is exactly "\n\n" between two others starts
//     the item's next summary part (the client says a part break as that
//     delta). A ThinkingDelta with a Signature closes the item: its
//     output_item.done carries the signature as encrypted_content.
//     A MessagePhase gives the message item its phase (on output_item.done).
//   - A tool call is a function_call item: added with empty arguments, its
//     arguments in function_call_arguments.delta events (see ArgChunk),
//     function_call_arguments.done and output_item.done.
//
// A Finish closes the open item; the terminal event goes out in Close,
// carrying every item and the usage (which may come after the Finish):
// response.incomplete for the reasons IncompleteReason names, otherwise
// response.completed. An Error part is response.failed, after which a
// stream ends. Every event's sequence_number counts from 0, and item ids
// derive from the response id and the item's output index, so the bytes
// are stable. An Encoder is not safe for concurrent use.
type Encoder struct {
	// ArgChunk, when positive, sends a tool call's arguments in delta
	// events of at most that many bytes (cut between runes), as models
	// stream them; zero sends them whole, in one delta.
	ArgChunk int

	id, model string
	created   int64
	seq       int64
	items     []Item // every item closed so far, in output order
	usage     *provider.Usage
	finish    *string

	// The open item: cur is "", "message" or "reasoning".
	cur     string
	text    strings.Builder // the open message's text, or summary part's
	summary []Content       // the open reasoning item's closed summary parts
	inPart  bool            // a summary part is open
	split   bool            // a "\n\n" delta is held: a part break, or text
	phase   string          // the open (or next) message's phase
}

// NewEncoder returns an encoder for one reply with the given response id,
// model and created_at timestamp (seconds since the epoch).
func NewEncoder(id, model string, created int64) *Encoder {
	return &Encoder{id: id, model: model, created: created}
}

// event writes ev as one SSE frame, numbering it.
func (e *Encoder) event(ev Event) []byte {
	ev.SequenceNumber = e.seq
	e.seq++
	return []byte("event: " + ev.Type + "\ndata: " + string(wirejson.Marshal(ev)) + "\n\n")
}

// response is the response object in its current state.
func (e *Encoder) response(status string) *Response {
	out := e.items
	if out == nil {
		out = []Item{}
	}
	return &Response{ID: e.id, Object: "response", CreatedAt: json.RawMessage(strconv.FormatInt(e.created, 10)),
		Status: status, Model: e.model, Output: out}
}

// Open is the events that start the stream: response.created and
// response.in_progress.
func (e *Encoder) Open() []byte {
	out := e.event(Event{Type: EventCreated, Response: e.response("in_progress")})
	return append(out, e.event(Event{Type: EventInProgress, Response: e.response("in_progress")})...)
}

// itemID is the id of the item at output index i, with its type's prefix.
func (e *Encoder) itemID(prefix string, i int) string {
	return prefix + "_" + strings.TrimPrefix(e.id, "resp_") + "_" + strconv.Itoa(i)
}

// at is the location fields of the open (or just closed) item.
func (e *Encoder) at(ev Event, prefix string) Event {
	i := len(e.items)
	ev.OutputIndex, ev.ItemID = &i, e.itemID(prefix, i)
	return ev
}

func newRef[T any](v T) *T { return &v }

var emptyJSONList = json.RawMessage("[]")

func textPart(s string) Content {
	return Content{Type: "output_text", Text: &s, Annotations: emptyJSONList}
}

func summaryPart(s string) Content { return Content{Type: "summary_text", Text: &s} }

// Part is the events of one part; nil for a part the wire does not carry
// by itself (usage, which waits for the terminal event, and retries). An
// Error part is response.failed, after which a stream ends.
func (e *Encoder) Part(p provider.Part) []byte {
	switch p := p.(type) {
	case provider.TextDelta:
		out := e.openMessage()
		e.text.WriteString(p.Text)
		ev := e.at(Event{Type: EventTextDelta, ContentIndex: newRef(0), Delta: &p.Text, Logprobs: emptyJSONList}, "msg")
		return append(out, e.event(ev)...)
	case provider.ThinkingDelta:
		var out []byte
		if p.Text != "" {
			out = e.thinking(p.Text)
		}
		if p.Signature != "" {
			if e.cur != "reasoning" {
				out = append(out, e.openReasoning()...)
			}
			out = append(out, e.closeReasoning(&p.Signature)...)
		}
		return out
	case provider.MessagePhase:
		e.phase = p.Phase // the message item carries it when it closes
		return nil
	case provider.ToolCallPart:
		return e.call(p.Call)
	case provider.Usage:
		e.usage = &p
		return nil
	case provider.Finish:
		r := p.Reason
		e.finish = &r
		return e.closeItem()
	case provider.Error:
		out := e.flushSplit() // the open item stays open, as the API leaves it
		se := provider.StreamErrorOf(p.Err)
		r := e.response("failed")
		r.Error = &ResponseError{Code: codeOf(se.Type), Message: se.Message}
		return append(out, e.event(Event{Type: EventFailed, Response: r})...)
	}
	return nil // retry announcements are not on the wire
}

// Close is what ends a stream whose parts ran out: the terminal event
// when the reply finished, nothing otherwise (the stream just stops).
func (e *Encoder) Close() []byte {
	if e.finish == nil {
		return nil
	}
	typ, r := e.terminal()
	return e.event(Event{Type: typ, Response: r})
}

// terminal is the terminal event's type and response for the finish.
func (e *Encoder) terminal() (string, *Response) {
	if reason, ok := IncompleteReason(*e.finish); ok {
		r := e.response("incomplete")
		r.IncompleteDetails = &IncompleteDetails{Reason: reason}
		r.Usage = wireUsage(e.usage)
		return EventIncomplete, r
	}
	r := e.response("completed")
	r.Usage = wireUsage(e.usage)
	return EventCompleted, r
}

// IncompleteReason is the incomplete_details reason a finish reason stands
// for on this wire, ok false when the reply completed: length and
// max_output_tokens are max_output_tokens, content_filter is itself.
func IncompleteReason(finish string) (reason string, ok bool) {
	switch finish {
	case "length", "max_output_tokens", "max_tokens":
		return "max_output_tokens", true
	case "content_filter":
		return "content_filter", true
	}
	return "", false
}

// codeOf is a failure's type as the error code: a string, or null when
// it has none.
func codeOf(typ string) json.RawMessage {
	if typ == "" {
		return json.RawMessage("null")
	}
	return wirejson.String(typ)
}

// wireUsage is usage as the terminal event carries it; the details the
// usage does not say (nil cached or reasoning tokens) are left out.
func wireUsage(u *provider.Usage) *Usage {
	if u == nil {
		return nil
	}
	w := &Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, TotalTokens: u.PromptTokens + u.CompletionTokens}
	if u.CachedTokens != nil {
		w.InputTokensDetails = &InputDetails{CachedTokens: *u.CachedTokens}
	}
	if u.ReasoningTokens != nil {
		w.OutputTokensDetails = &OutputDetails{ReasoningTokens: *u.ReasoningTokens}
	}
	return w
}

// closeItem closes the open message or reasoning item, if any.
func (e *Encoder) closeItem() []byte {
	switch e.cur {
	case "message":
		return e.closeMessage()
	case "reasoning":
		return e.closeReasoning(nil)
	}
	return nil
}

func (e *Encoder) openMessage() []byte {
	if e.cur == "message" {
		return nil
	}
	out := e.closeItem()
	e.cur = "message"
	e.text.Reset()
	item := Item{ID: e.itemID("msg", len(e.items)), Type: "message", Status: "in_progress", Role: "assistant", Content: []Content{}}
	out = append(out, e.event(e.at(Event{Type: EventItemAdded, Item: &item}, "msg"))...)
	part := textPart("")
	return append(out, e.event(e.at(Event{Type: EventContentPartAdded, ContentIndex: newRef(0), Part: &part}, "msg"))...)
}

func (e *Encoder) closeMessage() []byte {
	text := e.text.String()
	out := e.event(e.at(Event{Type: EventTextDone, ContentIndex: newRef(0), Text: &text, Logprobs: emptyJSONList}, "msg"))
	part := textPart(text)
	out = append(out, e.event(e.at(Event{Type: EventContentPartDone, ContentIndex: newRef(0), Part: &part}, "msg"))...)
	item := Item{ID: e.itemID("msg", len(e.items)), Type: "message", Status: "completed", Role: "assistant", Phase: e.phase, Content: []Content{textPart(text)}}
	out = append(out, e.event(e.at(Event{Type: EventItemDone, Item: &item}, "msg"))...)
	e.items = append(e.items, item)
	e.cur, e.phase = "", ""
	return out
}

func (e *Encoder) openReasoning() []byte {
	out := e.closeItem()
	e.cur = "reasoning"
	e.summary, e.inPart, e.split = []Content{}, false, false
	item := Item{ID: e.itemID("rs", len(e.items)), Type: "reasoning", Summary: []Content{}}
	return append(out, e.event(e.at(Event{Type: EventItemAdded, Item: &item}, "rs"))...)
}

// thinking is the events of reasoning text: a held "\n\n" becomes a part
// break when more text follows, a delta of the part otherwise.
func (e *Encoder) thinking(text string) []byte {
	var out []byte
	if e.cur != "reasoning" {
		out = e.openReasoning()
	}
	if e.split {
		e.split = false
		out = append(out, e.closeSummaryPart()...)
	}
	if text == "\n\n" && e.inPart && e.text.Len() > 0 {
		e.split = true
		return out
	}
	if !e.inPart {
		out = append(out, e.openSummaryPart()...)
	}
	e.text.WriteString(text)
	ev := e.at(Event{Type: EventSummaryTextDelta, SummaryIndex: newRef(len(e.summary)), Delta: &text}, "rs")
	return append(out, e.event(ev)...)
}

func (e *Encoder) openSummaryPart() []byte {
	e.inPart = true
	e.text.Reset()
	part := summaryPart("")
	return e.event(e.at(Event{Type: EventSummaryPartAdded, SummaryIndex: newRef(len(e.summary)), Part: &part}, "rs"))
}

func (e *Encoder) closeSummaryPart() []byte {
	text := e.text.String()
	i := len(e.summary)
	out := e.event(e.at(Event{Type: EventSummaryTextDone, SummaryIndex: &i, Text: &text}, "rs"))
	part := summaryPart(text)
	out = append(out, e.event(e.at(Event{Type: EventSummaryPartDone, SummaryIndex: &i, Part: &part}, "rs"))...)
	e.summary = append(e.summary, part)
	e.inPart = false
	return out
}

// flushSplit sends a held "\n\n" as text of the open summary part: with
// nothing after it in the item, it was no part break.
func (e *Encoder) flushSplit() []byte {
	if !e.split {
		return nil
	}
	e.split = false
	nl := "\n\n"
	e.text.WriteString(nl)
	return e.event(e.at(Event{Type: EventSummaryTextDelta, SummaryIndex: newRef(len(e.summary)), Delta: &nl}, "rs"))
}

// closeReasoning closes the open reasoning item, its signature (nil for
// none) as the encrypted_content of its output_item.done.
func (e *Encoder) closeReasoning(signature *string) []byte {
	out := e.flushSplit()
	if e.inPart {
		out = append(out, e.closeSummaryPart()...)
	}
	item := Item{ID: e.itemID("rs", len(e.items)), Type: "reasoning", Summary: e.summary, EncryptedContent: signature}
	out = append(out, e.event(e.at(Event{Type: EventItemDone, Item: &item}, "rs"))...)
	e.items = append(e.items, item)
	e.cur = ""
	return out
}

func (e *Encoder) call(c provider.ToolCall) []byte {
	out := e.closeItem()
	id := e.itemID("fc", len(e.items))
	item := Item{ID: id, Type: "function_call", Status: "in_progress", CallID: c.ID, Name: c.Name, Namespace: c.Namespace, Arguments: newRef("")}
	out = append(out, e.event(e.at(Event{Type: EventItemAdded, Item: &item}, "fc"))...)
	for _, a := range wirejson.Split(string(c.Args), e.ArgChunk) {
		out = append(out, e.event(e.at(Event{Type: EventArgumentsDelta, Delta: &a}, "fc"))...)
	}
	args := string(c.Args)
	out = append(out, e.event(e.at(Event{Type: EventArgumentsDone, Arguments: &args}, "fc"))...)
	item.Status, item.Arguments = "completed", &args
	out = append(out, e.event(e.at(Event{Type: EventItemDone, Item: &item}, "fc"))...)
	e.items = append(e.items, item)
	return out
}

// Whole renders parts as one whole response, the reply to a request that
// did not ask for a stream: the items the stream would carry, the status
// and the usage. ok is false when the parts carry no Finish. Error and
// retry parts are not its business and are skipped.
func Whole(id, model string, created int64, parts []provider.Part) (body []byte, ok bool) {
	e := NewEncoder(id, model, created)
	for _, p := range parts {
		if _, failed := p.(provider.Error); failed {
			continue
		}
		e.Part(p)
	}
	if e.finish == nil {
		return nil, false
	}
	_, r := e.terminal()
	return wirejson.Marshal(r), true
}

// FailedEvent is a response.failed event on its own, numbered seq, for a
// response id: what fault injection splices into a recorded stream.
func FailedEvent(id string, seq int64, se *provider.StreamError) []byte {
	e := &Encoder{id: id, seq: seq}
	return e.Part(provider.Error{Err: se})
}

// ErrorEvent is an error event (type "error"), the wire's in-stream
// failure outside a response: the error's type is its code (null when it
// has none). Its sequence_number is 0; the client does not read it.
func ErrorEvent(se *provider.StreamError) []byte {
	msg := se.Message
	return (&Encoder{}).event(Event{Type: EventError, Code: codeOf(se.Type), Message: &msg, Param: json.RawMessage("null")})
}

// HTTPErrorBody is the JSON body the Responses API answers an error status
// with: the same error object as Chat Completions (see
// openai.HTTPErrorBody).
func HTTPErrorBody(status int, code, message string) []byte {
	return openai.HTTPErrorBody(status, code, message)
}
