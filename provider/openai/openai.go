// Package openai is the OpenAI Chat Completions streaming client, and so the
// client of every server that speaks that wire (vLLM, llama.cpp, Ollama,
// DeepSeek, OpenRouter, LiteLLM, ...). One Stream call is one attempt:
// retries belong to provider/retry, which decides from the failure types in
// package provider alone, so every failure is classified here as an
// HTTPError, TransportError, StreamError or an ErrIncomplete stream.
package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"strings"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/httpx"
)

// DefaultBaseURL is the OpenAI API root.
const DefaultBaseURL = "https://api.openai.com/v1"

// Config configures a Client.
type Config struct {
	// APIKey is sent as a bearer token. Required.
	APIKey string
	// BaseURL is the API root; requests go to BaseURL + Path.
	// Empty means DefaultBaseURL.
	BaseURL string
	// Model is the model name sent when the request names none. Required.
	Model string
	// HTTP sends the requests; nil means a zero httpx.Client.
	HTTP *httpx.Client
}

// String describes the configuration without its key.
func (c Config) String() string {
	key := "(none)"
	if c.APIKey != "" {
		key = "(set)"
	}
	return fmt.Sprintf("openai.Config{BaseURL: %q, Model: %q, APIKey: %s}", c.BaseURL, c.Model, key)
}

// GoString is String, so %#v does not print the key either.
func (c Config) GoString() string { return c.String() }

// Client streams Chat Completions replies. It is safe for concurrent use.
type Client struct {
	key   string
	url   string
	model string
	http  *httpx.Client
}

// String describes the client without its key.
func (c *Client) String() string {
	return fmt.Sprintf("openai.Client{URL: %q, Model: %q}", c.url, c.model)
}

// GoString is String.
func (c *Client) GoString() string { return c.String() }

// New checks cfg and returns a client. A missing key is an error wrapping
// provider.ErrMissingKey.
func New(cfg Config) (*Client, error) {
	ep, err := cfg.Endpoint(Path)
	if err != nil {
		return nil, fmt.Errorf("openai: %w", err)
	}
	return &Client{key: ep.Key, url: ep.URL, model: ep.Model, http: ep.HTTP}, nil
}

// Endpoint is a checked Config for one endpoint of the API.
type Endpoint struct {
	Key   string        // the API key, trimmed
	URL   string        // the endpoint's URL: the base URL and the path
	Model string        // the model sent when a request names none
	HTTP  *httpx.Client // never nil
}

// Endpoint checks c for the endpoint at path below the API root (Path, or
// the Responses API's): the key and the model are required (a missing key
// is provider.ErrMissingKey), an empty base URL is DefaultBaseURL and a nil
// HTTP a zero httpx.Client. The clients of both OpenAI wires are built
// from it.
func (c Config) Endpoint(path string) (Endpoint, error) {
	key := strings.TrimSpace(c.APIKey)
	if key == "" {
		return Endpoint{}, provider.ErrMissingKey
	}
	model := strings.TrimSpace(c.Model)
	if model == "" {
		return Endpoint{}, errors.New("no model given")
	}
	base := strings.TrimSpace(c.BaseURL)
	if base == "" {
		base = DefaultBaseURL
	}
	hc := c.HTTP
	if hc == nil {
		hc = &httpx.Client{}
	}
	return Endpoint{Key: key, URL: strings.TrimRight(base, "/") + path, Model: model, HTTP: hc}, nil
}

// Stream sends req and yields the reply as it arrives: ThinkingDelta and
// TextDelta as they stream, then, once the reply completed, the tool calls
// in index order, Usage and Finish. A failure ends the sequence with one
// Error part; a cancelled ctx ends it with nothing more.
func (c *Client) Stream(ctx context.Context, req provider.Request) iter.Seq[provider.Part] {
	return func(yield func(provider.Part) bool) {
		fail := func(err error) { yield(provider.Error{Err: c.scrub(err)}) }
		body, err := c.requestBody(req)
		if err != nil {
			fail(err)
			return
		}
		header := http.Header{"Authorization": {"Bearer " + c.key}}
		resp, err := c.http.Post(ctx, c.url, header, body)
		c.http.Reply(ctx, resp, err, "openai", readWhole, readStream, c.scrub, yield)
	}
}

// Wire shapes of the request.

type chatRequest struct {
	Model         string        `json:"model"`
	Messages      []chatMessage `json:"messages"`
	Tools         []chatTool    `json:"tools,omitempty"`
	Stream        bool          `json:"stream"`
	StreamOptions streamOptions `json:"stream_options"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type chatMessage struct {
	Role string `json:"role"`
	// Content is null only for an assistant message with tool calls and
	// no text.
	Content    *string        `json:"content"`
	ToolCalls  []chatToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

type chatToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function chatFunction `json:"function"`
}

type chatFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type chatTool struct {
	Type     string       `json:"type"`
	Function chatToolSpec `json:"function"`
}

type chatToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

// emptySchema stands in for a tool without a schema: OpenAI wants an
// object schema.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// requestBody renders req as a streaming Chat Completions request.
func (c *Client) requestBody(req provider.Request) ([]byte, error) {
	model := strings.TrimSpace(req.Model)
	if model == "" {
		model = c.model
	}
	out := chatRequest{
		Model:         model,
		Messages:      make([]chatMessage, 0, len(req.Messages)+1),
		Stream:        true,
		StreamOptions: streamOptions{IncludeUsage: true},
	}
	if req.System != "" {
		out.Messages = append(out.Messages, chatMessage{Role: "system", Content: ptr(req.System)})
	}
	for i, m := range req.Messages {
		switch m.Role {
		case provider.RoleUser:
			out.Messages = append(out.Messages, chatMessage{Role: "user", Content: ptr(m.Text)})
		case provider.RoleAssistant:
			am := chatMessage{Role: "assistant"}
			for _, tc := range m.ToolCalls {
				args := string(tc.Args)
				if strings.TrimSpace(args) == "" {
					args = "{}"
				}
				am.ToolCalls = append(am.ToolCalls, chatToolCall{
					ID: tc.ID, Type: "function",
					Function: chatFunction{Name: tc.Name, Arguments: args},
				})
			}
			// null content is only valid beside tool calls; a bare empty
			// assistant turn goes as "".
			if m.Text != "" || len(am.ToolCalls) == 0 {
				am.Content = ptr(m.Text)
			}
			out.Messages = append(out.Messages, am)
		case provider.RoleTool:
			out.Messages = append(out.Messages, chatMessage{Role: "tool", ToolCallID: m.CallID, Content: ptr(m.Text)})
		default:
			return nil, fmt.Errorf("openai: message %d has unknown role %q", i, m.Role)
		}
	}
	for _, t := range req.Tools {
		params := t.Schema
		if len(bytes.TrimSpace(params)) == 0 || bytes.Equal(bytes.TrimSpace(params), []byte("null")) {
			params = emptySchema
		}
		out.Tools = append(out.Tools, chatTool{
			Type:     "function",
			Function: chatToolSpec{Name: t.Name, Description: t.Description, Parameters: params},
		})
	}
	body, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("openai: encoding request: %w", err)
	}
	return body, nil
}

func ptr(s string) *string { return &s }

// scrub removes the API key from an error's text (a compatible server may
// echo it in an error body).
func (c *Client) scrub(err error) error { return provider.Redact(err, c.key) }
