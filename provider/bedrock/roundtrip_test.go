package bedrock

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/codec"
	"github.com/openmax/openmax/provider/internal/codectest"
)

// wires are the two operations as the round trips draw them.
var wires = []struct {
	api  API
	wire codectest.Wire
	enc  func(u *provider.Usage, argChunk int) codectest.Encoder
}{
	{APIConverse, codectest.Wire{Signatures: true, Finishes: StopReasons}, func(u *provider.Usage, n int) codectest.Encoder {
		e := NewConverseEncoder(u)
		e.ArgChunk = n
		return e
	}},
	{APIInvoke, codectest.Wire{Signatures: true, Finishes: []string{"end_turn", "tool_use", "max_tokens", "stop_sequence"}}, func(u *provider.Usage, n int) codectest.Encoder {
		e := NewInvokeEncoder("msg_bdrk_1", "claude", u)
		e.ArgChunk = n
		return e
	}},
}

// readingParts are the parts a reading says the client yields.
func readingParts(rd *codec.Reading) []provider.Part {
	var all []provider.Part
	for _, e := range rd.Events {
		all = append(all, e.Parts...)
	}
	return append(all, rd.EndParts...)
}

// TestRoundTrip: parsing what each encoder wrote gives the reply back,
// through the client's parser and through Parse alike, for random replies
// of text, reasoning with signatures, tool calls (input split across
// events), usage, and a finish or an exception; the body cut anywhere
// reads the same both ways, and a cut before the completion signal is an
// incomplete reply.
func TestRoundTrip(t *testing.T) {
	for _, w := range wires {
		t.Run(string(w.api), func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				r := codectest.Draw(t, w.wire)
				body := codectest.Encode(w.enc(r.Usage, rapid.IntRange(0, 8).Draw(t, "arg chunk")), r.Parts)
				if got := parseAll(w.api, string(body)); !reflect.DeepEqual(got, r.Want) {
					t.Fatalf("parts %#v\nparsed %#v\nwant   %#v", r.Parts, got, r.Want)
				}
				rd := Parse(w.api, ContentType, body)
				if got := readingParts(rd); !reflect.DeepEqual(got, r.Want) {
					t.Fatalf("reading %#v\nwant %#v", got, r.Want)
				}
				var text string
				for _, p := range r.Want {
					if td, ok := p.(provider.TextDelta); ok {
						text += td.Text
					}
				}
				if rd.Text != text || rd.Tail != 0 {
					t.Fatalf("reading text %q tail %d, want %q", rd.Text, rd.Tail, text)
				}
				cut := rapid.IntRange(0, len(body)).Draw(t, "cut")
				client := parseAll(w.api, string(body[:cut]))
				if got := readingParts(Parse(w.api, ContentType, body[:cut])); !reflect.DeepEqual(got, client) {
					t.Fatalf("cut at %d: reading %#v\nclient %#v", cut, got, client)
				}
			})
		})
	}
}

