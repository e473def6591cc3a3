package bedrock

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/bedrock/eventstream"
)

func ptr[T any](v T) *T { return &v }

// ev is one event message.
func ev(typ, payload string) string { return string(EventFrame(typ, []byte(payload))) }

// exc is one exception message.
func exc(typ, msg string) string {
	return string(ExceptionFrame(&provider.StreamError{Type: typ, Message: msg}))
}

// chunk is one invoke chunk carrying an Anthropic event.
func chunk(event string) string {
	return ev("chunk", `{"bytes":"`+base64.StdEncoding.EncodeToString([]byte(event))+`","p":"abc"}`)
}

// parseAll reads body as api's client does.
func parseAll(api API, body string) []provider.Part {
	var out []provider.Part
	readStream(context.Background(), strings.NewReader(body), newState(api), func(p provider.Part) bool {
		out = append(out, p)
		return true
	})
	return out
}

// errorOf is the error ending parts, nil when none.
func errorOf(parts []provider.Part) error {
	if len(parts) == 0 {
		return nil
	}
	if e, ok := parts[len(parts)-1].(provider.Error); ok {
		return e.Err
	}
	return nil
}

var (
	cStart = ev("messageStart", `{"p":"abcdefghijklmnopqrs","role":"assistant"}`)
	cText  = func(i int, s string) string {
		return ev("contentBlockDelta", `{"contentBlockIndex":`+itoa(i)+`,"delta":{"text":`+jsonString(s)+`},"p":"abcdef"}`)
	}
	cStop = func(i int) string { return ev("contentBlockStop", `{"contentBlockIndex":`+itoa(i)+`,"p":"ab"}`) }
	cEnd  = func(reason string) string { return ev("messageStop", `{"p":"abc","stopReason":"`+reason+`"}`) }
	cMeta = ev("metadata", `{"metrics":{"latencyMs":422},"p":"abcdefghijklm","usage":{"inputTokens":471,"outputTokens":91,"totalTokens":562}}`)
	u471  = provider.Usage{PromptTokens: 471, CompletionTokens: 91}
	cTool = func(i int, id, name string) string {
		return ev("contentBlockStart", `{"contentBlockIndex":`+itoa(i)+`,"p":"abc","start":{"toolUse":{"name":"`+name+`","toolUseId":"`+id+`"}}}`)
	}
	cInput = func(i int, s string) string {
		return ev("contentBlockDelta", `{"contentBlockIndex":`+itoa(i)+`,"delta":{"toolUse":{"input":`+jsonString(s)+`}}}`)
	}
	cReason = func(i int, field, s string) string {
		return ev("contentBlockDelta", `{"contentBlockIndex":`+itoa(i)+`,"delta":{"reasoningContent":{"`+field+`":`+jsonString(s)+`}}}`)
	}
)

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func jsonString(s string) string { b, _ := json.Marshal(s); return string(b) }

