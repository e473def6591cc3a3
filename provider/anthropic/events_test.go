package anthropic

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/openmax/openmax/provider"
)

func evInt(n int) *int               { return &n }
func evStr(s string) *string         { return &s }
func evRaw(s string) json.RawMessage { return json.RawMessage(s) }

// TestEventShape: the data of each kind of stream event decodes into
// Event with the fields its doc comment names for that kind.
func TestEventShape(t *testing.T) {
	tests := []struct {
		kind, data string
		want       Event
	}{
		{"message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"usage":{"input_tokens":3,"cache_read_input_tokens":2,"cache_creation_input_tokens":1,"output_tokens":0}}}`,
			Event{Type: "message_start", Message: &StartMessage{Usage: Usage{InputTokens: evInt(3), CacheReadInputTokens: evInt(2), CacheCreationInputTokens: evInt(1), OutputTokens: evInt(0)}}}},
		{"content_block_start text", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			Event{Type: "content_block_start", Index: evInt(0), ContentBlock: &ContentBlock{Type: "text", Text: evRaw(`""`)}}},
		{"content_block_start thinking", `{"type":"content_block_start","index":1,"content_block":{"type":"thinking","thinking":"hm","signature":""}}`,
			Event{Type: "content_block_start", Index: evInt(1), ContentBlock: &ContentBlock{Type: "thinking", Thinking: evRaw(`"hm"`)}}},
		{"content_block_start redacted_thinking", `{"type":"content_block_start","index":2,"content_block":{"type":"redacted_thinking","data":"opaque"}}`,
			Event{Type: "content_block_start", Index: evInt(2), ContentBlock: &ContentBlock{Type: "redacted_thinking", Data: "opaque"}}},
		{"content_block_start tool_use", `{"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"toolu_1","name":"read","input":{}}}`,
			Event{Type: "content_block_start", Index: evInt(3), ContentBlock: &ContentBlock{Type: "tool_use", ID: "toolu_1", Name: "read", Input: evRaw(`{}`)}}},
		{"content_block_delta text_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}`,
			Event{Type: "content_block_delta", Index: evInt(0), Delta: &Delta{Type: "text_delta", Text: "Hi"}}},
		{"content_block_delta thinking_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"thinking_delta","thinking":"so"}}`,
			Event{Type: "content_block_delta", Index: evInt(1), Delta: &Delta{Type: "thinking_delta", Thinking: "so"}}},
		{"content_block_delta signature_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"signature_delta","signature":"SIG"}}`,
			Event{Type: "content_block_delta", Index: evInt(1), Delta: &Delta{Type: "signature_delta", Signature: "SIG"}}},
		{"content_block_delta input_json_delta", `{"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"{\"p"}}`,
			Event{Type: "content_block_delta", Index: evInt(3), Delta: &Delta{Type: "input_json_delta", PartialJSON: `{"p`}}},
		{"content_block_stop", `{"type":"content_block_stop","index":3}`,
			Event{Type: "content_block_stop", Index: evInt(3)}},
		{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":9}}`,
			Event{Type: "message_delta", Delta: &Delta{StopReason: evStr("end_turn")}, Usage: &Usage{OutputTokens: evInt(9)}}},
		{"message_delta, null stop reason", `{"type":"message_delta","delta":{"stop_reason":null}}`,
			Event{Type: "message_delta", Delta: &Delta{}}},
		{"message_stop", `{"type":"message_stop"}`, Event{Type: "message_stop"}},
		{"error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
			Event{Type: "error", Error: &ErrorDetail{Type: "overloaded_error", Message: "Overloaded"}}},
		{"ping", `{"type":"ping"}`, Event{Type: "ping"}},
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			var got Event
			if err := json.Unmarshal([]byte(tt.data), &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("decoded %s\n got  %+v\n want %+v", tt.data, got, tt.want)
			}
		})
	}
}

