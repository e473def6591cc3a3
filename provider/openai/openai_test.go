package openai

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/openmax/openmax/internal/fixture"

	"gopkg.in/yaml.v3"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/httpx"
	"github.com/openmax/openmax/provider/internal/codectest"
	"github.com/openmax/openmax/provider/internal/providertest"
)

// testKey is the API key of every test; no error may ever show it.
const testKey = "sk-test-k3y-that-must-never-leak-0123456789"

func newClient(t *testing.T, baseURL string, hc *httpx.Client) *Client {
	t.Helper()
	c, err := New(Config{APIKey: testKey, BaseURL: baseURL, Model: "gpt-test", HTTP: hc})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

// outcome is what a stream reconstructs.
type outcome struct {
	Text     string
	Thinking string
	Calls    []provider.ToolCall
	Usage    *provider.Usage
	Finish   *string
	Err      error
}

// run streams req and folds the parts, checking the part-order contract and
// that the key appears in no error.
func run(t *testing.T, ctx context.Context, c *Client, req provider.Request) outcome {
	t.Helper()
	var parts []provider.Part
	for p := range c.Stream(ctx, req) {
		parts = append(parts, p)
	}
	return fold(t, parts)
}

func fold(t *testing.T, parts []provider.Part) outcome {
	t.Helper()
	var o outcome
	tail := false // tool calls, usage and finish come last
	for i, p := range parts {
		if o.Err != nil || o.Finish != nil {
			t.Fatalf("part %d (%T) after the end of the reply", i, p)
		}
		switch p := p.(type) {
		case provider.TextDelta:
			if tail {
				t.Fatalf("text after the tool calls/usage")
			}
			if p.Text == "" {
				t.Fatalf("empty TextDelta")
			}
			o.Text += p.Text
		case provider.ThinkingDelta:
			if tail {
				t.Fatalf("thinking after the tool calls/usage")
			}
			o.Thinking += p.Text
		case provider.ToolCallPart:
			if o.Usage != nil {
				t.Fatalf("tool call after usage")
			}
			tail = true
			o.Calls = append(o.Calls, p.Call)
		case provider.Usage:
			if o.Usage != nil {
				t.Fatalf("two Usage parts")
			}
			tail = true
			u := p
			o.Usage = &u
		case provider.Finish:
			r := p.Reason
			o.Finish = &r
		case provider.Error:
			if p.Err == nil {
				t.Fatalf("Error part with a nil error")
			}
			if strings.Contains(p.Err.Error(), testKey) {
				t.Fatalf("the API key leaked into an error: %v", p.Err)
			}
			o.Err = p.Err
		default:
			t.Fatalf("unexpected part %T", p)
		}
	}
	if o.Err != nil && (len(o.Calls) > 0 || o.Usage != nil) {
		t.Fatalf("a failed reply yielded tool calls or usage: %+v", o)
	}
	return o
}

// serve answers every request with the same status, content type and body.
func serve(t *testing.T, status int, contentType, body string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if contentType != "" {
			w.Header().Set("Content-Type", contentType)
		}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// sseBody frames each payload as a data event.
func sseBody(payloads ...string) string {
	var b strings.Builder
	for _, p := range payloads {
		b.WriteString("data: " + p + "\n\n")
	}
	return b.String()
}

func chunkJSON(delta string, finish string) string {
	fr := "null"
	if finish != "" {
		fr = strconv.Quote(finish)
	}
	return `{"id":"chatcmpl-1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":` + delta + `,"logprobs":null,"finish_reason":` + fr + `}],"usage":null}`
}

func text(s string) string   { return chunkJSON(`{"content":`+strconv.Quote(s)+`}`, "") }
func finish(r string) string { return chunkJSON(`{}`, r) }
func usageChunk(p, c int, details string) string {
	return fmt.Sprintf(`{"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d%s}}`, p, c, p+c, details)
}

func intp(n int) *int       { return &n }
func strp(s string) *string { return &s }

var simpleReq = provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Text: "hi"}}}

// TestContract runs the shared vendor-client contract on this wire.
func TestContract(t *testing.T) {
	providertest.Run(t, providertest.Vendor{
		Name: "openai",
		New: func(base string, hc *httpx.Client, key string) (provider.Provider, error) {
			return New(Config{APIKey: key, BaseURL: base, Model: "gpt-test", HTTP: hc})
		},
		Path:            Path,
		Headers:         func(key string) http.Header { return http.Header{"Authorization": {"Bearer " + key}} },
		Encoder:         func(*provider.Usage) codectest.Encoder { return NewEncoder("chatcmpl-1", "gpt-test", 1767225600) },
		HTTPErrorBody:   HTTPErrorBody,
		ErrorEvent:      ErrorEvent,
		Stop:            "stop",
		ToolStop:        "tool_calls",
		FinishEndsReply: true,
		Truncated:       "stream ended before finish_reason",
		NoEvents:        "no data events",
		Malformed:       "openai: bad chunk",
	})
}

