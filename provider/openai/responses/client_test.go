package responses_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/openai/responses"
)

func TestNew(t *testing.T) {
	tests := []struct {
		name    string
		cfg     responses.Config
		wantErr func(error) bool
		wantURL string
	}{
		{"blank key", responses.Config{APIKey: "  ", Model: "m"}, func(err error) bool { return errors.Is(err, provider.ErrMissingKey) }, ""},
		{"missing model", responses.Config{APIKey: "k"}, func(err error) bool { return err != nil && !errors.Is(err, provider.ErrMissingKey) }, ""},
		{"default base URL", responses.Config{APIKey: "k", Model: "m"}, nil, "https://api.openai.com/v1/responses"},
		{"trailing slash", responses.Config{APIKey: "k", Model: "m", BaseURL: "http://127.0.0.1:8000/v1/"}, nil, "http://127.0.0.1:8000/v1/responses"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := responses.New(tt.cfg)
			if tt.wantErr != nil {
				if err == nil || !tt.wantErr(err) {
					t.Fatalf("New error = %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			if s := c.String(); !strings.Contains(s, fmt.Sprintf("%q", tt.wantURL)) {
				t.Fatalf("client %s, want URL %q", s, tt.wantURL)
			}
		})
	}
}

// TestConfigHidesKey: a Config printed any way never shows its key.
func TestConfigHidesKey(t *testing.T) {
	cfg := responses.Config{APIKey: "sk-secret-config-key", Model: "m"}
	for _, s := range []string{fmt.Sprint(cfg), fmt.Sprintf("%v", cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg)} {
		if strings.Contains(s, cfg.APIKey) || !strings.Contains(s, "(set)") {
			t.Errorf("printed config %s", s)
		}
	}
}

// conversation is a request with every kind of message: a system prompt,
// reasoning sent back with its encrypted content, parallel calls and their
// results, a call with no arguments, an empty assistant turn, and tools
// with and without a schema.
var conversation = provider.Request{
	System: "You are terse.",
	Messages: []provider.Message{
		{Role: provider.RoleUser, Text: "What is 2+3 and 2*3?"},
		{Role: provider.RoleAssistant, Text: "Let me compute.",
			Thinking: []provider.Thinking{
				{Text: "**Plan**\n\nuse both tools", Signature: "gAAAA-encrypted-1"},
				{Text: "unsigned reasoning is not sent back"},
				{Signature: "gAAAA-encrypted-2"},
			},
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

// TestRequestBody: the request the client posts, compared with
// testdata/request.json (-update rewrites it; the flag is the encoder
// test's, in the same test binary).
func TestRequestBody(t *testing.T) {
	got := make(chan []byte, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- b
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, sseOf(t, created(), textDelta(0, "ok"), completed("")))
	}))
	defer srv.Close()
	for range newClient(t, srv.URL).Stream(context.Background(), conversation) {
	}
	body := <-got
	golden := filepath.Join("testdata", "request.json")
	var indented bytes.Buffer
	if err := json.Indent(&indented, body, "", "  "); err != nil {
		t.Fatalf("request body is not JSON: %v\n%s", err, body)
	}
	indented.WriteByte('\n')
	if f := flag.Lookup("update"); f != nil && f.Value.String() == "true" {
		if err := os.WriteFile(golden, indented.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (-update writes it)", err)
	}
	if !bytes.Equal(indented.Bytes(), want) {
		t.Errorf("request body differs from %s:\n%s", golden, indented.Bytes())
	}

	// The shape, asserted on its own so the golden file cannot drift
	// into something wrong.
	var req struct {
		Model             string            `json:"model"`
		Instructions      string            `json:"instructions"`
		Input             []json.RawMessage `json:"input"`
		Tools             []map[string]any  `json:"tools"`
		ToolChoice        string            `json:"tool_choice"`
		ParallelToolCalls *bool             `json:"parallel_tool_calls"`
		Stream            bool              `json:"stream"`
		Store             *bool             `json:"store"`
		Include           []string          `json:"include"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	if req.Model != "gpt-test" || req.Instructions != "You are terse." || !req.Stream || req.Store == nil || *req.Store ||
		len(req.Include) != 1 || req.Include[0] != "reasoning.encrypted_content" || req.ToolChoice != "auto" ||
		req.ParallelToolCalls == nil || !*req.ParallelToolCalls {
		t.Errorf("request fields: %s", body)
	}
	var kinds []string
	for _, raw := range req.Input {
		var it struct {
			Type, Role, CallID string
			EncryptedContent   *string `json:"encrypted_content"`
			ID                 *string `json:"id"`
		}
		json.Unmarshal(raw, &it)
		if it.ID != nil {
			t.Errorf("an input item carries an id (store is false): %s", raw)
		}
		k := it.Type
		if it.Role != "" {
			k += ":" + it.Role
		}
		if it.EncryptedContent != nil {
			k += ":" + *it.EncryptedContent
		}
		kinds = append(kinds, k)
	}
	want2 := "message:user reasoning:gAAAA-encrypted-1 reasoning:gAAAA-encrypted-2 message:assistant function_call function_call " +
		"function_call_output function_call_output function_call function_call_output message:assistant message:assistant message:user"
	if strings.Join(kinds, " ") != want2 {
		t.Errorf("input items\n got %s\nwant %s", strings.Join(kinds, " "), want2)
	}
	if len(req.Tools) != 2 || req.Tools[0]["strict"] != false || req.Tools[1]["type"] != "function" {
		t.Errorf("tools %v", req.Tools)
	}
	if p, _ := json.Marshal(req.Tools[1]["parameters"]); string(p) != `{"properties":{},"type":"object"}` {
		t.Errorf("a tool without a schema has parameters %s", p)
	}
}

// TestRequestWithoutTools: no tools, no tool_choice or
// parallel_tool_calls; a request's own model wins over the client's.
func TestRequestWithoutTools(t *testing.T) {
	body, err := responses.RequestBody(provider.Request{Model: "o3", Messages: []provider.Message{{Role: provider.RoleUser, Text: "hi"}}}, "gpt-test")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"tools", "tool_choice", "parallel_tool_calls", "instructions"} {
		if _, ok := m[k]; ok {
			t.Errorf("%s present without tools or a system prompt: %s", k, body)
		}
	}
	if string(m["model"]) != `"o3"` {
		t.Errorf("model %s", m["model"])
	}
	if _, err := responses.RequestBody(provider.Request{Messages: []provider.Message{{Role: "system", Text: "x"}}}, "m"); err == nil {
		t.Errorf("an unknown role was encoded")
	}
}

// TestReasoningRoundTrip: reasoning streamed in one reply goes back, with
// the final encrypted content, in the next request, as the engine keeps
// it (a signature closes a block).
func TestReasoningRoundTrip(t *testing.T) {
	stream := sseOf(t, created(), reasoningAdded(0, "ADDED"), summaryDelta(0, 0, "think"), summaryDelta(0, 1, "more"),
		reasoningDone(0, "FINAL", "think", "more"), textDelta(1, "Answer"), completed(""))
	var blocks []provider.Thinking
	var text string
	for p := range responses.ParseStream(strings.NewReader(stream)) {
		switch p := p.(type) {
		case provider.ThinkingDelta:
			if n := len(blocks); n == 0 || blocks[n-1].Signature != "" {
				blocks = append(blocks, provider.Thinking{})
			}
			blocks[len(blocks)-1].Text += p.Text
			blocks[len(blocks)-1].Signature = p.Signature
		case provider.TextDelta:
			text += p.Text
		}
	}
	body, err := responses.RequestBody(provider.Request{Messages: []provider.Message{
		{Role: provider.RoleUser, Text: "q"},
		{Role: provider.RoleAssistant, Text: text, Thinking: blocks},
		{Role: provider.RoleUser, Text: "next"},
	}}, "m")
	if err != nil {
		t.Fatal(err)
	}
	var req responses.Request
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	r := req.Input[1]
	if r.Type != "reasoning" || r.EncryptedContent == nil || *r.EncryptedContent != "FINAL" ||
		len(r.Summary) != 1 || r.Summary[0].Type != "summary_text" || *r.Summary[0].Text != "think\n\nmore" {
		t.Fatalf("reasoning item sent back: %+v", r)
	}
	if m := req.Input[2]; m.Type != "message" || m.Role != "assistant" || *m.Content[0].Text != "Answer" || m.Content[0].Type != "output_text" {
		t.Fatalf("assistant message: %+v", m)
	}
}

// TestEncryptedReasoningRefused: a model that does not reason refuses a
// request asking for encrypted reasoning (OpenAI answers 400 "Encrypted
// content is not supported with this model."); the client sends the same
// request without the include at once, and asks no more. Any other 400
// is the reply's failure, from one request.
func TestEncryptedReasoningRefused(t *testing.T) {
	const refusal = `{"error":{"message":"Encrypted content is not supported with this model.","type":"invalid_request_error","param":"include","code":null}}`
	var mu sync.Mutex
	var bodies []string
	requests := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), bodies...)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
		switch {
		case strings.Contains(string(b), `"include"`):
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(400)
			io.WriteString(w, refusal)
		case strings.Contains(string(b), "bad"):
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(400)
			io.WriteString(w, `{"error":{"message":"Invalid 'input'.","type":"invalid_request_error","param":"input","code":null}}`)
		default:
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, sseOf(t, created(), textDelta(0, "plain"), completed("")))
		}
	}))
	defer srv.Close()
	c := newClient(t, srv.URL)
	req := provider.Request{Model: "gpt-4o-mini", Messages: []provider.Message{{Role: provider.RoleUser, Text: "hi"}}}
	for turn := 1; turn <= 2; turn++ {
		got := parts(c.Stream(context.Background(), req))
		if len(got) != 2 || got[0] != (provider.TextDelta{Text: "plain"}) {
			t.Fatalf("turn %d: parts %s", turn, show(got))
		}
	}
	sent := requests()
	if len(sent) != 3 || !strings.Contains(sent[0], `"include":["reasoning.encrypted_content"]`) ||
		strings.Contains(sent[1], `"include"`) || strings.Contains(sent[2], `"include"`) {
		t.Fatalf("requests:\n%s", strings.Join(sent, "\n"))
	}

	got := parts(c.Stream(context.Background(), provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Text: "bad"}}}))
	var he *provider.HTTPError
	if n := len(requests()); !errors.As(errOf(got), &he) || he.Status != 400 || n != 4 {
		t.Fatalf("another 400: %s after %d requests, want 4", show(got), n)
	}
}
