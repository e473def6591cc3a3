package gemini

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"strconv"
	"strings"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/httpx"
	"github.com/openmax/openmax/provider/sse"
)

// How a Gemini reply becomes provider parts. Only candidate 0 is read
// (the client never asks for more). Its parts, in order:
//
//	a thought part (thought: true)   ThinkingDelta{Text}, then its signature
//	                                 as ThinkingDelta{Signature} (as it came)
//	a text part                      TextDelta (an empty one adds nothing), then
//	                                 its signature as ThinkingDelta{Signature:
//	                                 TextSignature(sig)}
//	a function call part             its signature at once, as ThinkingDelta{
//	                                 Signature: CallSignature(id, sig)}; the call
//	                                 itself when the reply completes
//	usageMetadata                    Usage, once the reply completed: the latest
//	                                 value of each count (chunks repeat running
//	                                 totals); completion = candidates + thoughts,
//	                                 ReasoningTokens = thoughts, CachedTokens =
//	                                 cachedContentTokenCount (the prompt count
//	                                 includes it)
//	finishReason                     Finish{reason}, verbatim, after the calls and
//	                                 the usage, when the stream ends
//	an error event                   Error{*provider.StreamError{Type: status}}
//	promptFeedback.blockReason       Error{*provider.StreamError{Type: reason}}
//	no finishReason                  Error wrapping provider.ErrIncomplete
//
// A function call without an id (the Gemini API gives none) gets
// "call_" + responseId + "_" + n, n counting the reply's calls from 1
// ("call_" + n without a response id): the same bytes give the same ids,
// so a replay sends back what the recording did. The chunk holding the
// finishReason completes the reply; the stream is read to its end (a
// later chunk may still carry text or usage), and a stream that breaks
// after the finish is complete all the same.
//
// Every finish reason is mapped deliberately:
//
//	STOP                      the model ended its reply. The wire has no
//	                          tool-use reason: a reply that calls functions
//	                          ends STOP too, and its calls run.
//	MAX_TOKENS                the output budget cut the reply, as length
//	                          does on the OpenAI wire: a completed reply
//	                          whose stop reason says so, its text kept. A
//	                          function call comes whole in one part, so
//	                          the calls that came are whole and run.
//	SAFETY, RECITATION, LANGUAGE, BLOCKLIST, PROHIBITED_CONTENT, SPII,
//	IMAGE_SAFETY, IMAGE_PROHIBITED_CONTENT, IMAGE_RECITATION, IMAGE_OTHER,
//	NO_IMAGE, MODEL_ARMOR     the vendor stopped the candidate for its
//	                          content: the reply completes with that stop
//	                          reason and the text that streamed, and its
//	                          calls are shown but not run (UnrunCall): a
//	                          reply the vendor stopped is not acted on.
//	MALFORMED_FUNCTION_CALL, UNEXPECTED_TOOL_CALL, TOO_MANY_TOOL_CALLS,
//	MISSING_THOUGHT_SIGNATURE, MALFORMED_RESPONSE
//	                          the model's function calling failed: the
//	                          reply completes with that stop reason, its
//	                          calls (if any came) not run.
//	OTHER, FINISH_REASON_UNSPECIFIED, and any reason the API adds later
//	                          the same: a completed reply whose calls are
//	                          not run.
//
// A blocked prompt (promptFeedback.blockReason, no candidates) is a
// failure, not a completion: a StreamError whose type is the block reason
// (SAFETY, OTHER, BLOCKLIST, PROHIBITED_CONTENT, IMAGE_SAFETY, ...), which
// the retry policy does not resend.

// Finish reasons the client treats apart.
const (
	FinishStop      = "STOP"
	FinishMaxTokens = "MAX_TOKENS"
)

// RunsCalls reports whether the function calls of a reply that finished
// for reason run: only after STOP and MAX_TOKENS.
func RunsCalls(reason string) bool { return reason == FinishStop || reason == FinishMaxTokens }

// truncated is what the error of a stream that ended without a finish
// reason says.
const truncated = "stream ended before finishReason"

// state accumulates one reply.
type state struct {
	responseID string
	calls      []provider.ToolCall
	usage      UsageMetadata
	sawUsage   bool
	finish     string
	finished   bool
	finishMsg  string
	nEvents    int
	// contentType is the reply's, for the error of a stream with no
	// events.
	contentType string
}

// callID is the id of the reply's next call when the wire gave none.
func (st *state) callID() string {
	n := strconv.Itoa(len(st.calls) + 1)
	if st.responseID == "" {
		return "call_" + n
	}
	return "call_" + st.responseID + "_" + n
}

