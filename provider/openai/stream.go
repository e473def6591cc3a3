package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"sort"
	"strings"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/httpx"
	"github.com/openmax/openmax/provider/sse"
)

// reply accumulates one reply.
type reply struct {
	finish string
	usage  *Usage
	calls  toolCalls
}

// complete yields the tool calls, usage and Finish of a completed reply.
func (r *reply) complete(yield func(provider.Part) bool) {
	for _, c := range r.calls.done() {
		if !yield(provider.ToolCallPart{Call: c}) {
			return
		}
	}
	if r.usage != nil {
		if !yield(r.usage.part()) {
			return
		}
	}
	yield(provider.Finish{Reason: r.finish})
}

// apply folds a chunk (or a whole completion) into r, yielding the text
// and reasoning it carries. It reports false once yield did.
func (r *reply) apply(ch *Chunk, yield func(provider.Part) bool) (bool, error) {
	if ch.Usage != nil {
		r.usage = ch.Usage
	}
	for i := range ch.Choices {
		c := &ch.Choices[i]
		if c.Index != 0 {
			continue // we never ask for n > 1
		}
		d := c.Delta
		if d == nil {
			d = c.Message
		}
		if d != nil {
			// Some servers send the same text in both reasoning fields.
			thinking := ""
			if d.ReasoningContent != nil && *d.ReasoningContent != "" {
				thinking = *d.ReasoningContent
			} else if d.Reasoning != nil {
				thinking = *d.Reasoning
			}
			text, moreThinking, err := content(d.Content)
			if err != nil {
				return true, err
			}
			thinking += moreThinking
			if thinking != "" && !yield(provider.ThinkingDelta{Text: thinking}) {
				return false, nil
			}
			if text != "" && !yield(provider.TextDelta{Text: text}) {
				return false, nil
			}
			if d.Refusal != nil && *d.Refusal != "" && !yield(provider.TextDelta{Text: *d.Refusal}) {
				return false, nil
			}
			for j, tc := range d.ToolCalls {
				if c.Delta == nil {
					// A whole message lists each call once, in order.
					tc.Index = &j
				}
				if err := r.calls.add(tc); err != nil {
					return true, err
				}
			}
		}
		if c.FinishReason != nil && *c.FinishReason != "" {
			r.finish = *c.FinishReason
		}
	}
	return true, nil
}

