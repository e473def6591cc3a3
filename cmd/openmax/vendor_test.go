package main

import (
	"encoding/json"
	"testing"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/anthropic"
	fakeprovider "github.com/openmax/openmax/provider/fake"
	"github.com/openmax/openmax/provider/openai"
	"github.com/openmax/openmax/provider/openai/responses"
	"github.com/openmax/openmax/provider/script"
)

// vendorWire is one wire of the fake vendor and the flags that point
// openmax at it.
type vendorWire struct {
	name  string // openai.WireName, responses.WireName or anthropic.WireName
	flags func(base string) []string
}

// vendorWires are the three model wires openmax speaks over HTTP.
var vendorWires = []vendorWire{
	{openai.WireName, func(base string) []string {
		return []string{"--provider", "openai", "--base-url", base + "/v1"}
	}},
	{responses.WireName, func(base string) []string {
		return []string{"--provider", "openai", "--api", "responses", "--base-url", base + "/v1"}
	}},
	{anthropic.WireName, func(base string) []string {
		return []string{"--provider", "anthropic", "--base-url", base}
	}},
}

// startVendor serves scenario (a script.yaml) over loopback HTTP on every
// wire, keeping the requests it receives; it closes with the test.
func startVendor(t *testing.T, scenario string) (*fakeprovider.Server, string) {
	t.Helper()
	sc, err := script.Parse([]byte(scenario))
	if err != nil {
		t.Fatal(err)
	}
	srv := fakeprovider.New(sc, fakeprovider.Options{})
	base, err := srv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv, base
}

// sentRequest is what one model request carried, read back from the body
// the vendor received: the system prompt in the wire's own place for it,
// the messages' text and the tool specs (each schema as the body carries
// it).
type sentRequest struct {
	System   string
	Messages []provider.Message
	Tools    []provider.ToolSpec
}

// decodeSent reads a request body of wire. It fails the test on anything
// it does not know how to count (tool calls, images), so a request it
// reads is read whole.
func decodeSent(t *testing.T, wire string, body []byte) sentRequest {
	t.Helper()
	type text struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	var b struct {
		System       *string `json:"system"`       // anthropic
		Instructions *string `json:"instructions"` // responses
		Messages     []struct {
			Role      string          `json:"role"`
			Content   json.RawMessage `json:"content"`
			ToolCalls json.RawMessage `json:"tool_calls"`
		} `json:"messages"` // chat, anthropic
		Input []struct {
			Type    string `json:"type"`
			Role    string `json:"role"`
			Content []text `json:"content"`
		} `json:"input"` // responses
		Tools []struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`   // responses
			InputSchema json.RawMessage `json:"input_schema"` // anthropic
			Function    *struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				Parameters  json.RawMessage `json:"parameters"`
			} `json:"function"` // chat
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatalf("%s request: %v\n%s", wire, err, body)
	}
	var r sentRequest
	switch wire {
	case openai.WireName:
		for _, m := range b.Messages {
			var s string
			if len(m.ToolCalls) > 0 || json.Unmarshal(m.Content, &s) != nil {
				t.Fatalf("chat message %s: not text only", m.Content)
			}
			if m.Role == "system" {
				r.System = s
				continue
			}
			r.Messages = append(r.Messages, provider.Message{Role: provider.Role(m.Role), Text: s})
		}
	case anthropic.WireName:
		if b.System != nil {
			r.System = *b.System
		}
		for _, m := range b.Messages {
			var blocks []text
			if err := json.Unmarshal(m.Content, &blocks); err != nil {
				t.Fatalf("anthropic message %s: %v", m.Content, err)
			}
			for _, c := range blocks {
				if c.Type != "text" {
					t.Fatalf("anthropic message %s: a %s block", m.Content, c.Type)
				}
				r.Messages = append(r.Messages, provider.Message{Role: provider.Role(m.Role), Text: c.Text})
			}
		}
	case responses.WireName:
		if b.Instructions != nil {
			r.System = *b.Instructions
		}
		for _, it := range b.Input {
			if it.Type != "message" {
				t.Fatalf("responses input: a %s item", it.Type)
			}
			for _, c := range it.Content {
				r.Messages = append(r.Messages, provider.Message{Role: provider.Role(it.Role), Text: c.Text})
			}
		}
	default:
		t.Fatalf("unknown wire %q", wire)
	}
	for _, tl := range b.Tools {
		spec := provider.ToolSpec{Name: tl.Name, Description: tl.Description, Schema: tl.Parameters}
		switch {
		case tl.Function != nil:
			spec = provider.ToolSpec{Name: tl.Function.Name, Description: tl.Function.Description, Schema: tl.Function.Parameters}
		case tl.InputSchema != nil:
			spec.Schema = tl.InputSchema
		}
		r.Tools = append(r.Tools, spec)
	}
	return r
}

// sentRequests decodes every request srv received.
func sentRequests(t *testing.T, srv *fakeprovider.Server) []sentRequest {
	t.Helper()
	var out []sentRequest
	for _, r := range srv.Requests() {
		out = append(out, decodeSent(t, r.Wire, r.Body))
	}
	return out
}