// chunkOut is what one chunk carries.
type chunkOut struct {
	live   []provider.Part // text, thinking and signatures, in stream order
	calls  []provider.ToolCall
	usage  *UsageMetadata // the chunk's own
	finish string
	err    *provider.StreamError
}

// apply folds one chunk into the state.
func (st *state) apply(ch *Response) chunkOut {
	var out chunkOut
	if ch.ResponseID != "" && st.responseID == "" {
		st.responseID = ch.ResponseID
	}
	if ch.Error != nil {
		out.err = statusError(ch.Error)
		return out
	}
	if pf := ch.PromptFeedback; pf != nil && pf.BlockReason != "" {
		msg := "the prompt was blocked"
		if pf.BlockReasonMessage != "" {
			msg += ": " + pf.BlockReasonMessage
		}
		out.err = &provider.StreamError{Type: pf.BlockReason, Message: msg}
		return out
	}
	for i := range ch.Candidates {
		c := &ch.Candidates[i]
		if c.Index != nil && *c.Index != 0 {
			continue // never asked for more than one
		}
		if c.Content != nil {
			for j := range c.Content.Parts {
				st.part(&c.Content.Parts[j], &out)
			}
		}
		if c.FinishReason != "" {
			st.finish, st.finished, out.finish = c.FinishReason, true, c.FinishReason
			if c.FinishMessage != "" {
				st.finishMsg = c.FinishMessage
			}
		}
	}
	if u := ch.UsageMetadata; u != nil {
		st.sawUsage = true
		st.usage.merge(u)
		out.usage = u
	}
	return out
}

// part folds one part of candidate 0.
func (st *state) part(p *Part, out *chunkOut) {
	sig := p.ThoughtSignature
	switch {
	case p.FunctionCall != nil:
		fc := p.FunctionCall
		c := provider.ToolCall{ID: fc.ID, Name: fc.Name, Args: callArgs(fc.Args)}
		if c.ID == "" {
			c.ID = st.callID()
		}
		st.calls = append(st.calls, c)
		out.calls = append(out.calls, c)
		if sig != "" {
			out.live = append(out.live, provider.ThinkingDelta{Signature: CallSignature(c.ID, sig)})
		}
	case p.Thought:
		if p.Text != nil && *p.Text != "" {
			out.live = append(out.live, provider.ThinkingDelta{Text: *p.Text})
		}
		if sig != "" {
			out.live = append(out.live, provider.ThinkingDelta{Signature: sig})
		}
	default:
		// Text, or a kind the client does not read; a signature on
		// either goes back on the reply's text part.
		if p.Text != nil && *p.Text != "" {
			out.live = append(out.live, provider.TextDelta{Text: *p.Text})
		}
		if sig != "" {
			out.live = append(out.live, provider.ThinkingDelta{Signature: TextSignature(sig)})
		}
	}
}

// callArgs is a call's arguments as the wire gave them; none (or null)
// is {}.
func callArgs(raw json.RawMessage) json.RawMessage {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return json.RawMessage(`{}`)
	}
	return raw
}

// merge takes the counts u says, keeping the others.
func (u *UsageMetadata) merge(v *UsageMetadata) {
	for _, f := range []struct{ dst, src **int }{
		{&u.PromptTokenCount, &v.PromptTokenCount}, {&u.CandidatesTokenCount, &v.CandidatesTokenCount},
		{&u.TotalTokenCount, &v.TotalTokenCount}, {&u.CachedContentTokenCount, &v.CachedContentTokenCount},
		{&u.ThoughtsTokenCount, &v.ThoughtsTokenCount}, {&u.ToolUsePromptTokenCount, &v.ToolUsePromptTokenCount},
	} {
		if *f.src != nil {
			n := **f.src
			*f.dst = &n
		}
	}
}

