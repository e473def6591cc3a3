package edit

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/codec"
	"github.com/openmax/openmax/provider/script"
	"github.com/openmax/openmax/recorder"
	"github.com/openmax/openmax/recorder/cassette"
)

// ScriptOptions tune ToScript.
type ScriptOptions struct {
	// NoDelays leaves out the delays that reproduce when the recorded
	// chunks arrived.
	NoDelays bool
}

// ToScript turns a recording into a scenario of the fake provider
// (package provider/script): one reply per interaction, in order, so a
// person edits a real answer instead of writing one. Each body is read by
// the interaction's wire, as the registry answers it (Show's reading),
// and each reply says what the recorded one did:
//
//   - an event stream becomes explicit chunks, one per part the vendor's
//     client yields, in the recorded order: text and thinking deltas as
//     they came, each signature, each tool call (its recorded id, name and
//     arguments verbatim), the usage (the last the body states, where it
//     stated it), the finish reason verbatim, an in-stream error as
//     stream_error (its type and message). Before the parts of an event
//     that arrived later than the one before, a delay of the difference
//     (unless NoDelays). How the stream ended follows: nothing more for a
//     completion signal (the fake sends the wire's own); no finish for a
//     stream cut before its finish reason; died after a finish that came
//     without its completion signal; reset where the recording ends in a
//     reset, eof or other transport failure (eof and other have no other
//     form in a script: the client sees a reset instead of an early end);
//     stall where the client gave up on a silent server (timeout, cancel).
//   - a whole JSON response (no stream) becomes the same chunks, from the
//     parts the client yields for the body; the fake renders them whole.
//   - an error status, or a body its wire cannot read whole (unparsed
//     events), becomes status with the body verbatim.
//   - a request that got no response becomes refuse (the fake resets the
//     connection, as the replay transport does for a refused or reset one);
//     one that timed out or was cancelled before any response becomes a
//     stall after an empty 200, the closest the fake can serve.
//
// Every reply carries the response headers that steer a client (as Show
// lists them: Content-Type, Retry-After, Retry-After-Ms, X-Should-Retry,
// the wire's rate-limit and error headers), secret ones left out.
//
// Not carried: the reply's ids and timestamps (the fake derives its own
// from the request number: on a recording the fake made, they are the
// recorded ones again), the model the reply names (the fake names the
// request's), the exact bytes and chunk boundaries of an event stream
// (the fake writes each part as the wire's encoder does, one event per
// flush), the bytes of an event a reset cut in the middle, a message
// phase, and any member of an event its wire does not read into a part.
// Notes lists what was approximated, per interaction. An interaction no
// wire claims is an error: the fake provider could not serve it.
func ToScript(f *cassette.File, opts ScriptOptions) (sc *script.Scenario, notes []string, err error) {
	if f == nil {
		return nil, nil, errors.New("edit: no cassette to turn into a script")
	}
	sc = &script.Scenario{}
	for i, it := range f.Interactions {
		r, n, err := replyOf(it, opts)
		if err != nil {
			return nil, nil, fmt.Errorf("interaction %d: %w", i, err)
		}
		for _, s := range n {
			notes = append(notes, fmt.Sprintf("interaction %d: %s", i, s))
		}
		sc.Replies = append(sc.Replies, r)
	}
	return sc, notes, nil
}

// MarshalScript renders a scenario as YAML, led by comment lines (each
// of head, then each note), and checks that script.Parse reads it back.
func MarshalScript(sc *script.Scenario, head, notes []string) ([]byte, error) {
	var b strings.Builder
	for _, h := range head {
		b.WriteString("# " + h + "\n")
	}
	for _, n := range notes {
		b.WriteString("# note: " + oneLine(n, 0) + "\n")
	}
	body, err := cassette.EncodeYAML(sc) // every string reads back exactly
	if err != nil {
		return nil, fmt.Errorf("script: %w", err)
	}
	b.Write(body)
	out := []byte(b.String())
	if _, err := script.Parse(out); err != nil {
		return nil, fmt.Errorf("the script written does not read back: %w", err)
	}
	return out, nil
}

