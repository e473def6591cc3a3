package bedrock

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/openmax/openmax/provider"
)

// conversation is a multi-turn transcript with every kind of message.
var conversation = []provider.Message{
	{Role: provider.RoleUser, Text: "What's the weather in Paris & Rome?"},
	{Role: provider.RoleAssistant, Text: "Checking.",
		Thinking: []provider.Thinking{
			{Text: "Need both cities.", Signature: "sig1"},
			{Text: "never signed"},
			{Signature: redactedPrefix + "UkVEQUNURUQ="},
			{Signature: "anthropic-redacted-thinking:OTHER"},
		},
		ToolCalls: []provider.ToolCall{
			{ID: "tooluse_1", Name: "get_weather", Args: json.RawMessage(`{"city": "Paris"}`)},
			{ID: "tooluse_2", Name: "get_weather", Args: json.RawMessage(`{"unterminated`)},
		}},
	{Role: provider.RoleTool, CallID: "tooluse_1", Text: "18C"},
	{Role: provider.RoleTool, CallID: "tooluse_2", Text: "invalid arguments", IsError: true},
	{Role: provider.RoleUser, Text: "Thanks <b>"},
	{Role: provider.RoleAssistant}, // an empty turn is left out
}

var tools = []provider.ToolSpec{
	{Name: "get_weather", Description: "Weather by city", Schema: json.RawMessage(`{"type": "object", "properties": {"city": {"type": "string"}}}`)},
	{Name: "now"},
}

// TestConverseRequest: the ConverseStream body the client sends.
func TestConverseRequest(t *testing.T) {
	tests := []struct {
		name      string
		maxTokens int
		req       provider.Request
		want      string
	}{
		{"multi-turn with reasoning, tool calls and merged tool results", 0,
			provider.Request{System: "Be brief.", Messages: conversation, Tools: tools},
			`{"messages":[` +
				`{"role":"user","content":[{"text":"What's the weather in Paris & Rome?"}]},` +
				`{"role":"assistant","content":[{"reasoningContent":{"reasoningText":{"text":"Need both cities.","signature":"sig1"}}},{"reasoningContent":{"redactedContent":"UkVEQUNURUQ="}},` +
				`{"text":"Checking."},{"toolUse":{"toolUseId":"tooluse_1","name":"get_weather","input":{"city":"Paris"}}},{"toolUse":{"toolUseId":"tooluse_2","name":"get_weather","input":{}}}]},` +
				`{"role":"user","content":[{"toolResult":{"toolUseId":"tooluse_1","content":[{"text":"18C"}],"status":"success"}},` +
				`{"toolResult":{"toolUseId":"tooluse_2","content":[{"text":"invalid arguments"}],"status":"error"}},{"text":"Thanks <b>"}]}],` +
				`"system":[{"text":"Be brief."}],` +
				`"toolConfig":{"tools":[{"toolSpec":{"name":"get_weather","description":"Weather by city","inputSchema":{"json":{"type":"object","properties":{"city":{"type":"string"}}}}}},` +
				`{"toolSpec":{"name":"now","inputSchema":{"json":{"type":"object","properties":{}}}}}]}}`},
		{"max tokens, nothing else", 100, provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Text: "hi"}}},
			`{"messages":[{"role":"user","content":[{"text":"hi"}]}],"inferenceConfig":{"maxTokens":100}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := make(chan []byte, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				got <- b
				w.Header().Set("Content-Type", ContentType)
				io.WriteString(w, okReply)
			}))
			defer srv.Close()
			c, err := New(Config{APIKey: "k", BaseURL: srv.URL, Model: "m", MaxTokens: tt.maxTokens})
			if err != nil {
				t.Fatal(err)
			}
			for range c.Stream(context.Background(), tt.req) {
			}
			if body := <-got; string(body) != tt.want {
				t.Errorf("body\n got %s\nwant %s", body, tt.want)
			}
		})
	}
	if _, err := converseBody(provider.Request{Tools: []provider.ToolSpec{{Name: "bad", Schema: json.RawMessage(`{`)}}}, 0); err == nil || !strings.Contains(err.Error(), `tool "bad" has an invalid JSON schema`) {
		t.Errorf("a bad schema: %v", err)
	}
}

// TestInvokeRequest: the invoke body is Anthropic's, without model and
// stream, with anthropic_version and a max_tokens.
func TestInvokeRequest(t *testing.T) {
	body, err := invokeBody(provider.Request{System: "S", Messages: []provider.Message{{Role: provider.RoleUser, Text: "hi"}}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"max_tokens":8192,"system":"S","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"anthropic_version":"bedrock-2023-05-31"}`
	if string(body) != want {
		t.Errorf("body\n got %s\nwant %s", body, want)
	}
}

