package responses

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"slices"
	"strings"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/httpx"
	"github.com/openmax/openmax/provider/sse"
)

// How a Responses reply becomes provider parts:
//
//	response.output_text.delta, response.refusal.delta  TextDelta
//	response.reasoning_summary_text.delta               ThinkingDelta (a "\n\n" one
//	                                                     between the summary parts of an item)
//	response.reasoning_text.delta                       ThinkingDelta
//	response.output_item.done of a reasoning item       ThinkingDelta{Signature: its
//	                                                     encrypted_content}
//	response.output_item.done of a message with a phase MessagePhase
//	function calls                                      ToolCallPart, in output_index order,
//	                                                     once response.completed arrived
//	the terminal event's usage                          Usage
//	response.completed                                  Finish{"completed"}
//	response.incomplete                                 Finish{incomplete_details.reason},
//	                                                     and no tool calls
//	response.failed, error                              Error{*provider.StreamError}
//	no terminal event                                   Error wrapping provider.ErrIncomplete

// FinishCompleted is the finish reason of a response.completed reply,
// whether it ended in text or in tool calls.
const FinishCompleted = "completed"

// truncated is what the error of a stream that ended without its
// terminal event says.
const truncated = "stream ended before response.completed"

// ParseStream reads the event stream of a Responses reply and yields its
// parts as Client.Stream does: text and reasoning as they stream (and a
// reasoning item's encrypted content as a signature when the item is
// done), then, once response.completed arrived, the function calls in
// output order, Usage and Finish; a reply that failed or ended early ends
// with one Error part.
func ParseStream(body io.Reader) iter.Seq[provider.Part] { return httpx.ParseStream(body, readStream) }

// ParseResponse reads a whole (non-streamed) Responses body, the one a
// server ignoring stream:true sends, and yields the parts Client.Stream
// yields for it. An error object in place of a response is one Error part
// holding a provider.StreamError.
func ParseResponse(body io.Reader) iter.Seq[provider.Part] { return httpx.ParseWhole(body, readWhole) }

// item is one output item of the reply, by output_index.
type item struct {
	typ    string
	id     string
	callID string
	name   string
	ns     string // the namespace tool name belongs to
	// args are the streamed argument deltas of a function call; final the
	// server's own whole copy (output_item.done, or
	// function_call_arguments.done), terminal the terminal response's.
	args     strings.Builder
	final    *string
	argsDone *string
	terminal *string
	// text says text or refusal deltas arrived for a message item.
	text bool
	// summary is the summary_index of the last summary delta, thought
	// says any reasoning text was yielded for the item.
	summary int
	thought bool
	// done says the item's output_item.done arrived.
	done bool
}

// arguments are the call's arguments: the server's final copy when it
// sent one, else the joined deltas; nothing at all is {}.
func (it *item) arguments() json.RawMessage {
	s := it.args.String()
	for _, p := range []*string{it.final, it.argsDone, it.terminal} {
		if p != nil && strings.TrimSpace(*p) != "" {
			s = *p
			break
		}
	}
	if strings.TrimSpace(s) == "" {
		s = "{}"
	}
	return json.RawMessage(s)
}

// state accumulates one reply.
type state struct {
	items    map[int]*item
	byID     map[string]int
	last     int // output_index of the last item an event named
	nEvents  int
	lastType string
}

func newState() *state { return &state{items: map[int]*item{}, byID: map[string]int{}, last: -1} }

// item is the item e is about: by output_index, else by item_id, else the
// last one named. It is made when new.
func (st *state) item(e *Event) *item {
	idx := -1
	switch {
	case e.OutputIndex != nil:
		idx = *e.OutputIndex
	case e.ItemID != "":
		if i, ok := st.byID[e.ItemID]; ok {
			idx = i
		}
	case e.Item != nil && e.Item.ID != "":
		if i, ok := st.byID[e.Item.ID]; ok {
			idx = i
		}
	}
	if idx < 0 {
		idx = st.last
		if idx < 0 {
			idx = 0
		}
	}
	st.last = idx
	it := st.items[idx]
	if it == nil {
		it = &item{summary: -1}
		st.items[idx] = it
	}
	id := e.ItemID
	if e.Item != nil && e.Item.ID != "" {
		id = e.Item.ID
	}
	if id != "" {
		if it.id == "" {
			it.id = id
		}
		st.byID[id] = idx
	}
	return it
}

