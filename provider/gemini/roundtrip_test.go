package gemini

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/internal/codectest"
)

// roundTripWire is what this wire carries: signatures (a thought part's
// own, as the generator draws them), and finish reasons of each kind: the
// two that run calls and three that do not.
var roundTripWire = codectest.Wire{Signatures: true, Finishes: []string{FinishStop, FinishMaxTokens, "SAFETY", "MALFORMED_FUNCTION_CALL", "OTHER"}}

// drawReply draws a reply and fits what parsing gives back to this wire:
// the calls of a reply whose finish reason does not run them come back as
// UnrunCall parts, and some usages say their reasoning tokens.
func drawReply(t *rapid.T) codectest.Reply {
	r := codectest.Draw(t, roundTripWire)
	if r.Usage != nil && rapid.Bool().Draw(t, "reasoning tokens said") {
		n := rapid.IntRange(0, r.Usage.CompletionTokens).Draw(t, "reasoning tokens")
		for _, parts := range [][]provider.Part{r.Parts, r.Want} {
			for i, p := range parts {
				if u, ok := p.(provider.Usage); ok {
					u.ReasoningTokens = &n
					parts[i] = u
				}
			}
		}
		r.Usage.ReasoningTokens = &n
	}
	if f, ok := r.Want[len(r.Want)-1].(provider.Finish); ok && !RunsCalls(f.Reason) {
		for i, p := range r.Want {
			if c, ok := p.(provider.ToolCallPart); ok {
				r.Want[i] = provider.UnrunCall{Call: c.Call, Reason: "the reply finished " + f.Reason}
			}
		}
	}
	return r
}

// TestRoundTrip: parsing what the Encoder wrote gives the reply back, for
// random replies of text, thoughts with signatures, function calls,
// usage (cached and reasoning tokens, before or after the finish), and a
// finish of every kind or an in-stream error.
func TestRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := drawReply(t)
		body := codectest.Encode(NewEncoder("resp-1", "gemini-test"), r.Parts)
		got := slices.Collect(ParseStream(bytes.NewReader(body)))
		if !reflect.DeepEqual(got, r.Want) {
			t.Fatalf("parts %#v\nencoded:\n%s\nparsed %#v\nwant   %#v", r.Parts, body, got, r.Want)
		}
		// The registry's reading gives the same parts, event by event.
		codectest.CheckParse(t, Wire{}, r)
	})
}

// signedReply is a reply with every place a signature can be: a thought
// part's, a text part's, and calls' (the first of two parallel calls
// signed, as Gemini 3 signs them), as the parser yields them.
func signedReply() []provider.Part {
	return []provider.Part{
		provider.ThinkingDelta{Text: "**Plan**\n\nLook it up."},
		provider.ThinkingDelta{Signature: "c2lnLXRob3VnaHQ="},
		provider.ThinkingDelta{Text: "Then answer."},
		provider.TextDelta{Text: "Checking "},
		provider.TextDelta{Text: "both."},
		provider.ThinkingDelta{Signature: TextSignature("c2lnLXRleHQ=")},
		provider.ThinkingDelta{Signature: CallSignature("call_r_1", "c2lnLWNhbGw=")},
		provider.ToolCallPart{Call: provider.ToolCall{ID: "call_r_1", Name: "weather", Args: json.RawMessage(`{"location": "Florence, Italy"}`)}},
		provider.ToolCallPart{Call: provider.ToolCall{ID: "call_r_2", Name: "time", Args: json.RawMessage(`{}`)}},
		provider.Usage{PromptTokens: 54, CompletionTokens: 76, ReasoningTokens: intp(62)},
		provider.Finish{Reason: FinishStop},
	}
}

func intp(n int) *int { return &n }

// TestRoundTripSignatures: every kind of signature goes out on the part it
// belongs to and comes back in the same form; a call's signature is held
// until its call. The whole response carries the same, its text joined.
func TestRoundTripSignatures(t *testing.T) {
	parts := signedReply()
	body := codectest.Encode(NewEncoder("r", "m"), parts)
	got := slices.Collect(ParseStream(bytes.NewReader(body)))
	// The parser yields the calls after the text and thoughts.
	want := slices.Clone(parts)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("encoded:\n%s\nparsed %#v\nwant   %#v", body, got, want)
	}
	for _, s := range []string{
		`{"text":"**Plan**\n\nLook it up.","thought":true}`,
		`{"text":"","thought":true,"thoughtSignature":"c2lnLXRob3VnaHQ="}`,
		`{"text":"","thoughtSignature":"c2lnLXRleHQ="}`,
		`{"functionCall":{"id":"call_r_1","name":"weather","args":{"location": "Florence, Italy"}},"thoughtSignature":"c2lnLWNhbGw="}`,
		`{"functionCall":{"id":"call_r_2","name":"time","args":{}}}`,
		`"finishReason":"STOP"`,
		`"usageMetadata":{"promptTokenCount":54,"candidatesTokenCount":14,"totalTokenCount":130,"thoughtsTokenCount":62}`,
	} {
		if !bytes.Contains(body, []byte(s)) {
			t.Errorf("the stream lacks %s:\n%s", s, body)
		}
	}
	whole, ok := Whole("r", "m", parts)
	if !ok {
		t.Fatal("Whole: no finish")
	}
	wantWhole := `{"candidates":[{"content":{"parts":[` +
		`{"text":"**Plan**\n\nLook it up.","thought":true,"thoughtSignature":"c2lnLXRob3VnaHQ="},` +
		`{"text":"Then answer.","thought":true},` +
		`{"text":"Checking both.","thoughtSignature":"c2lnLXRleHQ="},` +
		`{"functionCall":{"id":"call_r_1","name":"weather","args":{"location": "Florence, Italy"}},"thoughtSignature":"c2lnLWNhbGw="},` +
		`{"functionCall":{"id":"call_r_2","name":"time","args":{}}}` +
		`],"role":"model"},"finishReason":"STOP","index":0}],` +
		`"usageMetadata":{"promptTokenCount":54,"candidatesTokenCount":14,"totalTokenCount":130,"thoughtsTokenCount":62},"modelVersion":"m","responseId":"r"}`
	if string(whole) != wantWhole {
		t.Errorf("Whole\n got %s\nwant %s", whole, wantWhole)
	}
	gotWhole := codectest.Flatten(slices.Collect(ParseResponse(bytes.NewReader(whole))))
	if w := codectest.Flatten(parts); !reflect.DeepEqual(gotWhole, w) {
		t.Errorf("the whole response parsed to %#v, want %#v", gotWhole, w)
	}
}