func TestNew(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr func(error) bool
		wantURL string
	}{
		{"blank key", Config{APIKey: "  ", Model: "m"}, func(err error) bool { return errors.Is(err, provider.ErrMissingKey) }, ""},
		{"missing model", Config{APIKey: "k"}, func(err error) bool { return err != nil && !errors.Is(err, provider.ErrMissingKey) }, ""},
		{"default base URL", Config{APIKey: "k", Model: "m"}, nil, "https://api.openai.com/v1/chat/completions"},
		{"trailing slash", Config{APIKey: "k", Model: "m", BaseURL: "http://127.0.0.1:8000/v1/"}, nil, "http://127.0.0.1:8000/v1/chat/completions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(tt.cfg)
			if tt.wantErr != nil {
				if err == nil || !tt.wantErr(err) {
					t.Fatalf("New error = %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			if c.url != tt.wantURL {
				t.Fatalf("url = %q, want %q", c.url, tt.wantURL)
			}
			if c.http == nil {
				t.Fatalf("nil HTTP client")
			}
		})
	}
}

func TestRequestBody(t *testing.T) {
	// The method, path and headers are the contract's (TestContract).
	got := make(chan []byte, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- b
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, sseBody(text("ok"), finish("stop"), "[DONE]"))
	}))
	defer srv.Close()

	req := provider.Request{
		System: "You are terse.",
		Messages: []provider.Message{
			{Role: provider.RoleUser, Text: "What is 2+3 and 2*3?"},
			{Role: provider.RoleAssistant, Text: "Let me compute.",
				Thinking: []provider.Thinking{{Text: "use both tools", Signature: "sig"}},
				ToolCalls: []provider.ToolCall{
					{ID: "call_a", Name: "add", Args: json.RawMessage(`{"a": 2, "b": 3}`)},
					{ID: "call_m", Name: "multiply", Args: json.RawMessage(`{"a":2,"b":3}`)},
				}},
			{Role: provider.RoleTool, CallID: "call_a", Text: "5"},
			{Role: provider.RoleTool, CallID: "call_m", Text: "tool crashed", IsError: true},
			{Role: provider.RoleAssistant, ToolCalls: []provider.ToolCall{{ID: "call_n", Name: "now"}}},
			{Role: provider.RoleTool, CallID: "call_n", Text: ""},
			{Role: provider.RoleAssistant, Text: "5 and 6."},
			{Role: provider.RoleAssistant},
			{Role: provider.RoleUser, Text: "Thanks"},
		},
		Tools: []provider.ToolSpec{
			{Name: "add", Description: "Add two numbers", Schema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}`)},
			{Name: "now"},
		},
	}
	c := newClient(t, srv.URL+"/v1/", nil)
	if o := run(t, context.Background(), c, req); o.Err != nil || o.Text != "ok" {
		t.Fatalf("outcome %+v", o)
	}
	body := <-got
	want := `{
	  "model": "gpt-test",
	  "messages": [
	    {"role": "system", "content": "You are terse."},
	    {"role": "user", "content": "What is 2+3 and 2*3?"},
	    {"role": "assistant", "content": "Let me compute.", "tool_calls": [
	      {"id": "call_a", "type": "function", "function": {"name": "add", "arguments": "{\"a\": 2, \"b\": 3}"}},
	      {"id": "call_m", "type": "function", "function": {"name": "multiply", "arguments": "{\"a\":2,\"b\":3}"}}
	    ]},
	    {"role": "tool", "tool_call_id": "call_a", "content": "5"},
	    {"role": "tool", "tool_call_id": "call_m", "content": "tool crashed"},
	    {"role": "assistant", "content": null, "tool_calls": [
	      {"id": "call_n", "type": "function", "function": {"name": "now", "arguments": "{}"}}
	    ]},
	    {"role": "tool", "tool_call_id": "call_n", "content": ""},
	    {"role": "assistant", "content": "5 and 6."},
	    {"role": "assistant", "content": ""},
	    {"role": "user", "content": "Thanks"}
	  ],
	  "tools": [
	    {"type": "function", "function": {"name": "add", "description": "Add two numbers",
	      "parameters": {"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}}},
	    {"type": "function", "function": {"name": "now", "parameters": {"type":"object","properties":{}}}}
	  ],
	  "stream": true,
	  "stream_options": {"include_usage": true}
	}`
	assertJSON(t, body, want)

	// No tools: the key is omitted; the request's model wins over the default.
	req2 := provider.Request{Model: "other-model", Messages: []provider.Message{{Role: provider.RoleUser, Text: "hi"}}}
	if o := run(t, context.Background(), c, req2); o.Err != nil {
		t.Fatal(o.Err)
	}
	assertJSON(t, <-got, `{"model":"other-model","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true}}`)
}

func assertJSON(t *testing.T, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("request body is not JSON: %v\n%s", err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad expectation: %v", err)
	}
	if !reflect.DeepEqual(g, w) {
		gi, _ := json.MarshalIndent(g, "", "  ")
		wi, _ := json.MarshalIndent(w, "", "  ")
		t.Fatalf("request body\n got: %s\nwant: %s", gi, wi)
	}
}

func TestStream(t *testing.T) {
	isIncomplete := func(sub string) func(*testing.T, error) {
		return func(t *testing.T, err error) {
			t.Helper()
			if !errors.Is(err, provider.ErrIncomplete) {
				t.Fatalf("error %v (%T) is not ErrIncomplete", err, err)
			}
			if !strings.Contains(err.Error(), sub) {
				t.Fatalf("error %q does not say %q", err, sub)
			}
		}
	}
	isStreamError := func(typ, msg string) func(*testing.T, error) {
		return func(t *testing.T, err error) {
			t.Helper()
			var se *provider.StreamError
			if !errors.As(err, &se) || se.Type != typ || se.Message != msg {
				t.Fatalf("error %v (%T), want StreamError{%q, %q}", err, err, typ, msg)
			}
			if errors.Is(err, provider.ErrIncomplete) {
				t.Fatalf("a reported error must not be ErrIncomplete")
			}
		}
	}
	tests := []struct {
		name  string
		ctype string
		body  string
		want  outcome
		err   func(*testing.T, error)
	}{
		{
			name:  "text then parallel tool calls by index",
			ctype: "text/event-stream; charset=utf-8",
			body: sseBody(
				chunkJSON(`{"role":"assistant","content":""}`, ""),
				text("Checking "), text("both."),
				chunkJSON(`{"content":null,"tool_calls":[{"index":0,"id":"call_A","type":"function","function":{"name":"add","arguments":""}}]}`, ""),
				chunkJSON(`{"tool_calls":[{"index":1,"id":"call_M","type":"function","function":{"name":"multiply","arguments":"{\"a\""}}]}`, ""),
				chunkJSON(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\": 2, "}}]}`, ""),
				chunkJSON(`{"tool_calls":[{"index":1,"function":{"arguments":":2,\"b\":3}"}}]}`, ""),
				chunkJSON(`{"tool_calls":[{"index":0,"function":{"arguments":"\"b\": 3}"}}]}`, ""),
				finish("tool_calls"),
				"[DONE]"),
			want: outcome{Text: "Checking both.", Finish: strp("tool_calls"), Calls: []provider.ToolCall{
				{ID: "call_A", Name: "add", Args: json.RawMessage(`{"a": 2, "b": 3}`)},
				{ID: "call_M", Name: "multiply", Args: json.RawMessage(`{"a":2,"b":3}`)},
			}},
		},
		{
			name:  "tool calls arriving out of index order are emitted in index order",
			ctype: "text/event-stream",
			body: sseBody(
				chunkJSON(`{"tool_calls":[{"index":1,"id":"c1","function":{"name":"b","arguments":"{}"}},{"index":0,"id":"c0","function":{"name":"a","arguments":"{}"}}]}`, ""),
				finish("tool_calls"), "[DONE]"),
			want: outcome{Finish: strp("tool_calls"), Calls: []provider.ToolCall{
				{ID: "c0", Name: "a", Args: json.RawMessage(`{}`)},
				{ID: "c1", Name: "b", Args: json.RawMessage(`{}`)},
			}},
		},
		{
			name:  "empty arguments become {}",
			ctype: "text/event-stream",
			body: sseBody(
				chunkJSON(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"now","arguments":""}}]}`, ""),
				finish("tool_calls"), "[DONE]"),
			want: outcome{Finish: strp("tool_calls"), Calls: []provider.ToolCall{{ID: "call_1", Name: "now", Args: json.RawMessage(`{}`)}}},
		},
		{
			name:  "finish_reason in its own chunk with an empty delta",
			ctype: "text/event-stream",
			body:  sseBody(text("Hello"), text(" world"), finish("stop"), "[DONE]"),
			want:  outcome{Text: "Hello world", Finish: strp("stop")},
		},
		{
			name:  "finish_reason together with the last text",
			ctype: "text/event-stream",
			body:  sseBody(text("Hel"), chunkJSON(`{"content":"lo"}`, "length"), "[DONE]"),
			want:  outcome{Text: "Hello", Finish: strp("length")},
		},
		{
			name:  "usage chunk with cached tokens",
			ctype: "text/event-stream",
			body: sseBody(text("Hi"), finish("stop"),
				usageChunk(1200, 9, `,"prompt_tokens_details":{"cached_tokens":1024,"audio_tokens":0}`), "[DONE]"),
			want: outcome{Text: "Hi", Finish: strp("stop"), Usage: &provider.Usage{PromptTokens: 1200, CompletionTokens: 9, CachedTokens: intp(1024)}},
		},
		{
			name:  "usage without details has no cached count",
			ctype: "text/event-stream",
			body:  sseBody(text("Hi"), finish("stop"), usageChunk(5, 1, ""), "[DONE]"),
			want:  outcome{Text: "Hi", Finish: strp("stop"), Usage: &provider.Usage{PromptTokens: 5, CompletionTokens: 1}},
		},
		{
			name:  "DeepSeek prompt_cache_hit_tokens",
			ctype: "text/event-stream",
			body:  sseBody(text("Hi"), finish("stop"), usageChunk(64, 2, `,"prompt_cache_hit_tokens":60,"prompt_cache_miss_tokens":4`), "[DONE]"),
			want:  outcome{Text: "Hi", Finish: strp("stop"), Usage: &provider.Usage{PromptTokens: 64, CompletionTokens: 2, CachedTokens: intp(60)}},
		},
		{
			name:  "usage inside the finishing chunk (llama.cpp), last one wins",
			ctype: "text/event-stream",
			body: sseBody(
				`{"choices":[{"index":0,"delta":{"content":"A"},"finish_reason":null}],"usage":{"prompt_tokens":3,"completion_tokens":1}}`,
				`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2}}`,
				"[DONE]"),
			want: outcome{Text: "A", Finish: strp("stop"), Usage: &provider.Usage{PromptTokens: 3, CompletionTokens: 2}},
		},
		{
			name:  "reasoning_content becomes thinking",
			ctype: "text/event-stream",
			body: sseBody(
				chunkJSON(`{"role":"assistant","content":null,"reasoning_content":"Let me "}`, ""),
				chunkJSON(`{"content":null,"reasoning_content":"think."}`, ""),
				chunkJSON(`{"content":"Answer.","reasoning_content":null}`, ""),
				finish("stop"), "[DONE]"),
			want: outcome{Thinking: "Let me think.", Text: "Answer.", Finish: strp("stop")},
		},
		{
			name:  "reasoning (vLLM) becomes thinking, and is not doubled when both fields carry it",
			ctype: "text/event-stream",
			body: sseBody(
				chunkJSON(`{"reasoning":"Hmm"}`, ""),
				chunkJSON(`{"reasoning":", ok","reasoning_content":", ok"}`, ""),
				text("Yes"), finish("stop"), "[DONE]"),
			want: outcome{Thinking: "Hmm, ok", Text: "Yes", Finish: strp("stop")},
		},
		{
			name:  "content as a list of parts",
			ctype: "text/event-stream",
			body: sseBody(
				chunkJSON(`{"content":[{"type":"thinking","thinking":[{"type":"text","text":"plan"}]}]}`, ""),
				chunkJSON(`{"content":[{"type":"text","text":"done"}]}`, ""),
				finish("stop"), "[DONE]"),
			want: outcome{Thinking: "plan", Text: "done", Finish: strp("stop")},
		},
		{
			name:  "refusal is reply text",
			ctype: "text/event-stream",
			body:  sseBody(chunkJSON(`{"content":null,"refusal":"I can't help with that."}`, ""), finish("stop"), "[DONE]"),
			want:  outcome{Text: "I can't help with that.", Finish: strp("stop")},
		},
		{
			name:  "CRLF framing, comments, other event types and other choices are ignored",
			ctype: "text/event-stream",
			body: ": OPENROUTER PROCESSING\r\n\r\n" +
				"event: ping\r\ndata: {\"not\":\"a chunk\"}\r\n\r\n" +
				"data: " + text("ok") + "\r\n\r\n" +
				`data: {"choices":[{"index":1,"delta":{"content":"other"},"finish_reason":"stop"}]}` + "\r\n\r\n" +
				`data: {"choices":[],"prompt_filter_results":[]}` + "\r\n\r\n" +
				"data: " + finish("stop") + "\r\n\r\n" +
				"data: [DONE]\r\n\r\n",
			want: outcome{Text: "ok", Finish: strp("stop")},
		},
		{
			name:  "tool calls without an index are told apart by id",
			ctype: "text/event-stream",
			body: sseBody(
				chunkJSON(`{"tool_calls":[{"id":"a1","function":{"name":"add","arguments":"{\"a\":"}}]}`, ""),
				chunkJSON(`{"tool_calls":[{"function":{"arguments":"1}"}}]}`, ""),
				chunkJSON(`{"tool_calls":[{"id":"m1","function":{"name":"mul","arguments":"{}"}}]}`, ""),
				finish("tool_calls"), "[DONE]"),
			want: outcome{Finish: strp("tool_calls"), Calls: []provider.ToolCall{
				{ID: "a1", Name: "add", Args: json.RawMessage(`{"a":1}`)},
				{ID: "m1", Name: "mul", Args: json.RawMessage(`{}`)},
			}},
		},
		{
			name:  "a new id on a reused index is a new call",
			ctype: "text/event-stream",
			body: sseBody(
				chunkJSON(`{"tool_calls":[{"index":0,"id":"x","function":{"name":"f","arguments":"{\"n\":1}"}}]}`, ""),
				chunkJSON(`{"tool_calls":[{"index":0,"id":"y","function":{"name":"g","arguments":"{\"n\":"}}]}`, ""),
				chunkJSON(`{"tool_calls":[{"index":0,"function":{"arguments":"2}"}}]}`, ""),
				finish("tool_calls"), "[DONE]"),
			want: outcome{Finish: strp("tool_calls"), Calls: []provider.ToolCall{
				{ID: "x", Name: "f", Args: json.RawMessage(`{"n":1}`)},
				{ID: "y", Name: "g", Args: json.RawMessage(`{"n":2}`)},
			}},
		},
		{
			name:  "arguments sent as a JSON object",
			ctype: "text/event-stream",
			body: sseBody(
				chunkJSON(`{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":{"q":"x"}}}]}`, ""),
				finish("tool_calls"), "[DONE]"),
			want: outcome{Finish: strp("tool_calls"), Calls: []provider.ToolCall{{ID: "c", Name: "f", Args: json.RawMessage(`{"q":"x"}`)}}},
		},
		{
			name:  "vLLM error frame then [DONE]",
			ctype: "text/event-stream",
			body: sseBody(text("par"),
				`{"error":{"object":"error","message":"The model ran out of KV cache.","type":"InternalServerError","param":null,"code":500}}`,
				"[DONE]"),
			want: outcome{Text: "par"},
			err:  isStreamError("InternalServerError", "The model ran out of KV cache."),
		},
		{
			name:  "llama.cpp error frame then EOF",
			ctype: "text/event-stream",
			body:  sseBody(`{"error":{"code":500,"message":"context shift is disabled","type":"server_error"}}`),
			err:   isStreamError("server_error", "context shift is disabled"),
		},
		{
			name:  "error frame with only a numeric code",
			ctype: "text/event-stream",
			body:  sseBody(`{"error":{"code":429,"message":"slow down"}}`),
			err:   isStreamError("429", "slow down"),
		},
		{
			name:  "error frame that is a bare string",
			ctype: "text/event-stream",
			body:  sseBody(`{"error":"upstream overloaded"}`),
			err:   isStreamError("", "upstream overloaded"),
		},
		{
			name:  "error frame after finish_reason still fails the reply",
			ctype: "text/event-stream",
			body:  sseBody(text("x"), finish("stop"), `{"error":{"type":"server_error","message":"boom"}}`),
			want:  outcome{Text: "x"},
			err:   isStreamError("server_error", "boom"),
		},
		{
			name:  "[DONE] without finish_reason",
			ctype: "text/event-stream",
			body:  sseBody(text("Hal"), "[DONE]"),
			want:  outcome{Text: "Hal"},
			err:   isIncomplete("[DONE]"),
		},
		{
			name:  "non-streaming JSON completion",
			ctype: "application/json",
			body: `{"id":"chatcmpl-9","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Sure.","reasoning_content":"easy",
				"tool_calls":[{"id":"c1","type":"function","function":{"name":"add","arguments":"{\"a\":1}"}},{"id":"c2","type":"function","function":{"name":"now","arguments":""}}]},
				"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":10,"completion_tokens":4,"total_tokens":14,"prompt_tokens_details":{"cached_tokens":0}}}`,
			want: outcome{Thinking: "easy", Text: "Sure.", Finish: strp("tool_calls"),
				Usage: &provider.Usage{PromptTokens: 10, CompletionTokens: 4, CachedTokens: intp(0)},
				Calls: []provider.ToolCall{{ID: "c1", Name: "add", Args: json.RawMessage(`{"a":1}`)}, {ID: "c2", Name: "now", Args: json.RawMessage(`{}`)}}},
		},
		{
			name:  "non-streaming tool calls without ids stay separate",
			ctype: "application/json; charset=utf-8",
			body:  `{"choices":[{"message":{"content":null,"tool_calls":[{"function":{"name":"a","arguments":"{}"}},{"function":{"name":"b","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`,
			want: outcome{Finish: strp("tool_calls"), Calls: []provider.ToolCall{
				{Name: "a", Args: json.RawMessage(`{}`)}, {Name: "b", Args: json.RawMessage(`{}`)},
			}},
		},
		{
			name:  "non-streaming error body with status 200",
			ctype: "application/json",
			body:  `{"error":{"message":"model not loaded","type":"unavailable","code":503}}`,
			err:   isStreamError("unavailable", "model not loaded"),
		},
		{
			name:  "non-streaming error that is a bare string echoing the key",
			ctype: "application/json",
			body:  `{"error":"no such key: ` + testKey + `"}`,
			err:   isStreamError("", "no such key: [redacted]"),
		},
		{
			name:  "non-streaming completion without finish_reason",
			ctype: "application/json",
			body:  `{"choices":[{"message":{"content":"half"}}]}`,
			want:  outcome{Text: "half"},
			err:   isIncomplete("no finish_reason"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := serve(t, 200, tt.ctype, tt.body)
			got := run(t, context.Background(), newClient(t, srv.URL, nil), simpleReq)
			if tt.err != nil {
				if got.Err == nil {
					t.Fatalf("no error; outcome %+v", got)
				}
				tt.err(t, got.Err)
				if got.Finish != nil {
					t.Fatalf("Finish after an error")
				}
			} else if got.Err != nil {
				t.Fatalf("unexpected error: %v", got.Err)
			}
			got.Err = nil
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("outcome\n got: %s\nwant: %s", show(got), show(tt.want))
			}
		})
	}
}