// setItem folds an item object (of output_item.added or .done) into it.
func (it *item) setItem(x *Item) {
	if x == nil {
		return
	}
	if x.Type != "" {
		it.typ = x.Type
	}
	if x.CallID != "" {
		it.callID = x.CallID
	}
	if x.Name != "" {
		it.name = x.Name
	}
	if x.Namespace != "" {
		it.ns = x.Namespace
	}
}

// readStream parses an SSE body.
func readStream(ctx context.Context, body io.Reader, contentType string, yield func(provider.Part) bool) {
	st := newState()
	httpx.ReadEvents(ctx, body, &client{st, contentType}, yield)
}

// event folds one SSE event into the state, yielding the parts it
// carries. It reports false once the reply is over (its terminal event, a
// failure, or yield returned false).
func (st *state) event(ev sse.Event, yield func(provider.Part) bool) bool {
	data := strings.TrimSpace(ev.Data)
	if data == "" || data == "[DONE]" {
		return true
	}
	var e Event
	if err := json.Unmarshal([]byte(data), &e); err != nil {
		yield(provider.Error{Err: fmt.Errorf("responses: bad %s event: %w", ev.Type, err)})
		return false
	}
	typ := e.Type
	if typ == "" {
		typ = ev.Type
	}
	st.nEvents++
	st.lastType = typ
	return !st.apply(typ, &e, []byte(data), yield)
}

// end ends a stream whose events stopped with err (io.EOF at the end of
// the body) before its terminal event.
func (st *state) end(err error, contentType string, yield func(provider.Part) bool) {
	if !errors.Is(err, io.EOF) {
		yield(provider.Error{Err: httpx.ReadFailure(err, "stream broke before response.completed")})
		return
	}
	what := truncated
	if st.nEvents == 0 {
		what = fmt.Sprintf("response ended with no events (Content-Type %q)", contentType)
	} else {
		what += fmt.Sprintf(", after %d events (last %s)", st.nEvents, st.lastType)
	}
	yield(provider.Error{Err: fmt.Errorf("%w: %s", provider.ErrIncomplete, what)})
}

// apply folds one event into the state, yielding what it carries. It
// reports true when the reply ended (completed, failed, or yield stopped).
func (st *state) apply(typ string, e *Event, data []byte, yield func(provider.Part) bool) bool {
	switch typ {
	case EventItemAdded:
		st.item(e).setItem(e.Item)
	case EventItemDone:
		it := st.item(e)
		it.setItem(e.Item)
		it.done = true
		x := e.Item
		if x == nil {
			return false
		}
		switch it.typ {
		case "function_call":
			if x.Arguments != nil {
				it.final = x.Arguments
			}
		case "message":
			if x.Phase != "" && !yield(provider.MessagePhase{Phase: x.Phase}) {
				return true
			}
			if !it.text {
				// No deltas came for it: the item is the only copy.
				it.text = true
				for _, c := range x.Content {
					if t := contentText(c); t != "" && !yield(provider.TextDelta{Text: t}) {
						return true
					}
				}
			}
		case "reasoning":
			if !it.thought {
				it.thought = true
				if t := joinSummary(x.Summary); t != "" && !yield(provider.ThinkingDelta{Text: t}) {
					return true
				}
			}
			// The done event's encrypted content is the final one; the
			// added event's is not valid to send back.
			if x.EncryptedContent != nil && *x.EncryptedContent != "" {
				if !yield(provider.ThinkingDelta{Signature: *x.EncryptedContent}) {
					return true
				}
			}
		}
	case EventTextDelta, EventRefusalDelta:
		it := st.item(e)
		it.text = true
		if e.Delta != nil && *e.Delta != "" && !yield(provider.TextDelta{Text: *e.Delta}) {
			return true
		}
	case EventTextDone:
		it := st.item(e)
		if !it.text && e.Text != nil && *e.Text != "" {
			it.text = true
			if !yield(provider.TextDelta{Text: *e.Text}) {
				return true
			}
		}
	case EventSummaryTextDelta:
		it := st.item(e)
		if e.Delta == nil || *e.Delta == "" {
			return false
		}
		idx := 0
		if e.SummaryIndex != nil {
			idx = *e.SummaryIndex
		}
		if it.thought && idx != it.summary && !yield(provider.ThinkingDelta{Text: "\n\n"}) {
			return true
		}
		it.summary, it.thought = idx, true
		if !yield(provider.ThinkingDelta{Text: *e.Delta}) {
			return true
		}
	case EventReasoningTextDelta:
		it := st.item(e)
		if e.Delta != nil && *e.Delta != "" {
			it.thought = true
			if !yield(provider.ThinkingDelta{Text: *e.Delta}) {
				return true
			}
		}
	case EventArgumentsDelta:
		it := st.item(e)
		if it.typ == "" {
			it.typ = "function_call"
		}
		if e.Delta != nil {
			it.args.WriteString(*e.Delta)
		}
	case EventArgumentsDone:
		it := st.item(e)
		if it.typ == "" {
			it.typ = "function_call"
		}
		if e.Arguments != nil {
			it.argsDone = e.Arguments
		}
	case EventCompleted, EventIncomplete, EventFailed:
		status := map[string]string{EventCompleted: "completed", EventIncomplete: "incomplete", EventFailed: "failed"}[typ]
		st.finish(status, e.Response, yield)
		return true
	case EventError:
		yield(provider.Error{Err: errorEvent(e, data)})
		return true
	}
	return false
}

