package responses

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/codec"
	"github.com/openmax/openmax/provider/internal/wireread"
	"github.com/openmax/openmax/provider/sse"
)

// Reading recorded Responses API traffic (Wire.Parse, Wire.ReadRequest)
// in this package's shapes: the typed events of a stream (Event), a whole
// response (Response) and a request body (Request). Each event says what
// it holds as notes (items as they open and close, text, refusals,
// arguments, summaries and reasoning text, the terminal event with its
// reason or code, error events) and as the parts the client's own parser
// (state.event) yields from it.

// reasoningItem is a reasoning output item put together from a stream or
// read from a whole response.
type reasoningItem struct {
	index   int    // its output_index
	id      string // its item id
	summary []*strings.Builder
	text    strings.Builder // reasoning_text deltas (models that stream their reasoning)
	// encrypted is the last encrypted_content seen and from where: the
	// token differs between output_item.added and .done, and the .done
	// one is what goes back on the next request.
	encrypted, from string
	hasEncrypted    bool
}

// reader puts a recorded reply together: what every wire's reading has
// (b), and the Responses API's own.
type reader struct {
	b           *wireread.Builder
	reasoning   []*reasoningItem
	reasoningBy map[int]*reasoningItem // by output index
	itemIndexes map[string]int         // item id → output index
	usage       *Usage
}

// parseRecorded reads a recorded Responses body.
func parseRecorded(contentType string, body []byte) *codec.Reading {
	rd := &reader{}
	return wireread.Reader{
		Meta: wireread.MetaOptions{Phases: true},
		Event: func(b *wireread.Builder, name, data string) ([]codec.Note, bool) {
			rd.b = b
			return rd.event(name, data)
		},
		Whole: func(b *wireread.Builder, body string) {
			rd.b = b
			if !rd.whole(body) {
				rd.errorBody(body)
			}
		},
		WholeParts: func(body []byte, yield func(provider.Part) bool) {
			readWhole(context.Background(), body, yield)
		},
		Client: func(contentType string) wireread.Client { return &client{newState(), contentType} },
		Reading: func(b *wireread.Builder) *codec.Reading {
			rd.b = b
			return rd.reading()
		},
	}.Parse(contentType, body)
}

// client is the client's reading of a stream (state), for wireread.
type client struct {
	st          *state
	contentType string
}

func (c *client) Event(ev sse.Event, yield func(provider.Part) bool) bool {
	return c.st.event(ev, yield)
}

func (c *client) End(err error, yield func(provider.Part) bool) {
	c.st.end(err, c.contentType, yield)
}

// reading is what rd put together: the calls in output order, as the
// client hands them over.
func (rd *reader) reading() *codec.Reading {
	sort.SliceStable(rd.b.Tools, func(a, b int) bool { return rd.b.Tools[a].Key < rd.b.Tools[b].Key })
	r := rd.b.Reading()
	if u := rd.usage; u != nil {
		cu := &codec.Usage{Input: u.InputTokens, Output: u.OutputTokens, Total: u.TotalTokens}
		if d := u.InputTokensDetails; d != nil {
			n := d.CachedTokens
			cu.Cached = &n
		}
		if d := u.OutputTokensDetails; d != nil {
			n := d.ReasoningTokens
			cu.Reasoning = &n
		}
		r.Usage = cu
	}
	for _, ri := range rd.reasoning {
		cr := codec.Reasoning{Index: ri.index, ID: ri.id, Text: ri.text.String(),
			Encrypted: ri.encrypted, From: ri.from, HasEncrypted: ri.hasEncrypted}
		for _, s := range ri.summary {
			cr.Summary = append(cr.Summary, s.String())
		}
		r.Reasoning = append(r.Reasoning, cr)
	}
	return r
}

// reasoningAt is the reasoning item at output index i, made when new.
func (rd *reader) reasoningAt(i int, id string) *reasoningItem {
	if rd.reasoningBy == nil {
		rd.reasoningBy = map[int]*reasoningItem{}
	}
	ri := rd.reasoningBy[i]
	if ri == nil {
		ri = &reasoningItem{index: i}
		rd.reasoningBy[i] = ri
		rd.reasoning = append(rd.reasoning, ri)
	}
	if ri.id == "" && id != "" {
		ri.id = id
		rd.noteItem(id, i)
	}
	return ri
}

// noteItem remembers the output index of the item with id.
func (rd *reader) noteItem(id string, i int) {
	if rd.itemIndexes == nil {
		rd.itemIndexes = map[string]int{}
	}
	if _, ok := rd.itemIndexes[id]; !ok {
		rd.itemIndexes[id] = i
	}
}