// replyOf is the reply of one interaction.
func replyOf(it *cassette.Interaction, opts ScriptOptions) (script.Reply, []string, error) {
	var notes []string
	if it == nil {
		return script.Reply{}, nil, errors.New("empty interaction")
	}
	if !it.Responded() {
		e := it.Failure()
		if e != nil && (e.Kind == cassette.KindTimeout || e.Kind == cassette.KindCancel) {
			return script.Reply{Chunks: []script.Chunk{{Stall: true}}}, []string{fmt.Sprintf("no response (%s): served as a stall after an empty 200", e.Kind)}, nil
		}
		if e != nil && e.Kind != cassette.KindRefused && e.Kind != cassette.KindDNS && e.Kind != cassette.KindReset {
			notes = append(notes, fmt.Sprintf("no response (%s): served as a refused connection", e.Kind))
		}
		return script.Reply{Refuse: true}, notes, nil
	}
	w, werr := wireOf(it)
	if werr != nil {
		return script.Reply{}, nil, werr
	}
	headers := scriptHeaders(it.Response.Headers)
	body := it.Body()
	verbatim := func() script.Reply {
		return script.Reply{Status: it.Response.Code, Headers: headers, Body: &body}
	}
	if it.Response.Code >= 300 || it.Response.Code < 200 {
		if it.Failure() != nil {
			notes = append(notes, fmt.Sprintf("the %s ending the error body is not carried", it.Failure().Kind))
		}
		return verbatim(), notes, nil
	}
	ct, _ := header(it.Response.Headers, "Content-Type")
	rd := w.Parse(ct, []byte(body))
	if n := rd.Unparsed(); n > 0 {
		return verbatim(), []string{fmt.Sprintf("%s its wire cannot read: the body is sent verbatim, whole", plural(n, "event"))}, nil
	}
	r := script.Reply{Headers: headers}
	chunks := it.Chunks()
	var parts []timedPart
	if rd.Stream {
		parts = streamParts(rd, chunks)
	}
	var last time.Duration
	if len(chunks) > 0 {
		last = chunks[len(chunks)-1].At
	}
	for _, p := range rd.EndParts {
		parts = append(parts, timedPart{part: p, at: last})
	}
	parts = withUnfinishedCalls(parts, rd.Tools)
	lastUsage := -1
	for k, p := range parts {
		if _, ok := p.part.(provider.Usage); ok {
			lastUsage = k
		}
	}
	var at time.Duration
	finished, failed := false, false
	for k, p := range parts {
		if !opts.NoDelays && p.at > at {
			r.Chunks = append(r.Chunks, script.Chunk{Delay: p.at - at})
			at = p.at
		}
		switch v := p.part.(type) {
		case provider.TextDelta:
			r.Chunks = append(r.Chunks, script.Chunk{Text: &v.Text})
		case provider.ThinkingDelta:
			if v.Text != "" || v.Signature == "" {
				r.Chunks = append(r.Chunks, script.Chunk{Thinking: &v.Text})
			}
			if v.Signature != "" {
				r.Chunks = append(r.Chunks, script.Chunk{Signature: &v.Signature})
			}
		case provider.ToolCallPart:
			tc := &script.ToolCall{ID: v.Call.ID, Name: v.Call.Name, Namespace: v.Call.Namespace, ArgsJSON: string(v.Call.Args)}
			if tc.Name == "" {
				notes = append(notes, "a tool call without a name: left out")
				continue
			}
			r.Chunks = append(r.Chunks, script.Chunk{ToolCall: tc})
		case provider.Usage:
			if k != lastUsage {
				continue
			}
			r.Chunks = append(r.Chunks, script.Chunk{Usage: &script.Usage{PromptTokens: v.PromptTokens, CompletionTokens: v.CompletionTokens,
				CachedTokens: v.CachedTokens, ReasoningTokens: v.ReasoningTokens}})
		case provider.Finish:
			finished = true
			r.Chunks = append(r.Chunks, script.Chunk{Finish: &v.Reason})
		case provider.Error:
			if errors.Is(v.Err, provider.ErrIncomplete) {
				continue // the stream stopped short: how is said below
			}
			se := provider.StreamErrorOf(v.Err)
			if se.Type == "" && se.Message == "" {
				se.Message = v.Err.Error()
			}
			r.Chunks = append(r.Chunks, script.Chunk{StreamError: &script.StreamError{Type: se.Type, Message: se.Message}})
			failed = true
		case provider.MessagePhase:
			notes = append(notes, fmt.Sprintf("message phase %q: a script has no form for it", v.Phase))
		default:
			notes = append(notes, fmt.Sprintf("a %T part: a script has no form for it", v))
		}
		if failed {
			break
		}
	}
	if failed {
		return r, notes, nil
	}
	e := it.Failure()
	signal := rd.Stream && rd.Signal != ""
	switch {
	case e != nil && (e.Kind == cassette.KindTimeout || e.Kind == cassette.KindCancel):
		if !signal {
			r.Chunks = append(r.Chunks, script.Chunk{Stall: true})
		}
	case e != nil && len(body) == 0:
		// reset right after the headers, before the wire's opening events
		zero := 0
		r.ResetAfterBytes = &zero
	case e != nil:
		if e.Kind != cassette.KindReset {
			notes = append(notes, fmt.Sprintf("the body ended in %s: served as a reset", e.Kind))
		}
		if rd.Tail > 0 {
			notes = append(notes, fmt.Sprintf("the %d B of the event the reset cut are not carried", rd.Tail))
		}
		r.Chunks = append(r.Chunks, script.Chunk{Reset: true})
	case finished && rd.Stream && !signal:
		r.Chunks = append(r.Chunks, script.Chunk{Died: strp("no completion signal after the finish")})
	}
	if len(r.Chunks) == 0 {
		// an empty body that ended cleanly: nothing to stream
		r.Chunks = append(r.Chunks, script.Chunk{Died: strp("an empty body")})
	}
	return r, notes, nil
}

