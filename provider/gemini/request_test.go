package gemini_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/gemini"
)

// TestReadRequestRoundTrip: ReadRequest reads back from the body the
// client sends what the request held: the model of the path, the system
// text, the last user text, the tools, and the tool results at its end
// (failed ones marked).
func TestReadRequestRoundTrip(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)
	req := provider.Request{
		System: "sys",
		Messages: []provider.Message{
			{Role: provider.RoleUser, Text: "first"},
			{Role: provider.RoleAssistant, Text: "ok"},
			{Role: provider.RoleUser, Text: "read two files"},
			{Role: provider.RoleAssistant, ToolCalls: []provider.ToolCall{{ID: "c1", Name: "read", Args: json.RawMessage(`{"path":"a"}`)}, {ID: "c2", Name: "read", Args: json.RawMessage(`{"path":"b"}`)}}},
			{Role: provider.RoleTool, CallID: "c1", Text: "contents of a"},
			{Role: provider.RoleTool, CallID: "c2", Text: "no such file", IsError: true},
		},
		Tools: []provider.ToolSpec{{Name: "read", Description: "Read a file", Schema: schema}},
	}
	body, err := gemini.RequestBody(req)
	if err != nil {
		t.Fatal(err)
	}
	got, err := gemini.ReadRequest(gemini.Path("gemini-2.5-pro", true)+"?alt=sse", body)
	if err != nil {
		t.Fatal(err)
	}
	want := gemini.RequestInfo{Model: "gemini-2.5-pro", Stream: true, System: "sys", LastUserText: "read two files",
		HasUser: true, UserHolds: []string{"functionResponse"},
		Tools:   []provider.ToolSpec{{Name: "read", Description: "Read a file", Schema: schema}},
		Results: []gemini.ToolResult{{CallID: "c1", Name: "read", Output: "contents of a"}, {CallID: "c2", Name: "read", Output: "no such file", IsError: true}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

// TestReadRequestShapes: snake_case members, responses of other shapes,
// and bodies that are not the wire's request.
func TestReadRequestShapes(t *testing.T) {
	body := `{"contents":[{"role":"user","parts":[{"text":"hi"},{"inline_data":{"mime_type":"image/png","data":""}}]},` +
		`{"role":"model","parts":[{"function_call":{"name":"f","args":{}}}]},` +
		`{"role":"user","parts":[{"function_response":{"name":"f","response":{"rows":[1,2],"more":false}}},{"function_response":{"name":"g","response":{"result":{"n":1}}}}]}],` +
		`"system_instruction":{"parts":[{"text":"a"},{"text":"b"}]},` +
		`"tools":[{"function_declarations":[{"name":"f","parameters":{"type":"OBJECT","properties":{"type":{"type":"STRING","enum":["A"]}}}}]}]}`
	got, err := gemini.ReadRequest("/v1/models/m:generateContent", []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	want := gemini.RequestInfo{Model: "m", System: "a\nb", LastUserText: "hi", HasUser: true, UserHolds: []string{"functionResponse"},
		Tools:   []provider.ToolSpec{{Name: "f", Schema: json.RawMessage(`{"properties":{"type":{"enum":["A"],"type":"string"}},"type":"object"}`)}},
		Results: []gemini.ToolResult{{Name: "f", Output: `{"rows":[1,2],"more":false}`}, {Name: "g", Output: `{"n":1}`}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	for _, bad := range []struct{ path, body string }{
		{"/v1/chat/completions", `{}`},
		{"/v1/models/m:generateContent", `not json`},
		{"/v1/models/m:generateContent", `{"contents":{"role":"user"}}`},
		{"/v1/models/m:generateContent", `{"contents":[{"parts":[{"text":5}]}]}`},
	} {
		if _, err := gemini.ReadRequest(bad.path, []byte(bad.body)); err == nil {
			t.Errorf("ReadRequest(%s, %s): no error", bad.path, bad.body)
		}
	}
}