// itemIndex is the output index an event is about: its output_index, or
// the index of the item it names, -1 when neither is known.
func (rd *reader) itemIndex(ev *Event) int {
	if ev.OutputIndex != nil {
		return *ev.OutputIndex
	}
	if i, ok := rd.itemIndexes[ev.ItemID]; ok && ev.ItemID != "" {
		return i
	}
	return -1
}

// codeText renders a code that is a string, a number or null.
func codeText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	if t := strings.TrimSpace(string(raw)); t != "null" {
		return t
	}
	return ""
}

// joinError renders a code and a message as "code: message".
func joinError(code, msg string) string {
	switch {
	case code == "":
		return msg
	case msg == "":
		return code
	}
	return code + ": " + msg
}

// shortType is an event type without its response. prefix.
func shortType(typ string) string { return strings.TrimPrefix(typ, "response.") }

func note(kind string) []codec.Note { return []codec.Note{{Kind: kind}} }

// event reads one event of a stream and says what it holds.
func (rd *reader) event(typ, data string) (notes []codec.Note, unparsed bool) {
	var ev Event
	if json.Unmarshal([]byte(data), &ev) != nil {
		return note("unparsed " + typ), true
	}
	t := ev.Type
	if t == "" {
		t = typ
	}
	str := func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	}
	b := rd.b
	switch t {
	case EventItemAdded, EventItemDone:
		done := ""
		if t == EventItemDone {
			done = " done"
		}
		it := ev.Item
		if it == nil {
			return note(shortType(t)), false
		}
		i := rd.itemIndex(&ev)
		if it.ID != "" && i >= 0 {
			rd.noteItem(it.ID, i)
		}
		switch it.Type {
		case "function_call":
			tc := b.Tool(i)
			if it.CallID != "" {
				tc.ID = it.CallID
			}
			if it.Name != "" {
				tc.Name = it.Name
			}
			if done != "" && tc.Args.Len() == 0 && it.Arguments != nil {
				tc.Args.WriteString(*it.Arguments)
			}
			return note("tool " + it.Name + done), false
		case "reasoning":
			ri := rd.reasoningAt(i, it.ID)
			if it.EncryptedContent != nil {
				ri.encrypted, ri.from, ri.hasEncrypted = *it.EncryptedContent, shortType(t), true
			}
			if done != "" && len(ri.summary) == 0 {
				ri.summary = summaries(it.Summary)
			}
			return note("reasoning" + done), false
		}
		return note(it.Type + done), false
	case EventTextDelta:
		b.Text.WriteString(str(ev.Delta))
		return []codec.Note{{Kind: codec.NoteText, Text: str(ev.Delta)}}, false
	case EventRefusalDelta:
		b.Refusal.WriteString(str(ev.Delta))
		return []codec.Note{{Kind: codec.NoteRefusal, Text: str(ev.Delta)}}, false
	case EventArgumentsDelta:
		b.Tool(rd.itemIndex(&ev)).Args.WriteString(str(ev.Delta))
		return []codec.Note{{Kind: codec.NoteArgs, Text: str(ev.Delta)}}, false
	case EventSummaryTextDelta:
		ri := rd.reasoningAt(rd.itemIndex(&ev), ev.ItemID)
		k := 0
		if ev.SummaryIndex != nil && *ev.SummaryIndex >= 0 && *ev.SummaryIndex < 1<<16 {
			k = *ev.SummaryIndex
		}
		for len(ri.summary) <= k {
			ri.summary = append(ri.summary, &strings.Builder{})
		}
		ri.summary[k].WriteString(str(ev.Delta))
		return []codec.Note{{Kind: codec.NoteSummary, Text: str(ev.Delta)}}, false
	case EventReasoningTextDelta:
		ri := rd.reasoningAt(rd.itemIndex(&ev), ev.ItemID)
		ri.text.WriteString(str(ev.Delta))
		return []codec.Note{{Kind: codec.NoteThinking, Text: str(ev.Delta)}}, false
	case EventCompleted, EventIncomplete, EventFailed:
		b.Signal = t
		return note(rd.terminal(t, ev.Response)), false
	case EventError:
		e := joinError(codeText(ev.Code), str(ev.Message))
		b.Errs = append(b.Errs, e)
		return note("error event " + codec.Quote(e)), false
	}
	return note(shortType(t)), false
}