// TestRoundTripWhole: parsing the whole response Whole wrote gives the
// reply's text, thoughts, signatures, calls, usage and finish back; a
// reply with no finish has none.
func TestRoundTripWhole(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		codectest.CheckWhole(t, drawReply(t), func(parts []provider.Part) ([]byte, bool) { return Whole("resp-1", "m", parts) }, ParseResponse)
	})
}

// TestErrorBodyRoundTrip: the client reads back the status and message of
// every error body HTTPErrorBody and RetryErrorBody write (an empty
// status is StatusName's for the HTTP status, an empty message
// StatusMessage's or the status text), and the wait of the RetryInfo.
func TestErrorBodyRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		status := rapid.IntRange(400, 599).Draw(t, "status")
		code := rapid.SampledFrom([]string{"", "RESOURCE_EXHAUSTED", "INVALID_ARGUMENT", "UNAVAILABLE"}).Draw(t, "code")
		msg := rapid.StringN(0, 20, -1).Draw(t, "message")
		delay := time.Duration(rapid.Int64Range(0, int64(time.Hour)).Draw(t, "delay"))
		withDelay := rapid.Bool().Draw(t, "with delay")
		body := HTTPErrorBody(status, code, msg)
		if withDelay {
			body = RetryErrorBody(status, code, msg, delay)
		}
		he := &provider.HTTPError{Status: status}
		he.Code, he.Message = provider.ParseErrorBody(body)
		readHTTPError(he, nil, body)
		wantCode, wantMsg := code, msg
		if code == "" {
			wantCode = StatusName(status)
		}
		if msg == "" {
			wantMsg = StatusMessage(status)
			if wantMsg == "" {
				wantMsg = provider.StatusText(status)
			}
			if wantMsg == "" {
				wantMsg = fmt.Sprintf("HTTP %d", status)
			}
		}
		want := provider.HTTPError{Status: status, Code: wantCode, Message: wantMsg}
		if withDelay {
			want.RetryAfter, want.HasRetryAfter = delay, true
		}
		if *he != want {
			t.Fatalf("%s reads back as %+v, want %+v", body, *he, want)
		}
	})
}

// TestErrorEventRoundTrip: the client reads an in-stream error event back
// as the failure it was written from.
func TestErrorEventRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		se := &provider.StreamError{
			Type:    rapid.SampledFrom([]string{"INTERNAL", "UNAVAILABLE", "RESOURCE_EXHAUSTED", "overloaded_error"}).Draw(t, "type"),
			Message: rapid.StringN(0, 20, -1).Draw(t, "message"),
		}
		body := append(NewEncoder("r", "m").Part(provider.TextDelta{Text: "a"}), ErrorEvent(se)...)
		got := slices.Collect(ParseStream(bytes.NewReader(body)))
		if want := []provider.Part{provider.TextDelta{Text: "a"}, provider.Error{Err: se}}; !reflect.DeepEqual(got, want) {
			t.Fatalf("encoded:\n%s\nparsed %#v\nwant   %#v", body, got, want)
		}
	})
}

// TestEncoderEndsAtError: after an Error part the encoder writes nothing
// more, whatever follows.
func TestEncoderEndsAtError(t *testing.T) {
	e := NewEncoder("r", "m")
	if len(e.Part(provider.Error{Err: &provider.StreamError{Type: "INTERNAL", Message: "x"}})) == 0 {
		t.Fatal("no error event")
	}
	for _, p := range []provider.Part{provider.TextDelta{Text: "more"}, provider.Usage{PromptTokens: 1}, provider.Finish{Reason: "STOP"}} {
		if out := e.Part(p); out != nil {
			t.Errorf("%#v after the error wrote %q", p, out)
		}
	}
}
