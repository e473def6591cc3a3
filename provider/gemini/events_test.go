package gemini_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/gemini"
)

// TestEvents: a recorded body splits into its events with offsets that
// tile it (a comment belongs to the event after it), each with what it
// carries as the client reads it and its metadata; data that is not a
// chunk is marked unparsed; an unterminated last event is the tail.
func TestEvents(t *testing.T) {
	e1 := "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"**Plan**\",\"thought\": true,\"thoughtSignature\": \"U0lH\"}],\"role\": \"model\"},\"index\": 0}],\"responseId\": \"r1\",\"modelVersion\": \"gemini-2.5-pro\"}\r\n\r\n"
	e2 := ": keep-alive\r\n" + "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"Hi\"},{\"functionCall\": {\"name\": \"f\",\"args\": {\"a\": 1}},\"thoughtSignature\": \"Q0FMTA==\"}],\"role\": \"model\"},\"finishReason\": \"STOP\",\"finishMessage\": \"Model generated function call(s).\",\"index\": 0}],\"usageMetadata\": {\"promptTokenCount\": 7,\"candidatesTokenCount\": 2,\"thoughtsTokenCount\": 3},\"responseId\": \"r1\",\"modelVersion\": \"gemini-2.5-pro\"}\r\n\r\n"
	e3 := "data: not json\r\n\r\n"
	e4 := "data: {\"promptFeedback\": {\"blockReason\": \"SAFETY\"}}\r\n\r\n"
	tail := "data: {\"candidates\": []}\r\n"
	body := e1 + e2 + e3 + e4 + tail
	evs, rest := gemini.Events(body)
	if rest != len(tail) || len(evs) != 4 {
		t.Fatalf("%d events, tail %d; want 4 and %d", len(evs), rest, len(tail))
	}
	bounds := [][2]int{{0, len(e1)}, {len(e1), len(e1 + e2)}, {len(e1 + e2), len(e1 + e2 + e3)}, {len(e1 + e2 + e3), len(e1 + e2 + e3 + e4)}}
	for i, ev := range evs {
		if ev.Start != bounds[i][0] || ev.End != bounds[i][1] {
			t.Errorf("event %d at [%d,%d), want [%d,%d)", i, ev.Start, ev.End, bounds[i][0], bounds[i][1])
		}
	}
	call := provider.ToolCall{ID: "call_r1_1", Name: "f", Args: json.RawMessage(`{"a": 1}`)}
	want := [][]provider.Part{
		{provider.ThinkingDelta{Text: "**Plan**"}, provider.ThinkingDelta{Signature: "U0lH"}},
		{provider.TextDelta{Text: "Hi"}, provider.ThinkingDelta{Signature: gemini.CallSignature("call_r1_1", "Q0FMTA==")},
			provider.ToolCallPart{Call: call}, provider.Usage{PromptTokens: 7, CompletionTokens: 5, ReasoningTokens: intp(3)}, provider.Finish{Reason: "STOP"}},
		nil,
		{provider.Error{Err: &provider.StreamError{Type: "SAFETY", Message: "the prompt was blocked"}}},
	}
	for i := range want {
		if i == 2 {
			if !evs[2].Unparsed || len(evs[2].Parts) != 1 {
				t.Errorf("event 2: %+v, want unparsed", evs[2])
			}
			continue
		}
		if !reflect.DeepEqual(evs[i].Parts, want[i]) || evs[i].Unparsed {
			t.Errorf("event %d carries %#v\nwant %#v", i, evs[i].Parts, want[i])
		}
	}
	if m := evs[1].Meta; m != (gemini.Meta{ResponseID: "r1", ModelVersion: "gemini-2.5-pro", FinishMessage: "Model generated function call(s)."}) {
		t.Errorf("event 1 meta %+v", m)
	}
	if evs[3].Meta.BlockReason != "SAFETY" {
		t.Errorf("event 3 meta %+v", evs[3].Meta)
	}
}

// TestBodyDetection tells the wire's bodies from other wires'.
func TestBodyDetection(t *testing.T) {
	enc := gemini.NewEncoder("r", "m")
	stream := string(enc.Part(provider.TextDelta{Text: "a"})) + string(enc.Part(provider.Finish{Reason: "STOP"}))
	whole, _ := gemini.Whole("r", "m", []provider.Part{provider.TextDelta{Text: "a"}, provider.Finish{Reason: "STOP"}})
	for _, tt := range []struct {
		name          string
		body          string
		stream, whole bool
	}{
		{"our stream", stream, true, false},
		{"an error event", string(gemini.ErrorEvent(&provider.StreamError{Type: "INTERNAL", Message: "x"})), true, false},
		{"our whole reply", string(whole), false, true},
		{"a JSON array of chunks", "[" + string(whole) + "]", false, true},
		{"an error body", string(gemini.HTTPErrorBody(429, "", "")), false, true},
		{"Chat Completions", "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[]}\n\ndata: [DONE]\n\n", false, false},
		{"Anthropic", "event: message_start\ndata: {\"type\":\"message_start\"}\n\n", false, false},
		{"OpenAI's error body", `{"error":{"message":"m","type":"server_error","code":null}}`, false, false},
	} {
		if s, w := gemini.IsStreamBody(tt.body), gemini.IsWholeBody(tt.body); s != tt.stream || w != tt.whole {
			t.Errorf("%s: stream %v whole %v, want %v %v", tt.name, s, w, tt.stream, tt.whole)
		}
	}
}

// TestStreamFailure: the in-stream failure of each status name, with the
// API's message where it has one, and the default.
func TestStreamFailure(t *testing.T) {
	for _, tt := range []struct {
		code string
		want provider.StreamError
		ok   bool
	}{
		{"", provider.StreamError{Type: "UNAVAILABLE", Message: "The model is overloaded. Please try again later."}, true},
		{"RESOURCE_EXHAUSTED", provider.StreamError{Type: "RESOURCE_EXHAUSTED", Message: "Resource has been exhausted (e.g. check quota)."}, true},
		{"INTERNAL", provider.StreamError{Type: "INTERNAL", Message: gemini.StatusMessage(500)}, true},
		{"NOT_FOUND", provider.StreamError{Type: "NOT_FOUND"}, false},
		{"overloaded_error", provider.StreamError{Type: "overloaded_error"}, false},
	} {
		f, ok := gemini.StreamFailure(tt.code)
		if *f != tt.want || ok != tt.ok {
			t.Errorf("StreamFailure(%q) = %+v, %v; want %+v, %v", tt.code, *f, ok, tt.want, tt.ok)
		}
	}
	for status, name := range map[int]string{400: "INVALID_ARGUMENT", 429: "RESOURCE_EXHAUSTED", 503: "UNAVAILABLE", 502: "INTERNAL", 418: "FAILED_PRECONDITION"} {
		if got := gemini.StatusName(status); got != name {
			t.Errorf("StatusName(%d) = %s, want %s", status, got, name)
		}
	}
	for _, r := range [][2]string{{"stop", "STOP"}, {"tool_calls", "STOP"}, {"end_turn", "STOP"}, {"length", "MAX_TOKENS"}, {"content_filter", "SAFETY"}, {"RECITATION", "RECITATION"}} {
		if got := gemini.FinishReason(r[0]); got != r[1] {
			t.Errorf("FinishReason(%q) = %q, want %q", r[0], got, r[1])
		}
	}
}