// withUnfinishedCalls adds to parts the tool calls the body streamed
// whose part the client never yielded (a call a stream cut before its
// end, or one an incomplete reply left), before the finish (or at the
// end): the script sends them whole, as the recording streamed them.
func withUnfinishedCalls(parts []timedPart, calls []codec.ToolCall) []timedPart {
	yielded := map[string]int{}
	for _, p := range parts {
		if c, ok := p.part.(provider.ToolCallPart); ok {
			yielded[c.Call.ID+"\x00"+c.Call.Name]++
		}
	}
	var extra []timedPart
	for _, c := range calls {
		k := c.ID + "\x00" + c.Name
		if yielded[k] > 0 {
			yielded[k]--
			continue
		}
		extra = append(extra, timedPart{part: provider.ToolCallPart{Call: provider.ToolCall{ID: c.ID, Name: c.Name, Args: []byte(c.Args)}}})
	}
	if len(extra) == 0 {
		return parts
	}
	at := len(parts)
	for k, p := range parts {
		if _, ok := p.part.(provider.Finish); ok {
			at = k
			break
		}
	}
	if at > 0 {
		for k := range extra {
			extra[k].at = parts[at-1].at
		}
	}
	return slices.Insert(parts, at, extra...)
}

// timedPart is a part with the arrival of the chunk its event ended in.
type timedPart struct {
	part provider.Part
	at   time.Duration
}

// streamParts are the parts of a stream's events, each timed by the
// chunk its event ends in.
func streamParts(rd *codec.Reading, chunks []cassette.Chunk) []timedPart {
	var out []timedPart
	j, end := 0, 0
	if len(chunks) > 0 {
		end = len(chunks[0].Data)
	}
	for _, ev := range rd.Events {
		for j < len(chunks)-1 && ev.End > end {
			j++
			end += len(chunks[j].Data)
		}
		var at time.Duration
		if j < len(chunks) {
			at = chunks[j].At
		}
		for _, p := range ev.Parts {
			out = append(out, timedPart{part: p, at: at})
		}
	}
	return out
}

// scriptHeaders are the recorded response headers a script carries: the
// ones that steer a client (Show's list, without Date and request ids,
// which the fake makes its own), secret ones left out. A header recorded
// with several values keeps the first.
func scriptHeaders(h http.Header) map[string]string {
	out := map[string]string{}
	for _, k := range shownHeaders(h) {
		l := strings.ToLower(k)
		if l == "date" || strings.Contains(l, "request-id") || strings.Contains(l, "requestid") || l == strings.ToLower(InjectedHeader) ||
			recorder.SecretHeader(k) || len(h[k]) == 0 {
			continue
		}
		out[k] = h[k][0]
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