// TestConverseStream: what the client makes of ConverseStream bodies.
func TestConverseStream(t *testing.T) {
	tests := []struct {
		name string
		body string
		want []provider.Part // when the reply completes
		err  string          // else what its error says
		inc  bool            // the error is an incomplete stream
	}{
		{"text with no contentBlockStart, padding ignored",
			cStart + cText(0, "Hel") + cText(0, "") + cText(0, "lo") + cStop(0) + cEnd("end_turn") + cMeta,
			[]provider.Part{provider.TextDelta{Text: "Hel"}, provider.TextDelta{Text: "lo"}, u471, provider.Finish{Reason: "end_turn"}}, "", false},
		{"reasoning, redacted reasoning, text and a tool call in pieces",
			cStart + cReason(0, "text", "Let me ") + cReason(0, "text", "think.") + cReason(0, "signature", "SIG==") + cStop(0) +
				cReason(1, "redactedContent", "T1BBUVVF") + cStop(1) +
				cText(2, "Calling.") + cStop(2) +
				cTool(3, "tooluse_1", "get_weather") + cInput(3, `{"ci`) + cInput(3, `ty":"Paris"}`) + cStop(3) +
				cTool(4, "tooluse_2", "now") + cStop(4) +
				cEnd("tool_use") +
				ev("metadata", `{"metrics":{"latencyMs":1},"usage":{"cacheReadInputTokens":7,"cacheWriteInputTokens":3,"inputTokens":10,"outputTokens":42,"totalTokens":62}}`),
			[]provider.Part{
				provider.ThinkingDelta{Text: "Let me "}, provider.ThinkingDelta{Text: "think."}, provider.ThinkingDelta{Signature: "SIG=="},
				provider.ThinkingDelta{Signature: redactedPrefix + "T1BBUVVF"},
				provider.TextDelta{Text: "Calling."},
				provider.ToolCallPart{Call: provider.ToolCall{ID: "tooluse_1", Name: "get_weather", Args: json.RawMessage(`{"city":"Paris"}`)}},
				provider.ToolCallPart{Call: provider.ToolCall{ID: "tooluse_2", Name: "now", Args: json.RawMessage(`{}`)}},
				provider.Usage{PromptTokens: 20, CompletionTokens: 42, CachedTokens: ptr(7)},
				provider.Finish{Reason: "tool_use"},
			}, "", false},
		{"events Bedrock adds later are skipped",
			cStart + ev("someFutureEvent", `not json`) + cText(0, "a") + cEnd("end_turn") + cMeta,
			[]provider.Part{provider.TextDelta{Text: "a"}, u471, provider.Finish{Reason: "end_turn"}}, "", false},
		{"messageStop and no metadata: complete without usage",
			cStart + cText(0, "a") + cEnd("max_tokens"),
			[]provider.Part{provider.TextDelta{Text: "a"}, provider.Finish{Reason: "max_tokens"}}, "", false},
		{"messageStop, then the metadata cut short: complete without usage",
			cStart + cText(0, "a") + cEnd("stop_sequence") + cMeta[:20],
			[]provider.Part{provider.TextDelta{Text: "a"}, provider.Finish{Reason: "stop_sequence"}}, "", false},
		{"metadata before messageStop",
			cStart + cText(0, "a") + cMeta + cEnd("end_turn"),
			[]provider.Part{provider.TextDelta{Text: "a"}, u471, provider.Finish{Reason: "end_turn"}}, "", false},
		{"guardrail_intervened", cStart + cText(0, "Sorry, the model cannot answer.") + cEnd("guardrail_intervened") + cMeta,
			[]provider.Part{provider.TextDelta{Text: "Sorry, the model cannot answer."}, u471, provider.Finish{Reason: "guardrail_intervened"}}, "", false},
		{"content_filtered", cStart + cEnd("content_filtered") + cMeta,
			[]provider.Part{u471, provider.Finish{Reason: "content_filtered"}}, "", false},
		{"no events", "", nil, "ended without messageStop, before any event", true},
		{"ends before messageStop", cStart + cText(0, "a"), nil, "ended without messageStop, after 2 events (last contentBlockDelta)", true},
		{"cut inside a message", cStart + cText(0, "a") + cEnd("end_turn")[:30], nil, "after 2 events (last contentBlockDelta), inside a message", true},
		{"a payload that is not JSON", cStart + ev("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"a"`) + cEnd("end_turn") + cMeta, nil,
			"bedrock: malformed contentBlockDelta event", false},
		{"a field of the wrong type", cStart + ev("messageStop", `{"stopReason":7}`) + cMeta, nil, "bedrock: malformed messageStop event", false},
		{"a CRC that does not check out", cStart + corrupt(cText(0, "a")) + cEnd("end_turn") + cMeta, nil, "malformed event stream: the message at byte 144: message CRC mismatch", false},
		{"an error message", cStart + string(eventstream.MustEncode(eventstream.Message{Headers: []eventstream.Header{
			{Name: ":message-type", Value: "error"}, {Name: ":error-code", Value: "InternalFailure"}, {Name: ":error-message", Value: "boom"}}})), nil,
			"InternalFailure: boom", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parts := parseAll(APIConverse, tt.body)
			err := errorOf(parts)
			if tt.want != nil {
				if !reflect.DeepEqual(parts, tt.want) {
					t.Fatalf("parts\n got %#v\nwant %#v", parts, tt.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) || errors.Is(err, provider.ErrIncomplete) != tt.inc {
				t.Fatalf("error %v (incomplete %v), want one saying %q (incomplete %v)", err, errors.Is(err, provider.ErrIncomplete), tt.err, tt.inc)
			}
		})
	}
}

// corrupt flips the last byte of a message (its CRC).
func corrupt(m string) string {
	b := []byte(m)
	b[len(b)-1] ^= 0xff
	return string(b)
}

// TestExceptions: every exception Bedrock sends in a stream, on either
// operation, ends the reply as a StreamError with its type and message
// after what came before, whatever follows; the retry policy resends the
// transient ones (see errors.go).
func TestExceptions(t *testing.T) {
	for _, typ := range []string{"throttlingException", "modelStreamErrorException", "serviceUnavailableException",
		"internalServerException", "validationException", "modelTimeoutException"} {
		for _, api := range []API{APIConverse, APIInvoke} {
			t.Run(string(api)+" "+typ, func(t *testing.T) {
				var body string
				if api == APIInvoke {
					body = chunk(`{"type":"message_start","message":{"usage":{"input_tokens":1,"output_tokens":1}}}`) +
						chunk(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Partial"}}`) +
						exc(typ, "it failed") + chunk(`{"type":"message_stop"}`)
				} else {
					body = cStart + cText(0, "Partial") + exc(typ, "it failed") + cEnd("end_turn") + cMeta
				}
				parts := parseAll(api, body)
				want := []provider.Part{provider.TextDelta{Text: "Partial"}, provider.Error{Err: &provider.StreamError{Type: typ, Message: "it failed"}}}
				if !reflect.DeepEqual(parts, want) {
					t.Fatalf("parts %#v, want %#v", parts, want)
				}
			})
		}
	}
	t.Run("modelStreamErrorException's original message", func(t *testing.T) {
		m := eventstream.MustEncode(eventstream.Message{Headers: []eventstream.Header{
			{Name: ":exception-type", Value: "modelStreamErrorException"}, {Name: ":message-type", Value: "exception"}},
			Payload: []byte(`{"originalMessage":"upstream died","originalStatusCode":500}`)})
		err := errorOf(parseAll(APIConverse, cStart+string(m)))
		if want := (&provider.StreamError{Type: "modelStreamErrorException", Message: "upstream died"}); !reflect.DeepEqual(err, want) {
			t.Fatalf("error %#v", err)
		}
	})
}

// TestInvokeStream: what the client makes of InvokeModelWithResponseStream
// bodies: Anthropic's events in chunks, folded as on Anthropic's API.
func TestInvokeStream(t *testing.T) {
	start := chunk(`{"type":"message_start","message":{"id":"msg_bdrk_1","model":"claude","usage":{"input_tokens":10,"cache_read_input_tokens":7,"output_tokens":1}}}`)
	stop := chunk(`{"type":"message_stop","amazon-bedrock-invocationMetrics":{"inputTokenCount":10,"outputTokenCount":5,"invocationLatency":1,"firstByteLatency":1}}`)
	tests := []struct {
		name string
		body string
		want []provider.Part
		err  string
		inc  bool
	}{
		{"thinking, text, a tool call, usage, invocation metrics",
			start +
				chunk(`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}`) +
				chunk(`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm"}}`) +
				chunk(`{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"SIG"}}`) +
				chunk(`{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`) +
				chunk(`{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"40°C"}}`) +
				chunk(`{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_bdrk_1","name":"weather","input":{}}}`) +
				chunk(`{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":""}}`) +
				chunk(`{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"loc"}}`) +
				chunk(`{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"\": 1}"}}`) +
				chunk(`{"type":"content_block_stop","index":2}`) +
				ev("someFutureEvent", `{}`) +
				chunk(`{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":5}}`) + stop,
			[]provider.Part{provider.ThinkingDelta{Text: "hm"}, provider.ThinkingDelta{Signature: "SIG"}, provider.TextDelta{Text: "40°C"},
				provider.ToolCallPart{Call: provider.ToolCall{ID: "toolu_bdrk_1", Name: "weather", Args: json.RawMessage(`{"loc": 1}`)}},
				provider.Usage{PromptTokens: 17, CompletionTokens: 5, CachedTokens: ptr(7)}, provider.Finish{Reason: "tool_use"}}, "", false},
		{"ends before message_stop", start + chunk(`{"type":"message_delta","delta":{"stop_reason":"end_turn"}}`), nil,
			"ended without message_stop, after 2 events (last message_delta)", true},
		{"cut inside a chunk", start + stop[:40], nil, "ended without message_stop, after 1 events (last message_start), inside a message", true},
		{"a chunk that is not JSON", start + ev("chunk", `{"bytes":`) + stop, nil, "bedrock: malformed chunk event", false},
		{"bytes that are not base64", start + ev("chunk", `{"bytes":"%%%"}`) + stop, nil, "bedrock: malformed chunk event", false},
		{"an Anthropic event that is not JSON", start + chunk(`{"type":"content_block_delta",`) + stop, nil, "anthropic: malformed message event", false},
		{"an Anthropic error event", start + chunk(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`) + stop, nil,
			"overloaded_error: Overloaded", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parts := parseAll(APIInvoke, tt.body)
			if tt.want != nil {
				if !reflect.DeepEqual(parts, tt.want) {
					t.Fatalf("parts\n got %#v\nwant %#v", parts, tt.want)
				}
				return
			}
			err := errorOf(parts)
			if err == nil || !strings.Contains(err.Error(), tt.err) || errors.Is(err, provider.ErrIncomplete) != tt.inc {
				t.Fatalf("error %v, want one saying %q (incomplete %v)", err, tt.err, tt.inc)
			}
		})
	}
}

// TestReadingMatchesClient: Parse's events carry exactly what the client
// yields, also for a stream cut short, one cut inside a message, and one
// whose framing breaks; the tail and the unreadable event are reported.
func TestReadingMatchesClient(t *testing.T) {
	full := cStart + cText(0, "Hi") + cStop(0) + cTool(1, "t1", "f") + cInput(1, `{}`) + cStop(1) + cEnd("tool_use") + cMeta
	tests := []struct {
		name     string
		body     string
		tail     int
		unparsed bool
	}{
		{"whole", full, 0, false},
		{"without metadata", strings.TrimSuffix(full, cMeta), 0, false},
		{"cut inside metadata", full[:len(full)-5], len(cMeta) - 5, false},
		{"cut before messageStop", cStart + cText(0, "Hi") + cEnd("x")[:13], 13, false},
		{"a corrupt message", cStart + corrupt(cText(0, "Hi")) + cEnd("end_turn"), 0, true},
		{"an exception", cStart + cText(0, "Hi") + exc("throttlingException", "slow") + cEnd("end_turn"), 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := parseAll(APIConverse, tt.body)
			rd := Parse(APIConverse, ContentType, []byte(tt.body))
			var all []provider.Part
			for _, e := range rd.Events {
				all = append(all, e.Parts...)
			}
			all = append(all, rd.EndParts...)
			if !reflect.DeepEqual(all, client) {
				t.Fatalf("reading's parts\n%#v\nclient's\n%#v", all, client)
			}
			last := rd.Events[len(rd.Events)-1]
			if rd.Tail != tt.tail || last.Unparsed != tt.unparsed || (!tt.unparsed && last.End+rd.Tail != len(tt.body)) || (tt.unparsed && last.End != len(tt.body)) {
				t.Fatalf("tail %d (want %d), last event %+v", rd.Tail, tt.tail, last)
			}
		})
	}
}

// TestEncoderPadding: the encoders write the same bytes for the same
// reply, and every payload carries a p padding field.
func TestEncoderPadding(t *testing.T) {
	parts := []provider.Part{provider.TextDelta{Text: "a"}, provider.ToolCallPart{Call: provider.ToolCall{ID: "1", Name: "f", Args: json.RawMessage(`{}`)}}, provider.Finish{Reason: "tool_use"}}
	u := &provider.Usage{PromptTokens: 3, CompletionTokens: 4}
	encode := func(e interface {
		Open() []byte
		Part(provider.Part) []byte
		Close() []byte
	}) []byte {
		b := e.Open()
		for _, p := range parts {
			b = append(b, e.Part(p)...)
		}
		return append(b, e.Close()...)
	}
	for _, mk := range []func() []byte{
		func() []byte { return encode(NewConverseEncoder(u)) },
		func() []byte { return encode(NewInvokeEncoder("m", "c", u)) },
	} {
		a, b := mk(), mk()
		if !bytes.Equal(a, b) {
			t.Fatalf("two encodings differ")
		}
		frames, tail, err := eventstream.Split(a)
		if err != nil || tail != 0 {
			t.Fatal(err)
		}
		for _, f := range frames {
			var p struct {
				P string `json:"p"`
			}
			if json.Unmarshal(f.Message.Payload, &p) != nil || p.P == "" || !strings.HasPrefix("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", p.P) {
				t.Errorf("payload %s has no padding", f.Message.Payload)
			}
		}
	}
}