func count(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

// Part is u as a provider.Usage: the prompt count (cached part included),
// completion = candidates + thoughts, the cached and reasoning counts only
// when the wire said them.
func (u *UsageMetadata) Part() provider.Usage {
	p := provider.Usage{PromptTokens: count(u.PromptTokenCount), CompletionTokens: count(u.CandidatesTokenCount) + count(u.ThoughtsTokenCount)}
	if u.CachedContentTokenCount != nil {
		n := *u.CachedContentTokenCount
		p.CachedTokens = &n
	}
	if u.ThoughtsTokenCount != nil {
		n := *u.ThoughtsTokenCount
		p.ReasoningTokens = &n
	}
	return p
}

// complete yields the end of a finished reply: its calls (run, or shown
// unrun for a finish reason that does not run them), usage and finish.
func (st *state) complete(yield func(provider.Part) bool) {
	runs := RunsCalls(st.finish)
	for _, c := range st.calls {
		var p provider.Part = provider.ToolCallPart{Call: c}
		if !runs {
			p = provider.UnrunCall{Call: c, Reason: st.unrunReason()}
		}
		if !yield(p) {
			return
		}
	}
	if st.sawUsage {
		if !yield(st.usage.Part()) {
			return
		}
	}
	yield(provider.Finish{Reason: st.finish})
}

// unrunReason says why a call of the reply is not run.
func (st *state) unrunReason() string {
	r := "the reply finished " + st.finish
	if st.finishMsg != "" {
		r += " (" + st.finishMsg + ")"
	}
	return r
}

// statusError is the failure an error object reports: its status name as
// the type (the name of its code when it has none).
func statusError(s *Status) *provider.StreamError {
	typ := s.Status
	if typ == "" && s.Code != 0 {
		typ = StatusName(s.Code)
	}
	return &provider.StreamError{Type: typ, Message: s.Message}
}

// ParseStream reads the event stream of a streamGenerateContent?alt=sse
// reply and yields its parts as Client.Stream does: text and thoughts
// (and signatures) as they stream, then, once the stream ended after a
// finishReason, the calls, Usage and Finish; a reply that failed or ended
// early ends with one Error part.
func ParseStream(body io.Reader) iter.Seq[provider.Part] { return httpx.ParseStream(body, readStream) }

// ParseResponse reads a whole JSON reply, the body of generateContent (or
// of streamGenerateContent without alt=sse, a JSON array of chunks), and
// yields the parts Client.Stream yields for it. An error object is one
// Error part holding a provider.StreamError.
func ParseResponse(body io.Reader) iter.Seq[provider.Part] { return httpx.ParseWhole(body, readWhole) }

// readStream parses an SSE body.
func readStream(ctx context.Context, body io.Reader, contentType string, yield func(provider.Part) bool) {
	st := &state{contentType: contentType}
	httpx.ReadEvents(ctx, body, st, yield)
}

// Event folds one event of the stream into the reply and yields what it
// streams (text, thoughts, signatures) or the failure it reports; false
// when the reply ends there. An event with no data, or [DONE], is
// skipped.
func (st *state) Event(ev sse.Event, yield func(provider.Part) bool) bool {
	data := strings.TrimSpace(ev.Data)
	if data == "" || data == "[DONE]" {
		return true
	}
	st.nEvents++
	var ch Response
	if err := json.Unmarshal([]byte(data), &ch); err != nil {
		yield(provider.Error{Err: fmt.Errorf("gemini: bad event: %w", err)})
		return false
	}
	return st.emit(st.apply(&ch), yield)
}

// End ends a stream that stopped with err (io.EOF when it just ended): a
// reply that finished yields its calls, usage and finish; any other ends
// with the error of a stream cut short.
func (st *state) End(err error, yield func(provider.Part) bool) {
	switch {
	case st.finished:
		// The reply finished; only what might have followed is lost.
		st.complete(yield)
	case errors.Is(err, io.EOF):
		what := truncated
		if st.nEvents == 0 {
			what = fmt.Sprintf("response ended with no events (Content-Type %q)", st.contentType)
		} else {
			what += fmt.Sprintf(", after %d events", st.nEvents)
		}
		yield(provider.Error{Err: fmt.Errorf("%w: %s", provider.ErrIncomplete, what)})
	default:
		yield(provider.Error{Err: httpx.ReadFailure(err, "stream broke before finishReason")})
	}
}

// emit yields what a chunk streams, and its failure; false when the reply
// ends there (a failure, or yield stopped).
func (st *state) emit(out chunkOut, yield func(provider.Part) bool) bool {
	for _, p := range out.live {
		if !yield(p) {
			return false
		}
	}
	if out.err != nil {
		yield(provider.Error{Err: out.err})
		return false
	}
	return true
}

// readWhole parses a whole JSON body: a response, a JSON array of chunks,
// or an error object (sent with a 2xx status, or as an element).
func readWhole(ctx context.Context, data []byte, yield func(provider.Part) bool) {
	var chunks []Response
	trimmed := bytes.TrimSpace(data)
	var err error
	if len(trimmed) > 0 && trimmed[0] == '[' {
		err = json.Unmarshal(trimmed, &chunks)
	} else {
		var ch Response
		err = json.Unmarshal(trimmed, &ch)
		chunks = []Response{ch}
	}
	if err != nil {
		if ctx.Err() == nil {
			yield(provider.Error{Err: fmt.Errorf("gemini: bad response: %w", err)})
		}
		return
	}
	st := &state{}
	for i := range chunks {
		if !st.emit(st.apply(&chunks[i]), yield) {
			return
		}
	}
	if !st.finished {
		yield(provider.Error{Err: fmt.Errorf("%w: the response has no finishReason", provider.ErrIncomplete)})
		return
	}
	st.complete(yield)
}