// TestWholeReplies: a whole Converse reply and a whole invoke reply read
// back as the reply they render; without a Finish there is none.
func TestWholeReplies(t *testing.T) {
	parts := []provider.Part{
		provider.ThinkingDelta{Text: "hm", Signature: "SIG"},
		provider.TextDelta{Text: "Hel"}, provider.TextDelta{Text: "lo"},
		provider.ToolCallPart{Call: provider.ToolCall{ID: "t1", Name: "f", Args: json.RawMessage(`{"a":1}`)}},
		provider.Usage{PromptTokens: 10, CompletionTokens: 4, CachedTokens: ptr(3)},
		provider.Finish{Reason: "tool_use"},
	}
	conv, ok := ConverseWhole(parts)
	if !ok {
		t.Fatal("ConverseWhole refused a finished reply")
	}
	want := `{"metrics":{"latencyMs":0},"output":{"message":{"role":"assistant","content":[` +
		`{"reasoningContent":{"reasoningText":{"text":"hm","signature":"SIG"}}},{"text":"Hello"},` +
		`{"toolUse":{"toolUseId":"t1","name":"f","input":{"a":1}}}]}},"stopReason":"tool_use",` +
		`"usage":{"cacheReadInputTokens":3,"inputTokens":7,"outputTokens":4,"totalTokens":14}}`
	if string(conv) != want {
		t.Errorf("ConverseWhole\n got %s\nwant %s", conv, want)
	}
	inv, ok := InvokeWhole("msg_1", "claude", parts)
	if !ok {
		t.Fatal("InvokeWhole refused a finished reply")
	}
	for _, tt := range []struct {
		api  API
		body []byte
	}{{APIConverse, conv}, {APIInvoke, inv}} {
		rd := Parse(tt.api, "application/json", tt.body)
		if rd.Stream || rd.Text != "Hello" || rd.Thinking != "hm" || rd.Signatures != 1 || rd.Finish != "tool_use" ||
			len(rd.Tools) != 1 || rd.Tools[0].Name != "f" || rd.Tools[0].Args != `{"a":1}` {
			t.Errorf("%s: reading %+v", tt.api, rd)
		}
	}
	if _, ok := ConverseWhole(parts[:3]); ok {
		t.Error("ConverseWhole of an unfinished reply")
	}
	rd := Parse(APIConverse, "", HTTPErrorBody(429, "", "Too many requests"))
	if rd.Stream || !reflect.DeepEqual(rd.Errors, []string{"Too many requests"}) {
		t.Errorf("an error body reads as %+v", rd)
	}
}

// TestStopReason: the generic finish reasons are said the Converse way.
func TestStopReason(t *testing.T) {
	for in, want := range map[string]string{"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens",
		"content_filter": "content_filtered", "guardrail_intervened": "guardrail_intervened", "end_turn": "end_turn"} {
		if got := StopReason(in); got != want {
			t.Errorf("StopReason(%q) = %q, want %q", in, got, want)
		}
	}
	for _, r := range StopReasons {
		if strings.TrimSpace(r) == "" || StopReason(r) != r {
			t.Errorf("stop reason %q is not its own", r)
		}
	}
}

// TestClaimsBody: each operation claims its own streams (and exceptions)
// and a whole Converse reply, and nothing another wire could have sent.
func TestClaimsBody(t *testing.T) {
	conv := codectest.Encode(NewConverseEncoder(nil), []provider.Part{provider.TextDelta{Text: "a"}, provider.Finish{Reason: "end_turn"}})
	inv := codectest.Encode(NewInvokeEncoder("m", "c", nil), []provider.Part{provider.TextDelta{Text: "a"}, provider.Finish{Reason: "end_turn"}})
	whole, _ := ConverseWhole([]provider.Part{provider.TextDelta{Text: "a"}, provider.Finish{Reason: "end_turn"}})
	msg, _ := InvokeWhole("m", "c", []provider.Part{provider.TextDelta{Text: "a"}, provider.Finish{Reason: "end_turn"}})
	exception := ExceptionFrame(&provider.StreamError{Type: "throttlingException", Message: "slow"})
	tests := []struct {
		name           string
		ct             string
		body           []byte
		converse, invk bool
	}{
		{"a Converse stream", ContentType, conv, true, false},
		{"a Converse stream, no content type", "", conv, true, false},
		{"an invoke stream", ContentType, inv, false, true},
		{"an exception", ContentType, exception, true, true},
		{"a whole Converse reply", "application/json", whole, true, false},
		{"an Anthropic message", "application/json", msg, false, false},
		{"Bedrock's error body", "application/json", HTTPErrorBody(400, "", "bad"), false, false},
		{"SSE", "text/event-stream", []byte("data: {}\n\n"), false, false},
		{"SSE, no content type", "", []byte("data: {}\n\n"), false, false},
		{"empty", ContentType, nil, false, false},
		{"a cut first message", ContentType, conv[:20], false, false},
	}
	for _, tt := range tests {
		if got := ClaimsBody(APIConverse, tt.ct, tt.body); got != tt.converse {
			t.Errorf("%s: converse claims it: %v", tt.name, got)
		}
		if got := ClaimsBody(APIInvoke, tt.ct, tt.body); got != tt.invk {
			t.Errorf("%s: invoke claims it: %v", tt.name, got)
		}
	}
}