func show(o outcome) string {
	b, _ := json.Marshal(o)
	return string(b)
}

// ---- Real recorded traffic -------------------------------------------------

// recorded is one recorded response.
type recorded struct {
	status int
	header http.Header
	body   []byte // as recorded: gzip stays gzip
}

func fixturePath(t *testing.T, name string) string { t.Helper(); return fixture.Real(t, name) }

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(fixturePath(t, name))
	if err != nil {
		t.Fatalf("reading fixture: %v", err)
	}
	return b
}

// loadVCRPy reads a vcrpy cassette (version 1). A !!binary body decodes to
// its raw (gzip) bytes.
func loadVCRPy(t *testing.T, name string) []recorded {
	t.Helper()
	var c struct {
		Interactions []struct {
			Response struct {
				Body struct {
					String string `yaml:"string"`
				} `yaml:"body"`
				Headers map[string][]string `yaml:"headers"`
				Status  struct {
					Code int `yaml:"code"`
				} `yaml:"status"`
			} `yaml:"response"`
		} `yaml:"interactions"`
		Version int `yaml:"version"`
	}
	if err := yaml.Unmarshal(readFixture(t, name), &c); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if c.Version != 1 || len(c.Interactions) == 0 {
		t.Fatalf("%s: not a vcrpy cassette", name)
	}
	var out []recorded
	for _, in := range c.Interactions {
		out = append(out, recorded{status: in.Response.Status.Code, header: headerOf(in.Response.Headers), body: []byte(in.Response.Body.String)})
	}
	return out
}

