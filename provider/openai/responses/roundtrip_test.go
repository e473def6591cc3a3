package responses

import (
	"bytes"
	"reflect"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/internal/codectest"
)

// roundTripWire is what this wire carries: signatures (the reasoning
// item's encrypted_content), and the finish reasons the client reads back
// from the terminal event (completed, or the incomplete reason).
var roundTripWire = codectest.Wire{Signatures: true, Finishes: []string{FinishCompleted, "max_output_tokens", "content_filter"}}

// drawReply draws a reply and fits what parsing gives back to this wire:
// an incomplete reply yields no tool calls, and some usages say their
// reasoning tokens (in the parts given and the parts wanted alike).
func drawReply(t *rapid.T) codectest.Reply {
	r := codectest.Draw(t, roundTripWire)
	if r.Usage != nil && rapid.Bool().Draw(t, "reasoning tokens said") {
		n := rapid.IntRange(0, r.Usage.CompletionTokens).Draw(t, "reasoning tokens")
		withReasoning := func(parts []provider.Part) {
			for i, p := range parts {
				if u, ok := p.(provider.Usage); ok {
					u.ReasoningTokens = &n
					parts[i] = u
				}
			}
		}
		withReasoning(r.Parts)
		withReasoning(r.Want)
		r.Usage.ReasoningTokens = &n
	}
	if f, ok := r.Want[len(r.Want)-1].(provider.Finish); ok && f.Reason != FinishCompleted {
		r.Want = slices.DeleteFunc(r.Want, func(p provider.Part) bool {
			_, call := p.(provider.ToolCallPart)
			return call
		})
	}
	return r
}

// TestRoundTrip: parsing what the Encoder wrote gives the reply back, for
// random replies of text, reasoning with signatures, tool calls
// (arguments split across delta events), usage (cached and reasoning
// tokens), and a finish (completed or incomplete) or an in-stream failure.
func TestRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := drawReply(t)
		e := NewEncoder("resp_1", "m", 1767225600)
		e.ArgChunk = rapid.IntRange(0, 8).Draw(t, "arg chunk")
		body := codectest.Encode(e, r.Parts)
		got := slices.Collect(ParseStream(bytes.NewReader(body)))
		if !reflect.DeepEqual(got, r.Want) {
			t.Fatalf("parts %#v\nencoded:\n%s\nparsed %#v\nwant   %#v", r.Parts, body, got, r.Want)
		}
	})
}

// TestRoundTripSummaryParts: reasoning text with blank-line deltas between
// runs comes back delta for delta, whether a blank line became a summary
// part break or stayed text (as it does at the end of an item, or before
// a failure).
func TestRoundTripSummaryParts(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var parts []provider.Part
		for i := range rapid.IntRange(1, 8).Draw(t, "deltas") {
			text := "\n\n"
			if rapid.Bool().Draw(t, "text") {
				text = rapid.StringMatching(`[a-z \n]{1,6}`).Draw(t, "thinking")
			}
			parts = append(parts, provider.ThinkingDelta{Text: text})
			if rapid.IntRange(0, 4).Draw(t, "signed") == 0 {
				parts = append(parts, provider.ThinkingDelta{Signature: "sig" + string(rune('a'+i))})
			}
		}
		end := []provider.Part{provider.TextDelta{Text: "x"}, provider.Finish{Reason: FinishCompleted}}
		if rapid.Bool().Draw(t, "failed") {
			end = []provider.Part{provider.Error{Err: &provider.StreamError{Type: "server_error", Message: "m"}}}
		}
		parts = append(parts, end...)
		body := codectest.Encode(NewEncoder("resp_1", "m", 0), parts)
		got := slices.Collect(ParseStream(bytes.NewReader(body)))
		if !reflect.DeepEqual(got, parts) {
			t.Fatalf("encoded:\n%s\nparsed %#v\nwant   %#v", body, got, parts)
		}
	})
}

// TestRoundTripWhole: parsing the whole response Whole wrote (the reply to
// a request without stream) gives the reply's text, reasoning, signatures,
// calls, usage and finish back; a reply with no finish has none.
func TestRoundTripWhole(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		codectest.CheckWhole(t, drawReply(t), func(parts []provider.Part) ([]byte, bool) { return Whole("resp_1", "m", 1767225600, parts) }, ParseResponse)
	})
}

// TestErrorEventRoundTrip: the client reads an error event back as the
// failure it was written from.
func TestErrorEventRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		se := &provider.StreamError{
			Type:    rapid.SampledFrom([]string{"server_error", "rate_limit_exceeded", "overloaded_error"}).Draw(t, "type"),
			Message: rapid.StringN(0, 20, -1).Draw(t, "message"),
		}
		e := NewEncoder("resp_1", "m", 0)
		body := append(e.Open(), ErrorEvent(se)...)
		got := slices.Collect(ParseStream(bytes.NewReader(body)))
		if want := []provider.Part{provider.Error{Err: se}}; !reflect.DeepEqual(got, want) {
			t.Fatalf("encoded:\n%s\nparsed %#v\nwant   %#v", body, got, want)
		}
	})
}

// TestRoundTripPhase: a message's phase goes out on its output_item.done
// and comes back from it, after the message's text; a message without a
// phase comes back with none.
func TestRoundTripPhase(t *testing.T) {
	parts := []provider.Part{provider.TextDelta{Text: "Looking."}, provider.MessagePhase{Phase: "commentary"},
		provider.ToolCallPart{Call: provider.ToolCall{ID: "c1", Name: "f", Args: []byte(`{}`)}}, provider.Finish{Reason: FinishCompleted}}
	body := codectest.Encode(NewEncoder("resp_1", "m", 1767225600), parts)
	if !bytes.Contains(body, []byte(`"phase":"commentary"`)) {
		t.Fatalf("no phase on the wire:\n%s", body)
	}
	if got := slices.Collect(ParseStream(bytes.NewReader(body))); !reflect.DeepEqual(got, parts) {
		t.Fatalf("parsed %#v\nwant   %#v", got, parts)
	}
	plain := []provider.Part{provider.TextDelta{Text: "Done."}, provider.Finish{Reason: FinishCompleted}}
	body = codectest.Encode(NewEncoder("resp_2", "m", 1767225600), plain)
	if got := slices.Collect(ParseStream(bytes.NewReader(body))); !reflect.DeepEqual(got, plain) || bytes.Contains(body, []byte(`"phase"`)) {
		t.Fatalf("parsed %#v from\n%s", got, body)
	}
}

// TestParseRecorded: the registered wire reads its own encoding back
// event by event, whole and cut anywhere (codectest.CheckParse).
func TestParseRecorded(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		codectest.CheckParse(t, Wire{}, drawReply(t))
	})
}
