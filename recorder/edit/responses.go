package edit

// Reading OpenAI Responses API traffic for Show, in the responses
// package's shapes: the typed events of a stream (responses.Event), a whole
// response (responses.Response) and a request body (responses.Request).

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/openmax/openmax/provider/openai/responses"
)

// isResponsesBody reports whether a body is a Responses stream: one of its
// lines is an event field naming a response.* event.
func isResponsesBody(body string) bool {
	for rest := body; rest != ""; {
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

// reasoningAt is the reasoning item at output index i, made when new.
func (r *reconstruction) reasoningAt(i int, id string) *reasoningItem {
	if r.reasoningBy == nil {
		r.reasoningBy = map[int]*reasoningItem{}
	}
	ri := r.reasoningBy[i]
	if ri == nil {
		ri = &reasoningItem{index: i}
		r.reasoningBy[i] = ri
		r.reasoning = append(r.reasoning, ri)
	}
	if ri.id == "" && id != "" {
		ri.id = id
		r.noteItem(id, i)
	}
	return ri
}

// noteItem remembers the output index of the item with id.
func (r *reconstruction) noteItem(id string, i int) {
	if r.itemIndexes == nil {
		r.itemIndexes = map[string]int{}
	}
	if _, ok := r.itemIndexes[id]; !ok {
		r.itemIndexes[id] = i
	}
}

// itemIndex is the output index an event is about: its output_index, or
// the index of the item it names, -1 when neither is known.
func (r *reconstruction) itemIndex(ev *responses.Event) int {
	if ev.OutputIndex != nil {
		return *ev.OutputIndex
	}
	if i, ok := r.itemIndexes[ev.ItemID]; ok && ev.ItemID != "" {
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

// responsesEvent takes one event of a Responses stream and returns what it
// says.
func (r *reconstruction) responsesEvent(typ, data string) []gist {
	var ev responses.Event
	if json.Unmarshal([]byte(data), &ev) != nil {
		r.unparsed++
		return []gist{{kind: "unparsed " + typ}}
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
	switch t {
	case responses.EventItemAdded, responses.EventItemDone:
		done := ""
		if t == responses.EventItemDone {
			done = " done"
		}
		it := ev.Item
		if it == nil {
			return []gist{{kind: shortType(t)}}
		}
		i := r.itemIndex(&ev)
		if it.ID != "" && i >= 0 {
			r.noteItem(it.ID, i)
		}
		switch it.Type {
		case "function_call":
			tc := r.tool(i)
			if it.CallID != "" {
				tc.id = it.CallID
			}
			if it.Name != "" {
				tc.name = it.Name
			}
			if done != "" && tc.args.Len() == 0 && it.Arguments != nil {
				tc.args.WriteString(*it.Arguments)
			}
			return []gist{{kind: "tool " + it.Name + done}}
		case "reasoning":
			ri := r.reasoningAt(i, it.ID)
			if it.EncryptedContent != nil {
				ri.encrypted, ri.from, ri.hasEncrypted = *it.EncryptedContent, shortType(t), true
			}
			if done != "" && len(ri.summary) == 0 {
				ri.summary = summaries(it.Summary)
			}
			return []gist{{kind: "reasoning" + done}}
		}
		return []gist{{kind: it.Type + done}}
	case responses.EventTextDelta:
		r.text.WriteString(str(ev.Delta))
		return []gist{{kind: "text", text: str(ev.Delta)}}
	case responses.EventRefusalDelta:
		r.refusal.WriteString(str(ev.Delta))
		return []gist{{kind: "refusal", text: str(ev.Delta)}}
	case responses.EventArgumentsDelta:
		r.tool(r.itemIndex(&ev)).args.WriteString(str(ev.Delta))
		return []gist{{kind: "args", text: str(ev.Delta)}}
	case responses.EventSummaryTextDelta:
		ri := r.reasoningAt(r.itemIndex(&ev), ev.ItemID)
		k := 0
		if ev.SummaryIndex != nil && *ev.SummaryIndex >= 0 && *ev.SummaryIndex < 1<<16 {
			k = *ev.SummaryIndex
		}
		for len(ri.summary) <= k {
			ri.summary = append(ri.summary, &strings.Builder{})
		}
		ri.summary[k].WriteString(str(ev.Delta))
		return []gist{{kind: "summary", text: str(ev.Delta)}}
	case responses.EventReasoningTextDelta:
		ri := r.reasoningAt(r.itemIndex(&ev), ev.ItemID)
		ri.text.WriteString(str(ev.Delta))
		return []gist{{kind: "thinking", text: str(ev.Delta)}}
	case responses.EventCompleted, responses.EventIncomplete, responses.EventFailed:
		r.signal = t
		g := r.terminal(t, ev.Response)
		return []gist{{kind: g}}
	case responses.EventError:
		e := joinError(codeText(ev.Code), str(ev.Message))
		r.errs = append(r.errs, e)
		return []gist{{kind: "error event " + quote(e)}}
	}
	return []gist{{kind: shortType(t)}}
}

// terminal reads the response of a terminal event (or a whole response)
// of type t and returns how a chunk preview names it.
func (r *reconstruction) terminal(t string, resp *responses.Response) string {
	status := shortType(t)
	if resp != nil && resp.Status != "" {
		status = resp.Status
	}
	r.finish = status
	g := shortType(t)
	if resp == nil {
		return g
	}
	if d := resp.IncompleteDetails; d != nil && d.Reason != "" {
		r.finish += " (" + d.Reason + ")"
		g += " " + d.Reason
	}
	if e := resp.Error; e != nil {
		c := codeText(e.Code)
		r.errs = append(r.errs, joinError(c, e.Message))
		if c != "" {
			g += " " + c
		}
	}
	if resp.Usage != nil {
		u := *resp.Usage
		r.usage = &u
	}
	// A reasoning item's encrypted content, when no item event gave it.
	for i, it := range resp.Output {
		if it.Type == "reasoning" && it.EncryptedContent != nil {
			ri := r.reasoningAt(i, it.ID)
			if !ri.hasEncrypted {
				ri.encrypted, ri.from, ri.hasEncrypted = *it.EncryptedContent, shortType(t), true
			}
		}
	}
	return g
}

// summaries are the texts of a reasoning item's summary parts.
func summaries(cs []responses.Content) []*strings.Builder {
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

// responsesComplete reads a whole (not streamed) Responses reply: a
// response object. It reports false for anything else, an error body
// included, which complete then reads.
func (r *reconstruction) responsesComplete(body string) bool {
	var resp responses.Response
	if json.Unmarshal([]byte(body), &resp) != nil || resp.Object != "response" {
		return false
	}
	for i, it := range resp.Output {
		switch it.Type {
		case "message":
			for _, c := range it.Content {
				if c.Text != nil && c.Type == "output_text" {
					r.text.WriteString(*c.Text)
				}
				if c.Refusal != nil {
					r.refusal.WriteString(*c.Refusal)
				}
			}
		case "function_call":
			tc := r.tool(i)
			tc.id, tc.name = it.CallID, it.Name
			if it.Arguments != nil {
				tc.args.WriteString(*it.Arguments)
			}
		case "reasoning":
			ri := r.reasoningAt(i, it.ID)
			ri.summary = summaries(it.Summary)
			if it.EncryptedContent != nil {
				ri.encrypted, ri.from, ri.hasEncrypted = *it.EncryptedContent, "response", true
			}
		}
	}
	r.terminal("response."+resp.Status, &resp)
	return true
}

// describeUsage renders the usage of a terminal event.
func describeUsage(u *responses.Usage) string {
	in := fmt.Sprintf("%d in", u.InputTokens)
	if d := u.InputTokensDetails; d != nil {
		in += fmt.Sprintf(" (%d cached)", d.CachedTokens)
	}
	out := fmt.Sprintf("%d out", u.OutputTokens)
	if d := u.OutputTokensDetails; d != nil {
		out += fmt.Sprintf(" (%d reasoning)", d.ReasoningTokens)
	}
	return fmt.Sprintf("%s, %s, %d total", in, out, u.TotalTokens)
}

// describeReasoning is the first line on a reasoning item: its id and its
// encrypted content (the size, where it came from, how it starts).
func describeReasoning(ri *reasoningItem) string {
	s := fmt.Sprintf("reasoning %d", ri.index)
	if ri.id != "" {
		s += " (" + ri.id + ")"
	}
	if !ri.hasEncrypted {
		return s + ": no encrypted content"
	}
	return fmt.Sprintf("%s: encrypted content %d B from %s, %s", s, len(ri.encrypted), ri.from, quote(clip(ri.encrypted, 16)))
}

// responsesRequest is a Responses request body as show reads it: the
// input may be a string or a list of items, and the tool choice a string
// or an object, so both are held raw.
type responsesRequest struct {
	responses.Request
	Input      json.RawMessage `json:"input"`
	ToolChoice json.RawMessage `json:"tool_choice"`
}

// responsesInputItem is an input item as show reads it: a message's
// content may be a string, and a function_call_output's output a list.
type responsesInputItem struct {
	responses.Item
	Content json.RawMessage `json:"content"`
	Output  json.RawMessage `json:"output"`
}

// responsesRequestSummary describes a Responses request body: model,
// stream, instructions, its input items and the last of them, the tools.
// ok is false for a body that is not one.
func responsesRequestSummary(body string) (parts []string, ok bool) {
	var v responsesRequest
	if json.Unmarshal([]byte(body), &v) != nil {
		return nil, false
	}
	if v.Model != "" {
		parts = append(parts, "model "+v.Model)
	}
	if v.Stream {
		parts = append(parts, "stream")
	}
	if v.Instructions != "" {
		parts = append(parts, "instructions "+quote(clip(v.Instructions, previewRunes)))
	}
	var s string
	var items []json.RawMessage
	switch {
	case json.Unmarshal(v.Input, &s) == nil:
		parts = append(parts, "input "+quote(clip(s, previewRunes)))
	case json.Unmarshal(v.Input, &items) == nil && len(items) > 0:
		parts = append(parts, plural(len(items), "input item"))
		var last responsesInputItem
		if json.Unmarshal(items[len(items)-1], &last) == nil {
			parts = append(parts, "last "+describeInputItem(&last))
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
	return parts, true
}

// describeInputItem names an input item: a role message with its text, a
// function call with its name and arguments, a function call's output.
func describeInputItem(it *responsesInputItem) string {
	switch {
	case it.Role != "" && (it.Type == "" || it.Type == "message"):
		return it.Role + " " + quote(clip(contentText(it.Content), previewRunes))
	case it.Type == "function_call":
		args := ""
		if it.Arguments != nil {
			args = " " + oneLine(*it.Arguments, previewRunes)
		}
		return "function_call " + it.Name + args
	case it.Type == "function_call_output":
		return "function_call_output " + quote(clip(contentText(it.Output), previewRunes))
	case it.Type == "":
		return "item"
	}
	return it.Type
}