// TestEventStrictness: the client fails an event where a field it reads
// has another type, and takes one where only a field it does not read (a
// block start's text or thinking, which cassette show prints) does.
func TestEventStrictness(t *testing.T) {
	const stop = "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	start := func(block string) string {
		return "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":" + block + "}\n\n"
	}
	tests := []struct {
		name, body string
		malformed  bool
	}{
		{"text not a string", start(`{"type":"text","text":5}`) + stop, false},
		{"thinking not a string", start(`{"type":"thinking","thinking":["a"]}`) + stop, false},
		{"data not a string", start(`{"type":"redacted_thinking","data":5}`) + stop, true},
		{"name not a string", start(`{"type":"tool_use","id":"t","name":5}`) + stop, true},
		{"index not a number", "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":\"0\"}\n\n" + stop, true},
		{"usage not a number", "event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":\"9\"}}\n\n" + stop, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parts := slices.Collect(ParseStream(strings.NewReader(tt.body)))
			var se error
			for _, p := range parts {
				if e, ok := p.(provider.Error); ok {
					se = e.Err
				}
			}
			switch {
			case tt.malformed && (se == nil || !strings.Contains(se.Error(), "anthropic: malformed")):
				t.Errorf("parts %#v, want a malformed-event error", parts)
			case !tt.malformed && se != nil:
				t.Errorf("error %v, want none", se)
			case !tt.malformed && !reflect.DeepEqual(parts[len(parts)-1], provider.Finish{Reason: "end_turn"}):
				t.Errorf("parts %#v, want them to end in Finish end_turn", parts)
			}
		})
	}
}

// TestEncodedEventsDecode: every event the Encoder writes decodes into
// Event with its event name as Type, and the usage it writes reads back
// as the counts it was given, the Anthropic way (input without the cached
// part).
func TestEncodedEventsDecode(t *testing.T) {
	e := NewEncoder("msg_1", "m", &provider.Usage{PromptTokens: 10, CompletionTokens: 4, CachedTokens: evInt(3)})
	var body []byte
	body = append(body, e.Open()...)
	for _, p := range []provider.Part{
		provider.ThinkingDelta{Text: "hm", Signature: "SIG"},
		provider.TextDelta{Text: "Hi"},
		provider.ToolCallPart{Call: provider.ToolCall{ID: "t", Name: "read", Args: evRaw(`{"p":1}`)}},
		provider.Finish{Reason: "tool_use"},
	} {
		body = append(body, e.Part(p)...)
	}
	body = append(body, e.Close()...)
	var kinds []string
	var usages []Usage
	for _, frame := range bytes.Split(bytes.TrimSpace(body), []byte("\n\n")) {
		name, data, ok := bytes.Cut(frame, []byte("\ndata: "))
		if !ok {
			t.Fatalf("frame %q has no data line", frame)
		}
		var ev Event
		if err := json.Unmarshal(data, &ev); err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		if string(name) != "event: "+ev.Type {
			t.Errorf("frame %q: named %q, decoded type %q", frame, name, ev.Type)
		}
		kinds = append(kinds, ev.Type)
		if ev.Message != nil {
			usages = append(usages, ev.Message.Usage)
		}
		if ev.Usage != nil {
			usages = append(usages, *ev.Usage)
		}
	}
	wantKinds := []string{"message_start",
		"content_block_start", "content_block_delta", "content_block_delta", "content_block_stop",
		"content_block_start", "content_block_delta", "content_block_stop",
		"content_block_start", "content_block_delta", "content_block_stop",
		"message_delta", "message_stop"}
	if !slices.Equal(kinds, wantKinds) {
		t.Errorf("kinds %q\nwant  %q", kinds, wantKinds)
	}
	wantUsages := []Usage{
		{InputTokens: evInt(7), CacheReadInputTokens: evInt(3), OutputTokens: evInt(0)},
		{InputTokens: evInt(7), CacheReadInputTokens: evInt(3), OutputTokens: evInt(4)},
	}
	if !reflect.DeepEqual(usages, wantUsages) {
		t.Errorf("usages %+v\nwant   %+v", usages, wantUsages)
	}
}