// TestReadRequest: what a request reads as, for both operations: the
// model and operation from the path, the last user text, what the last
// user message holds, the tools and the tool results it sends back.
func TestReadRequest(t *testing.T) {
	conv, _ := converseBody(provider.Request{Messages: conversation, Tools: tools}, 0)
	// Without the empty assistant turn, which Anthropic's body keeps.
	inv, _ := invokeBody(provider.Request{Messages: conversation[:5], Tools: tools}, 0)
	tests := []struct {
		name, path, body string
		want             Call
	}{
		{"converse", Path(APIConverse, "us.amazon.nova-micro-v1:0"), string(conv), Call{Model: "us.amazon.nova-micro-v1:0", API: APIConverse, Stream: true,
			UserText: "Thanks <b>", HasUser: true, UserHolds: []string{"toolResult", "toolResult", "text"}, Tools: tools,
			Results: []Result{{Name: "get_weather", OK: true, Output: "18C"}, {Name: "get_weather", OK: false, Output: "invalid arguments"}}}},
		{"invoke", Path(APIInvoke, "m"), string(inv), Call{Model: "m", API: APIInvoke, Stream: true,
			UserText: "Thanks <b>", HasUser: true, UserHolds: []string{"tool_result", "tool_result", "text"}, Tools: tools,
			Results: []Result{{Name: "get_weather", OK: true, Output: "18C"}, {Name: "get_weather", OK: false, Output: "invalid arguments"}}}},
		{"converse, whole, JSON results and an image", "/model/m/converse",
			`{"messages":[{"role":"user","content":[{"text":"look"}]},{"role":"assistant","content":[{"toolUse":{"toolUseId":"t","name":"see","input":{}}}]},` +
				`{"role":"user","content":[{"image":{"format":"png","source":{"bytes":"AA=="}}},{"toolResult":{"toolUseId":"t","content":[{"json":{"a":1}},{"text":"x"}]}}]}]}`,
			Call{Model: "m", API: APIConverse, UserText: "look", HasUser: true, UserHolds: []string{"image", "toolResult"},
				Results: []Result{{Name: "see", OK: true, Output: "{\"a\":1}\nx"}}}},
		{"invoke, whole, string content", "/model/m/invoke", `{"messages":[{"role":"user","content":"plain"}]}`,
			Call{Model: "m", API: APIInvoke, UserText: "plain", HasUser: true, UserHolds: []string{"text"}}},
		{"no user message", "/model/m/invoke", `{"messages":[]}`, Call{Model: "m", API: APIInvoke}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadRequest(tt.path, []byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			for i := range got.Tools {
				// Compare schemas as JSON values.
				var a, b any
				json.Unmarshal(got.Tools[i].Schema, &a)
				if len(tt.want.Tools[i].Schema) > 0 {
					json.Unmarshal(tt.want.Tools[i].Schema, &b)
				} else {
					json.Unmarshal([]byte(`{"type":"object","properties":{}}`), &b)
				}
				if !reflect.DeepEqual(a, b) {
					t.Errorf("tool %d schema %s", i, got.Tools[i].Schema)
				}
				got.Tools[i].Schema = tt.want.Tools[i].Schema
			}
			if !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("read\n%+v\nwant\n%+v", *got, tt.want)
			}
		})
	}
	for _, bad := range []struct{ path, body, says string }{
		{"/v1/messages", `{}`, "not a Bedrock runtime model call"},
		{"/model/m/converse-stream", `not json`, "the request body"},
	} {
		if _, err := ReadRequest(bad.path, []byte(bad.body)); err == nil || !strings.Contains(err.Error(), bad.says) {
			t.Errorf("ReadRequest(%q): %v", bad.path, err)
		}
	}
}