// loadGoVCR reads a go-vcr v4 cassette (which says version: 2).
func loadGoVCR(t *testing.T, name string) []recorded {
	t.Helper()
	var c struct {
		Version      int `yaml:"version"`
		Interactions []struct {
			Response struct {
				Body    string              `yaml:"body"`
				Headers map[string][]string `yaml:"headers"`
				Code    int                 `yaml:"code"`
			} `yaml:"response"`
		} `yaml:"interactions"`
	}
	if err := yaml.Unmarshal(readFixture(t, name), &c); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if c.Version != 2 || len(c.Interactions) == 0 {
		t.Fatalf("%s: not a go-vcr v4 cassette", name)
	}
	var out []recorded
	for _, in := range c.Interactions {
		out = append(out, recorded{status: in.Response.Code, header: headerOf(in.Response.Headers), body: []byte(in.Response.Body)})
	}
	return out
}

// loadHTTPRR reads an httprr trace: a header line, then per exchange
// "<reqlen> <resplen>\n", the raw request and the raw response.
func loadHTTPRR(t *testing.T, name string) []recorded {
	t.Helper()
	data := readFixture(t, name)
	const magic = "httprr trace v1\n"
	if !bytes.HasPrefix(data, []byte(magic)) {
		t.Fatalf("%s: not an httprr trace", name)
	}
	data = data[len(magic):]
	var out []recorded
	for len(data) > 0 {
		nl := bytes.IndexByte(data, '\n')
		if nl < 0 {
			t.Fatalf("%s: truncated length line", name)
		}
		var n, m int
		if _, err := fmt.Sscanf(string(data[:nl]), "%d %d", &n, &m); err != nil {
			t.Fatalf("%s: bad length line %q: %v", name, data[:nl], err)
		}
		data = data[nl+1:]
		if n+m > len(data) {
			t.Fatalf("%s: truncated exchange", name)
		}
		raw := data[n : n+m]
		data = data[n+m:]
		resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(raw)), nil)
		if err != nil {
			t.Fatalf("%s: response: %v", name, err)
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("%s: response body: %v", name, err)
		}
		out = append(out, recorded{status: resp.StatusCode, header: resp.Header, body: body})
	}
	return out
}