// terminal reads the response of a terminal event (or a whole response)
// of type t and returns how a note names it.
func (rd *reader) terminal(t string, resp *Response) string {
	status := shortType(t)
	if resp != nil && resp.Status != "" {
		status = resp.Status
	}
	rd.b.Finish = status
	g := shortType(t)
	if resp == nil {
		return g
	}
	if d := resp.IncompleteDetails; d != nil && d.Reason != "" {
		rd.b.Finish += " (" + d.Reason + ")"
		g += " " + d.Reason
	}
	if e := resp.Error; e != nil {
		c := codeText(e.Code)
		rd.b.Errs = append(rd.b.Errs, joinError(c, e.Message))
		if c != "" {
			g += " " + c
		}
	}
	if resp.Usage != nil {
		u := *resp.Usage
		rd.usage = &u
	}
	// A reasoning item's encrypted content, when no item event gave it.
	for i, it := range resp.Output {
		if it.Type == "reasoning" && it.EncryptedContent != nil {
			ri := rd.reasoningAt(i, it.ID)
			if !ri.hasEncrypted {
				ri.encrypted, ri.from, ri.hasEncrypted = *it.EncryptedContent, shortType(t), true
			}
		}
	}
	return g
}

// summaries are the texts of a reasoning item's summary parts.
func summaries(cs []Content) []*strings.Builder {
	var out []*strings.Builder
	for _, c := range cs {
		if c.Text != nil {
			b := &strings.Builder{}
			b.WriteString(*c.Text)
			out = append(out, b)
		}
	}
	return out
}

// whole reads a whole (not streamed) reply: a response object. It reports
// false for anything else, an error body included.
func (rd *reader) whole(body string) bool {
	var resp Response
	if json.Unmarshal([]byte(body), &resp) != nil || resp.Object != "response" {
		return false
	}
	for i, it := range resp.Output {
		switch it.Type {
		case "message":
			for _, c := range it.Content {
				if c.Text != nil && c.Type == "output_text" {
					rd.b.Text.WriteString(*c.Text)
				}
				if c.Refusal != nil {
					rd.b.Refusal.WriteString(*c.Refusal)
				}
			}
		case "function_call":
			tc := rd.b.Tool(i)
			tc.ID, tc.Name = it.CallID, it.Name
			if it.Arguments != nil {
				tc.Args.WriteString(*it.Arguments)
			}
		case "reasoning":
			ri := rd.reasoningAt(i, it.ID)
			ri.summary = summaries(it.Summary)
			if it.EncryptedContent != nil {
				ri.encrypted, ri.from, ri.hasEncrypted = *it.EncryptedContent, "response", true
			}
		}
	}
	rd.terminal("response."+resp.Status, &resp)
	return true
}

// errorBody reads an error body: the error object OpenAI's wires share.
func (rd *reader) errorBody(body string) {
	var v struct {
		Error *wireread.ErrorObject `json:"error"`
	}
	if json.Unmarshal([]byte(body), &v) == nil && v.Error != nil {
		rd.b.Errs = append(rd.b.Errs, v.Error.String())
	}
}

// claimsBody reports whether a recorded body is a Responses reply: a
// stream one of whose lines is an event field naming a response.* event,
// or a whole response object.
func claimsBody(contentType string, body []byte) bool {
	text := string(body)
	if !wireread.IsEventStream(contentType, text) {
		var v struct {
			Object string `json:"object"`
		}
		return json.Unmarshal(body, &v) == nil && v.Object == "response"
	}
	for rest := text; rest != ""; {
		line := rest
		if i := strings.IndexAny(rest, "\r\n"); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = ""
		}
		if v, ok := strings.CutPrefix(line, "event:"); ok && strings.HasPrefix(strings.TrimPrefix(v, " "), "response.") {
			return true
		}
	}
	return false
}

// The request side.

// recordedRequest is a request body as a recording is read: the input may
// be a string or a list of items, and the tool choice a string or an
// object, so both are held raw.
type recordedRequest struct {
	Request
	Input      json.RawMessage `json:"input"`
	ToolChoice json.RawMessage `json:"tool_choice"`
}

// recordedItem is an input item as a recording is read: a message's
// content may be a string, and a function_call_output's output a list.
type recordedItem struct {
	Item
	Content json.RawMessage `json:"content"`
	Output  json.RawMessage `json:"output"`
}

