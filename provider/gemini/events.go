package gemini

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/sse"
)

// Event is one event of a recorded streamGenerateContent body: where it
// lies in the body, its data, and what it carries.
type Event struct {
	// Start and End bound the event in the body, [Start, End): from the
	// end of the event before it (0 for the first), so the events tile
	// the body up to its tail, to just past the blank line that
	// dispatched it.
	Start, End int
	// Data is the event's data (one chunk's JSON).
	Data string
	// Parts is what the event carries, in the order the client meets it:
	// text, thoughts and signatures (a call's signature in the CallSignature
	// form), then the function calls it makes (ToolCallPart, whatever the
	// finish of the reply, with the id the client gives them), the chunk's
	// own usage (its running totals), its Finish, or its failure as an
	// Error (an error event, a blocked prompt, data that is not a chunk).
	Parts []provider.Part
	// Meta is what else the chunk says.
	Meta Meta
	// Unparsed reports that the event's data is not a chunk (its Parts
	// then hold only the client's error for it).
	Unparsed bool
}

// Meta is what a chunk says beside its parts.
type Meta struct {
	ResponseID    string
	ModelVersion  string
	FinishMessage string
	// BlockReason is promptFeedback.blockReason: the prompt was blocked.
	BlockReason string
}

// Events splits a recorded stream body into its events, by the same SSE
// rules and the same chunk reading as the client, so what an event
// carries is what the client took from it. rest is the size of the
// body's tail that ends no event (an unterminated last event), as
// sse.Split says it. Events with no data (comments, blank lines) are not
// events; their bytes belong to the next event.
func Events(body string) (events []Event, rest int) {
	spans, rest := sse.Split(body)
	st := &state{}
	start := 0
	for _, sp := range spans {
		data := strings.TrimSpace(sp.Data)
		if data == "" {
			continue
		}
		ev := Event{Start: start, End: sp.End, Data: sp.Data}
		start = sp.End
		var ch Response
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			ev.Parts = []provider.Part{provider.Error{Err: fmt.Errorf("gemini: bad event: %w", err)}}
			ev.Unparsed = true
			events = append(events, ev)
			continue
		}
		out := st.apply(&ch)
		ev.Parts = append(ev.Parts, out.live...)
		for _, c := range out.calls {
			ev.Parts = append(ev.Parts, provider.ToolCallPart{Call: c})
		}
		if out.usage != nil {
			ev.Parts = append(ev.Parts, out.usage.Part())
		}
		if out.finish != "" {
			ev.Parts = append(ev.Parts, provider.Finish{Reason: out.finish})
		}
		if out.err != nil {
			ev.Parts = append(ev.Parts, provider.Error{Err: out.err})
		}
		ev.Meta = Meta{ResponseID: ch.ResponseID, ModelVersion: ch.ModelVersion}
		if ch.PromptFeedback != nil {
			ev.Meta.BlockReason = ch.PromptFeedback.BlockReason
		}
		for _, c := range ch.Candidates {
			if c.Index == nil || *c.Index == 0 {
				ev.Meta.FinishMessage = c.FinishMessage
			}
		}
		events = append(events, ev)
	}
	return events, rest
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