func headerOf(m map[string][]string) http.Header {
	h := http.Header{}
	for k, vs := range m {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	return h
}

// replay serves the recorded responses in order, with their status and
// Content-Type / Content-Encoding / Retry-After as recorded.
func replay(t *testing.T, recs []recorded) *httptest.Server {
	t.Helper()
	next := make(chan recorded, len(recs))
	for _, r := range recs {
		next <- r
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer "+testKey {
			t.Errorf("unexpected request %s %s", r.Method, r.URL.Path)
		}
		io.Copy(io.Discard, r.Body)
		var rec recorded
		select {
		case rec = <-next:
		default:
			t.Errorf("more requests than recorded responses")
			w.WriteHeader(500)
			return
		}
		for _, k := range []string{"Content-Type", "Content-Encoding", "Retry-After", "Retry-After-Ms"} {
			if v := rec.header.Values(k); len(v) > 0 {
				w.Header()[k] = v
			}
		}
		w.WriteHeader(rec.status)
		w.Write(rec.body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// expected is one interaction of fixture.Expected.
type expected struct {
	Interaction    int     `json:"interaction"`
	Status         int     `json:"status"`
	FinishReason   string  `json:"finish_reason"`
	Content        *string `json:"content"`
	MessageContent *string `json:"message_content"`
	ToolCalls      []struct {
		Index     int    `json:"index"`
		ID        string `json:"id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"tool_calls"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	BodyJSON *struct {
		Error struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
		} `json:"error"`
	} `json:"body_json"`
}

// expectations reads what a correct client reconstructs from name.
func expectations(t *testing.T, name string) []expected {
	t.Helper()
	data := fixture.Expected(t, name)
	var exp []expected
	if err := json.Unmarshal(data, &exp); err != nil {
		t.Fatalf("expected values for %s: %v", name, err)
	}
	return exp
}

func TestRealFixtures(t *testing.T) {
	plain := func() *httpx.Client { return nil }
	noDecompress := func() *httpx.Client {
		return &httpx.Client{HTTP: &http.Client{Transport: &http.Transport{DisableCompression: true}}}
	}
	tests := []struct {
		file   string
		load   func(*testing.T, string) []recorded
		client func() *httpx.Client
		// cached is the cached-token count the usage chunks carry (nil:
		// the recording has no prompt_tokens_details).
		cached *int
		// spot checks the short-form values, independently
		// of its JSON blocks.
		spot func(*testing.T, []outcome)
	}{
		{"simonw-llm__test_tool_use_basic.yaml", loadVCRPy, plain, intp(0), func(t *testing.T, o []outcome) {
			want := []provider.ToolCall{{ID: "call_1EYWDzueHEp8OsB8jJSEp7WB", Name: "multiply", Args: json.RawMessage(`{"a":1231,"b":2331}`)}}
			if !reflect.DeepEqual(o[0].Calls, want) || *o[0].Finish != "tool_calls" {
				t.Errorf("#0 %s", show(o[0]))
			}
			if o[1].Text != `The result of \( 1231 \times 2331 \) is \( 2,869,461 \).` || *o[1].Finish != "stop" {
				t.Errorf("#1 %s", show(o[1]))
			}
		}},
		{"fantasy__openai-gpt-4o-mini__multi_tool_streaming.yaml", loadGoVCR, plain, intp(0), func(t *testing.T, o []outcome) {
			want := []provider.ToolCall{
				{ID: "call_cclGbjTQkZDEnnHrRiU0n7NO", Name: "add", Args: json.RawMessage(`{"a": 2, "b": 3}`)},
				{ID: "call_Nob2SzTcxIjro1HvSBPQS6XG", Name: "multiply", Args: json.RawMessage(`{"a": 2, "b": 3}`)},
			}
			if !reflect.DeepEqual(o[0].Calls, want) {
				t.Errorf("#0 %s", show(o[0]))
			}
			if o[1].Text != "The sum of 2 and 3 is 5, and the product of 2 and 3 is 6." {
				t.Errorf("#1 %s", show(o[1]))
			}
		}},
		{"langchaingo-openai__TestClient_CreateChatCompletionStream.httprr", loadHTTPRR, plain, intp(0), func(t *testing.T, o []outcome) {
			if o[0].Text != "1, 2, 3, 4, 5" || *o[0].Finish != "stop" || o[0].Usage.PromptTokens != 14 || o[0].Usage.CompletionTokens != 13 {
				t.Errorf("#0 %s", show(o[0]))
			}
		}},
		{"autogpt-cassettes-206c0689__test_write_file.yaml", loadVCRPy, plain, nil, func(t *testing.T, o []outcome) {
			if o[3].Text != `a simple greeting of "Hello World."` || !strings.Contains(o[0].Text, `"name": "write_to_file"`) ||
				!strings.Contains(o[1].Text, `"name": "task_complete"`) {
				t.Errorf("texts %q / %q / %q", o[0].Text, o[1].Text, o[3].Text)
			}
		}},
		// The same gzip bodies, with the transport leaving them compressed.
		{"autogpt-cassettes-206c0689__test_write_file.yaml", loadVCRPy, noDecompress, nil, nil},
	}
	for i, tt := range tests {
		t.Run(fmt.Sprintf("%d_%s", i, strings.SplitN(tt.file, "__", 2)[0]), func(t *testing.T) {
			recs := tt.load(t, tt.file)
			exp := expectations(t, tt.file)
			if len(recs) != len(exp) {
				t.Fatalf("%d recorded responses, %d are expected", len(recs), len(exp))
			}
			srv := replay(t, recs)
			c := newClient(t, srv.URL+"/v1", tt.client())
			var outs []outcome
			for k, e := range exp {
				if recs[k].status != e.Status {
					t.Fatalf("#%d: recorded status %d, expected %d", k, recs[k].status, e.Status)
				}
				got := run(t, context.Background(), c, simpleReq)
				outs = append(outs, got)
				if e.Status != 200 {
					checkHTTPError(t, k, got, e)
					continue
				}
				if got.Err != nil {
					t.Fatalf("#%d: %v", k, got.Err)
				}
				want := outcome{Finish: strp(e.FinishReason)}
				switch {
				case e.Content != nil:
					want.Text = *e.Content
				case e.MessageContent != nil:
					want.Text = *e.MessageContent
				}
				for _, tc := range e.ToolCalls {
					want.Calls = append(want.Calls, provider.ToolCall{ID: tc.ID, Name: tc.Name, Args: json.RawMessage(tc.Arguments)})
				}
				if e.Usage == nil {
					t.Fatalf("#%d: expected no usage", k)
				}
				want.Usage = &provider.Usage{PromptTokens: e.Usage.PromptTokens, CompletionTokens: e.Usage.CompletionTokens, CachedTokens: tt.cached}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("#%d\n got: %s\nwant: %s", k, show(got), show(want))
				}
			}
			if tt.spot != nil {
				tt.spot(t, outs)
			}
		})
	}
}

// checkHTTPError compares a failed interaction with its recorded error body:
// A7's 429 says server_error, has a null code and no Retry-After.
func checkHTTPError(t *testing.T, k int, got outcome, e expected) {
	t.Helper()
	var he *provider.HTTPError
	if !errors.As(got.Err, &he) {
		t.Fatalf("#%d: error %v (%T), want *provider.HTTPError", k, got.Err, got.Err)
	}
	if e.BodyJSON == nil {
		t.Fatalf("#%d: expected no error body", k)
	}
	want := provider.HTTPError{Status: e.Status, Code: e.BodyJSON.Error.Type, Message: e.BodyJSON.Error.Message}
	if *he != want {
		t.Fatalf("#%d: HTTPError %+v, want %+v", k, *he, want)
	}
	if he.HasRetryAfter {
		t.Fatalf("#%d: a Retry-After the response never sent", k)
	}
	if got.Text != "" || got.Finish != nil {
		t.Fatalf("#%d: parts beside the error: %s", k, show(got))
	}
}

// A Config printed in a log line or a test failure never shows its key.
func TestConfigPrintingHidesTheKey(t *testing.T) {
	cfg := Config{APIKey: "sk-secret-config-key-0123", BaseURL: "http://x", Model: "m"}
	for _, s := range []string{fmt.Sprint(cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg)} {
		if strings.Contains(s, "sk-secret") || !strings.Contains(s, "APIKey: (set)") {
			t.Errorf("printed %s", s)
		}
	}
}