// readRequest reads a Responses request body (see codec.Wire.ReadRequest).
func readRequest(body []byte) (*codec.Call, error) {
	var head wireread.Head
	if err := json.Unmarshal(body, &head); err != nil {
		return nil, err
	}
	c := &codec.Call{Model: head.Model, Stream: head.Stream, Summary: summary(body)}
	var v struct {
		Input json.RawMessage    `json:"input"`
		Tools []wireread.ToolDef `json:"tools"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		c.Partial = err
		return c, nil
	}
	msgs, err := inputMessages(v.Input)
	c.Partial = err
	wireread.Fill(c, msgs)
	for i := range v.Tools {
		c.Tools = append(c.Tools, v.Tools[i].Spec())
	}
	c.Results = trailingOutputs(v.Input)
	return c, nil
}

// summary describes a request body: model, stream, instructions, its
// input items and the last of them, the tools. nil for a body that is not
// one.
func summary(body []byte) []string {
	var v recordedRequest
	if json.Unmarshal(body, &v) != nil {
		return nil
	}
	parts := wireread.HeadSummary(v.Model, v.Stream)
	if v.Instructions != "" {
		parts = append(parts, "instructions "+codec.Quote(codec.Clip(v.Instructions, codec.PreviewRunes)))
	}
	var s string
	var items []json.RawMessage
	switch {
	case json.Unmarshal(v.Input, &s) == nil:
		parts = append(parts, "input "+codec.Quote(codec.Clip(s, codec.PreviewRunes)))
	case json.Unmarshal(v.Input, &items) == nil && len(items) > 0:
		parts = append(parts, codec.Plural(len(items), "input item"))
		var last recordedItem
		if json.Unmarshal(items[len(items)-1], &last) == nil {
			parts = append(parts, "last "+describeItem(&last))
		}
	}
	if len(v.Tools) > 0 {
		names := make([]string, len(v.Tools))
		for i, t := range v.Tools {
			names[i] = t.Name
			if names[i] == "" {
				names[i] = "[" + t.Type + "]"
			}
		}
		parts = append(parts, "tools "+strings.Join(names, ", "))
	}
	return parts
}

// describeItem names an input item: a role message with its text, a
// function call with its name and arguments, a function call's output.
func describeItem(it *recordedItem) string {
	switch {
	case it.Role != "" && (it.Type == "" || it.Type == "message"):
		return it.Role + " " + codec.Quote(codec.Clip(wireread.ShownText(it.Content), codec.PreviewRunes))
	case it.Type == "function_call":
		args := ""
		if it.Arguments != nil {
			args = " " + codec.OneLine(*it.Arguments, codec.PreviewRunes)
		}
		return "function_call " + it.Name + args
	case it.Type == "function_call_output":
		return "function_call_output " + codec.Quote(codec.Clip(wireread.ShownText(it.Output), codec.PreviewRunes))
	case it.Type == "":
		return "item"
	}
	return it.Type
}

// inputMessages reads a request's input as messages: a string is one user
// message; a list holds messages ({role, content}, content a string or
// input_text parts, read as text blocks) among other items, which are
// skipped.
func inputMessages(raw json.RawMessage) ([]wireread.Message, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		text, _ := json.Marshal(s)
		return []wireread.Message{{Role: "user", Content: text}}, nil
	}
	var items []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("input: %w", err)
	}
	var out []wireread.Message
	for _, it := range items {
		if it.Role == "" {
			continue
		}
		var parts []wireread.Block
		if json.Unmarshal(it.Content, &parts) == nil {
			for i := range parts {
				if parts[i].Type == "input_text" || parts[i].Type == "output_text" {
					parts[i].Type = "text"
				}
			}
			it.Content, _ = json.Marshal(parts)
		}
		out = append(out, wireread.Message{Role: it.Role, Content: it.Content})
	}
	return out, nil
}

// trailingOutputs returns the function call outputs at the end of a
// request's input, each named after the function_call item with its
// call_id. An output that is a list of content parts is their text.
func trailingOutputs(raw json.RawMessage) []codec.Result {
	var items []struct {
		Type   string          `json:"type"`
		CallID string          `json:"call_id"`
		Name   string          `json:"name"`
		Output json.RawMessage `json:"output"`
	}
	if json.Unmarshal(raw, &items) != nil {
		return nil
	}
	names := map[string]string{}
	for _, it := range items {
		if it.Type == "function_call" {
			names[it.CallID] = it.Name
		}
	}
	i := len(items)
	for i > 0 && items[i-1].Type == "function_call_output" {
		i--
	}
	var out []codec.Result
	for _, it := range items[i:] {
		out = append(out, codec.Result{Name: names[it.CallID], OK: true, Output: outputText(it.Output)})
	}
	return out
}

// outputText is a function_call_output's output: a string, or the text of
// its input_text (output_text, text) parts.
func outputText(raw json.RawMessage) string {
	return wireread.PartsText(raw, "input_text", "output_text", "text")
}

// failedEvent is the response.failed event a stream fails with: it names
// the stream's response (the id of the first response object in body)
// and follows the events of kept in their numbering.
func failedEvent(kept, body string, f *provider.StreamError) []byte {
	id, seq := "", int64(0)
	read := func(s string, all bool) {
		evs, _ := sse.Split(s)
		for _, e := range evs {
			var ev Event
			if json.Unmarshal([]byte(e.Data), &ev) != nil {
				continue
			}
			if id == "" && ev.Response != nil {
				id = ev.Response.ID
			}
			if !all {
				return
			}
			if ev.SequenceNumber >= seq {
				seq = ev.SequenceNumber + 1
			}
		}
	}
	read(kept, true)
	if id == "" {
		read(body, false)
	}
	return FailedEvent(id, seq, f)
}