// content reads a message content: a string, null, or (Mistral and some
// proxies) an array of parts, whose text parts are reply text and whose
// thinking parts are reasoning.
func content(raw json.RawMessage) (text, thinking string, err error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", "", nil
	}
	if raw[0] == '"' {
		err = json.Unmarshal(raw, &text)
		return text, "", err
	}
	var parts []struct {
		Type     string          `json:"type"`
		Text     string          `json:"text"`
		Thinking json.RawMessage `json:"thinking"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", "", fmt.Errorf("content is neither a string nor a list of parts: %w", err)
	}
	var tb, kb strings.Builder
	for _, p := range parts {
		switch p.Type {
		case "text", "":
			tb.WriteString(p.Text)
		case "thinking":
			t, k, err := content(p.Thinking)
			if err != nil {
				return "", "", err
			}
			kb.WriteString(t + k)
		}
	}
	return tb.String(), kb.String(), nil
}

// ParseStream reads the event stream of a streamed Chat Completions reply
// and yields its parts as Client.Stream does: text and reasoning as they
// stream, then, once the reply completed, the tool calls in index order,
// Usage and Finish; a stream that fails or ends early ends with one Error
// part.
func ParseStream(body io.Reader) iter.Seq[provider.Part] { return httpx.ParseStream(body, readStream) }

// readStream parses an SSE body.
func readStream(ctx context.Context, body io.Reader, contentType string, yield func(provider.Part) bool) {
	s := &chatStream{contentType: contentType}
	httpx.ReadEvents(ctx, body, s, yield)
}

// chatStream is the reading of one streamed reply, event by event: the
// client's (readStream), and that of a recorded body (Wire.Parse).
type chatStream struct {
	r           reply
	seen        int // data events
	contentType string
}

// Event folds one SSE event into s, yielding the parts it carries. It
// reports false once the reply is over (complete, failed, or yield
// returned false).
func (s *chatStream) Event(ev sse.Event, yield func(provider.Part) bool) bool {
	if ev.Type != "message" {
		return true
	}
	data := strings.TrimSpace(ev.Data)
	if data == "" {
		return true
	}
	s.seen++
	if data == "[DONE]" {
		if s.r.finish != "" {
			s.r.complete(yield)
		} else {
			yield(provider.Error{Err: fmt.Errorf("%w: [DONE] arrived before any finish_reason", provider.ErrIncomplete)})
		}
		return false
	}
	var ch Chunk
	if err := json.Unmarshal([]byte(data), &ch); err != nil {
		yield(provider.Error{Err: fmt.Errorf("openai: bad chunk: %w", err)})
		return false
	}
	if se := errorFrame(ch.Error); se != nil {
		yield(provider.Error{Err: se})
		return false
	}
	ok, err := s.r.apply(&ch, yield)
	if !ok {
		return false
	}
	if err != nil {
		yield(provider.Error{Err: fmt.Errorf("openai: bad chunk: %w", err)})
		return false
	}
	return true
}

// End ends a stream whose events stopped with err (io.EOF at the end of
// the body): a reply that finished completes (only its tail, usage and
// [DONE], is lost), any other is incomplete.
func (s *chatStream) End(err error, yield func(provider.Part) bool) {
	switch {
	case s.r.finish != "":
		s.r.complete(yield)
	case errors.Is(err, io.EOF):
		what := "stream ended before finish_reason"
		if s.seen == 0 {
			what = fmt.Sprintf("response ended with no data events (Content-Type %q)", s.contentType)
		}
		yield(provider.Error{Err: fmt.Errorf("%w: %s", provider.ErrIncomplete, what)})
	default:
		yield(provider.Error{Err: httpx.ReadFailure(err, "stream broke before finish_reason")})
	}
}

// readWhole parses a non-streamed completion, which servers that ignore
// stream:true send.
func readWhole(ctx context.Context, data []byte, yield func(provider.Part) bool) {
	var ch Chunk
	if err := json.Unmarshal(data, &ch); err != nil {
		if ctx.Err() != nil {
			return
		}
		yield(provider.Error{Err: fmt.Errorf("openai: bad response: %w", err)})
		return
	}
	if se := errorFrame(ch.Error); se != nil {
		yield(provider.Error{Err: se})
		return
	}
	var r reply
	ok, err := r.apply(&ch, yield)
	if !ok {
		return
	}
	if err != nil {
		yield(provider.Error{Err: fmt.Errorf("openai: bad response: %w", err)})
		return
	}
	if r.finish == "" {
		yield(provider.Error{Err: fmt.Errorf("%w: the completion has no finish_reason", provider.ErrIncomplete)})
		return
	}
	r.complete(yield)
}

// errorFrame reads the top-level "error" of an in-stream error frame: an
// object {message, type, code} (code a string or a number) or a bare
// string. It returns nil when there is none.
func errorFrame(raw json.RawMessage) *provider.StreamError {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return &provider.StreamError{Message: s}
	}
	var e struct {
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
	}
	if json.Unmarshal(raw, &e) != nil {
		return &provider.StreamError{Message: cut(string(raw))}
	}
	se := &provider.StreamError{Type: e.Type, Message: e.Message}
	if se.Type == "" {
		se.Type = provider.ErrorCode(e.Code)
	}
	if se.Type == "" && se.Message == "" {
		se.Message = cut(string(raw))
	}
	return se
}

func cut(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// toolCalls accumulates streamed tool calls by their index.
type toolCalls struct {
	list    []*callAcc
	byIndex map[int]*callAcc
	last    *callAcc
}

type callAcc struct {
	order int // emission order: the wire index, or after all of them
	id    string
	name  string
	args  strings.Builder
}

func (t *toolCalls) newCall(order int) *callAcc {
	a := &callAcc{order: order}
	t.list = append(t.list, a)
	return a
}

func (t *toolCalls) nextOrder() int {
	n := 0
	for _, a := range t.list {
		if a.order >= n {
			n = a.order + 1
		}
	}
	return n
}

// add folds one tool_calls delta in.
func (t *toolCalls) add(d ToolCallDelta) error {
	if t.byIndex == nil {
		t.byIndex = map[int]*callAcc{}
	}
	var a *callAcc
	switch {
	case d.Index != nil:
		a = t.byIndex[*d.Index]
		switch {
		case a == nil:
			order := *d.Index
			for _, x := range t.list {
				if x.order == order {
					order = t.nextOrder()
					break
				}
			}
			a = t.newCall(order)
		case d.ID != "" && a.id != "" && d.ID != a.id:
			// A new call reusing the index (servers that number every
			// call 0): it follows all the others.
			a = t.newCall(t.nextOrder())
		}
		t.byIndex[*d.Index] = a
	case t.last == nil || (d.ID != "" && d.ID != t.last.id):
		// No index: a new id starts a call, anything else continues the
		// last one.
		a = t.newCall(t.nextOrder())
	default:
		a = t.last
	}
	t.last = a
	if a.id == "" {
		a.id = d.ID
	}
	if a.name == "" {
		a.name = d.Function.Name
	}
	args := bytes.TrimSpace(d.Function.Arguments)
	switch {
	case len(args) == 0 || bytes.Equal(args, []byte("null")):
	case args[0] == '"':
		var s string
		if err := json.Unmarshal(args, &s); err != nil {
			return fmt.Errorf("tool call arguments: %w", err)
		}
		a.args.WriteString(s)
	default:
		// Some servers send the arguments as a JSON object.
		a.args.Write(args)
	}
	return nil
}

// done returns the calls in index order; empty arguments become {}.
func (t *toolCalls) done() []provider.ToolCall {
	list := append([]*callAcc(nil), t.list...)
	sort.SliceStable(list, func(i, j int) bool { return list[i].order < list[j].order })
	out := make([]provider.ToolCall, 0, len(list))
	for _, a := range list {
		args := a.args.String()
		if strings.TrimSpace(args) == "" {
			args = "{}"
		}
		out = append(out, provider.ToolCall{ID: a.id, Name: a.name, Args: json.RawMessage(args)})
	}
	return out
}