// finish yields the end of a reply whose terminal status is status, from
// the terminal response resp (which may be nil).
func (st *state) finish(status string, resp *Response, yield func(provider.Part) bool) {
	if resp == nil {
		resp = &Response{}
	}
	switch status {
	case "failed":
		yield(provider.Error{Err: failure(resp)})
		return
	case "completed":
		st.merge(resp.Output)
		for _, c := range st.calls() {
			if !yield(provider.ToolCallPart{Call: c}) {
				return
			}
		}
	}
	// An incomplete reply ends without its tool calls: they may be cut.
	if resp.Usage != nil {
		if !yield(usagePart(resp.Usage)) {
			return
		}
	}
	reason := FinishCompleted
	if status == "incomplete" {
		reason = "incomplete"
		if resp.IncompleteDetails != nil && resp.IncompleteDetails.Reason != "" {
			reason = resp.IncompleteDetails.Reason
		}
	}
	yield(provider.Finish{Reason: reason})
}

// merge takes the function calls of the terminal response's output that
// the stream did not announce, and its copy of the arguments of those it
// did.
func (st *state) merge(output []Item) {
	for i := range output {
		x := &output[i]
		if x.Type != "function_call" {
			continue
		}
		var it *item
		if idx, ok := st.byID[x.ID]; ok && x.ID != "" {
			it = st.items[idx]
		} else if y := st.items[i]; y != nil && y.typ == "function_call" && (y.callID == "" || y.callID == x.CallID) {
			it = y
		}
		if it == nil {
			idx := i
			if st.items[idx] != nil {
				idx = 1<<30 + i // after everything the stream named
			}
			it = &item{typ: "function_call", id: x.ID, summary: -1}
			st.items[idx] = it
		}
		it.setItem(x)
		if x.Arguments != nil {
			it.terminal = x.Arguments
		}
	}
}

// calls are the reply's function calls in output order.
func (st *state) calls() []provider.ToolCall {
	var idx []int
	for i, it := range st.items {
		if it.typ == "function_call" {
			idx = append(idx, i)
		}
	}
	slices.Sort(idx)
	out := make([]provider.ToolCall, 0, len(idx))
	for _, i := range idx {
		it := st.items[i]
		out = append(out, provider.ToolCall{ID: it.callID, Name: it.name, Namespace: it.ns, Args: it.arguments()})
	}
	return out
}

// usagePart is u as a provider.Usage: cached and reasoning tokens only when
// the server detailed them.
func usagePart(u *Usage) provider.Usage {
	p := provider.Usage{PromptTokens: u.InputTokens, CompletionTokens: u.OutputTokens}
	if u.InputTokensDetails != nil {
		n := u.InputTokensDetails.CachedTokens
		p.CachedTokens = &n
	}
	if u.OutputTokensDetails != nil {
		n := u.OutputTokensDetails.ReasoningTokens
		p.ReasoningTokens = &n
	}
	return p
}

