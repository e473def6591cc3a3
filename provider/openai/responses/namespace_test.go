package responses

import (
	"bytes"
	"strings"
	"testing"

	"github.com/openmax/openmax/provider"
)

// A call of a tool inside a namespace tool (how codex offers its dynamic
// tools) carries the namespace on the wire, and the parser keeps it.
func TestNamespacedCallRoundTrips(t *testing.T) {
	e := NewEncoder("resp_ns", "m", 1767225600)
	var body bytes.Buffer
	body.Write(e.Open())
	body.Write(e.Part(provider.ToolCallPart{Call: provider.ToolCall{ID: "call_1", Name: "read_file", Namespace: "openmax", Args: []byte(`{"path":"a"}`)}}))
	body.Write(e.Part(provider.ToolCallPart{Call: provider.ToolCall{ID: "call_2", Name: "plain", Args: []byte(`{}`)}}))
	body.Write(e.Part(provider.Finish{Reason: "completed"}))
	body.Write(e.Close())
	if !strings.Contains(body.String(), `"namespace":"openmax"`) {
		t.Fatalf("the function_call item does not name its namespace:\n%s", body.String())
	}
	var calls []provider.ToolCall
	for p := range ParseStream(&body) {
		if c, ok := p.(provider.ToolCallPart); ok {
			calls = append(calls, c.Call)
		}
	}
	if len(calls) != 2 || calls[0].Namespace != "openmax" || calls[0].Name != "read_file" || calls[1].Namespace != "" {
		t.Fatalf("calls = %+v, want read_file in namespace openmax, then plain with none", calls)
	}
}