// failure is the error of a failed response: its error's code as the
// type, so provider/retry tells a rate limit or server fault (retried
// before any text) from a quota or a bad request (not retried).
func failure(resp *Response) *provider.StreamError {
	if resp.Error == nil {
		return &provider.StreamError{Message: "the response failed without an error object"}
	}
	return &provider.StreamError{Type: provider.ErrorCode(resp.Error.Code), Message: resp.Error.Message}
}

// errorEvent is the error of an error event: {code, message, param} at the
// top level, or (some proxies) an error object beside the type.
func errorEvent(e *Event, data []byte) *provider.StreamError {
	se := &provider.StreamError{Type: provider.ErrorCode(e.Code)}
	if e.Message != nil {
		se.Message = *e.Message
	}
	if se.Type == "" && se.Message == "" {
		var nested struct {
			Error json.RawMessage `json:"error"`
		}
		if json.Unmarshal(data, &nested) == nil && len(nested.Error) > 0 {
			wrapped, _ := json.Marshal(nested)
			se.Type, se.Message = provider.ParseErrorBody(wrapped)
		}
	}
	return se
}

// contentText is the text of a message content part: its text, or its
// refusal.
func contentText(c Content) string {
	switch {
	case c.Text != nil:
		return *c.Text
	case c.Refusal != nil:
		return *c.Refusal
	}
	return ""
}

// joinSummary joins the summary parts of a reasoning item as the stream
// yields them: a blank line between parts.
func joinSummary(parts []Content) string {
	var texts []string
	for _, p := range parts {
		if p.Text != nil && *p.Text != "" {
			texts = append(texts, *p.Text)
		}
	}
	return strings.Join(texts, "\n\n")
}

// readWhole parses a whole JSON body: a response (a server that ignored
// stream:true), or an error object sent with a 2xx status.
func readWhole(ctx context.Context, data []byte, yield func(provider.Part) bool) {
	var head struct {
		Object string          `json:"object"`
		Status string          `json:"status"`
		Output json.RawMessage `json:"output"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		if ctx.Err() == nil {
			yield(provider.Error{Err: fmt.Errorf("responses: bad response: %w", err)})
		}
		return
	}
	if e := bytes.TrimSpace(head.Error); len(e) > 0 && !bytes.Equal(e, []byte("null")) && head.Object != "response" && head.Status == "" && len(head.Output) == 0 {
		// An error body, not a failed response.
		code, msg := provider.ParseErrorBody(data)
		yield(provider.Error{Err: &provider.StreamError{Type: code, Message: msg}})
		return
	}
	var resp Response
	if err := json.Unmarshal(data, &resp); err != nil {
		yield(provider.Error{Err: fmt.Errorf("responses: bad response: %w", err)})
		return
	}
	status := resp.Status
	switch status {
	case "completed", "incomplete", "failed":
	case "":
		status = "completed"
	case "cancelled":
		yield(provider.Error{Err: &provider.StreamError{Type: "cancelled", Message: "the response was cancelled"}})
		return
	default:
		yield(provider.Error{Err: fmt.Errorf("%w: the response is %s, not complete", provider.ErrIncomplete, status)})
		return
	}
	st := newState()
	if status != "failed" {
		for i := range resp.Output {
			x := &resp.Output[i]
			switch x.Type {
			case "message":
				for _, c := range x.Content {
					if t := contentText(c); t != "" && !yield(provider.TextDelta{Text: t}) {
						return
					}
				}
				if x.Phase != "" && !yield(provider.MessagePhase{Phase: x.Phase}) {
					return
				}
			case "reasoning":
				if t := joinSummary(x.Summary); t != "" && !yield(provider.ThinkingDelta{Text: t}) {
					return
				}
				if x.EncryptedContent != nil && *x.EncryptedContent != "" && !yield(provider.ThinkingDelta{Signature: *x.EncryptedContent}) {
					return
				}
			}
		}
	}
	st.finish(status, &resp, yield)
}
