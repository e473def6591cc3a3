// Package anthropic is the client of Anthropic's Messages API in streaming
// mode. One Stream call is one HTTP attempt: retries belong to the
// provider/retry decorator, which decides from the failure types this
// package reports (provider.HTTPError, provider.TransportError,
// provider.StreamError, and provider.ErrIncomplete for a stream that died).
package anthropic

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
	"github.com/openmax/openmax/provider/internal/wirejson"
)

// Defaults of Config.
const (
	DefaultBaseURL   = "https://api.anthropic.com"
	DefaultMaxTokens = 8192
	// APIVersion is the anthropic-version header sent with every request.
	APIVersion = "2023-06-01"
)

// Config configures a Client.
type Config struct {
	APIKey    string
	BaseURL   string // default DefaultBaseURL; requests go to BaseURL + Path
	Model     string // required; a Request's own Model takes precedence
	MaxTokens int    // default DefaultMaxTokens
	HTTP      *httpx.Client
}

// String describes the configuration without its key.
func (c Config) String() string {
	return fmt.Sprintf("anthropic.Config{BaseURL: %q, Model: %q, MaxTokens: %d, APIKey: %s}", c.BaseURL, c.Model, c.MaxTokens, redactedKey(c.APIKey))
}

// GoString is String, so %#v does not print the key either.
func (c Config) GoString() string { return c.String() }

func redactedKey(k string) string {
	if k == "" {
		return "(none)"
	}
	return "(set)"
}

// Client streams replies from the Messages API. It is safe for concurrent
// use.
type Client struct {
	key       string
	url       string
	model     string
	maxTokens int
	http      *httpx.Client
}

// String describes the client without its key.
func (c *Client) String() string {
	return fmt.Sprintf("anthropic.Client{URL: %q, Model: %q}", c.url, c.model)
}

// GoString is String.
func (c *Client) GoString() string { return c.String() }

// New checks cfg and fills in its defaults. An empty APIKey is an error
// wrapping provider.ErrMissingKey.
func New(cfg Config) (*Client, error) {
	if cfg.APIKey == "" {
		return nil, fmt.Errorf("anthropic: %w (set the Anthropic API key)", provider.ErrMissingKey)
	}
	if cfg.Model == "" {
		return nil, errors.New("anthropic: no model configured")
	}
	base := cfg.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	base = strings.TrimRight(base, "/")
	maxTokens := cfg.MaxTokens
	if maxTokens <= 0 {
		maxTokens = DefaultMaxTokens
	}
	hc := cfg.HTTP
	if hc == nil {
		hc = &httpx.Client{}
	}
	return &Client{key: cfg.APIKey, url: base + Path, model: cfg.Model, maxTokens: maxTokens, http: hc}, nil
}

// Stream sends req and yields the reply as it streams: TextDelta and
// ThinkingDelta as they arrive, then, on message_stop only, the tool calls
// in block order, Usage and Finish. A failure ends the sequence with one
// Error part; a cancelled ctx ends it with none.
func (c *Client) Stream(ctx context.Context, req provider.Request) iter.Seq[provider.Part] {
	return func(yield func(provider.Part) bool) {
		body, err := c.body(req)
		if err != nil {
			yield(provider.Error{Err: c.scrub(err)})
			return
		}
		h := http.Header{}
		h.Set("x-api-key", c.key)
		h.Set("anthropic-version", APIVersion)
		resp, err := c.http.Post(ctx, c.url, h, body)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			yield(provider.Error{Err: c.scrub(err)})
			return
		}
		defer resp.Body.Close()
		for p := range parse(ctx, resp, c.http.MaxReplyBytes) {
			if e, ok := p.(provider.Error); ok {
				p = provider.Error{Err: c.scrub(e.Err)}
			}
			if !yield(p) {
				return
			}
		}
	}
}

// Wire shapes of the request.

type wireRequest struct {
	Model     string        `json:"model,omitempty"`
	MaxTokens int           `json:"max_tokens"`
	System    string        `json:"system,omitempty"`
	Messages  []wireMessage `json:"messages"`
	Tools     []wireTool    `json:"tools,omitempty"`
	Stream    bool          `json:"stream,omitempty"`
	Version   string        `json:"anthropic_version,omitempty"`
}

type wireMessage struct {
	Role    string `json:"role"`
	Content []any  `json:"content"`
}

type wireTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type textBlock struct {
	Type string `json:"type"` // text
	Text string `json:"text"`
}

type thinkingBlock struct {
	Type      string `json:"type"` // thinking
	Thinking  string `json:"thinking"`
	Signature string `json:"signature"`
}

type redactedThinkingBlock struct {
	Type string `json:"type"` // redacted_thinking
	Data string `json:"data"`
}

type toolUseBlock struct {
	Type  string          `json:"type"` // tool_use
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

type toolResultBlock struct {
	Type      string `json:"type"` // tool_result
	ToolUseID string `json:"tool_use_id"`
	Content   string `json:"content"`
	IsError   bool   `json:"is_error"`
}

// redactedPrefix marks a provider.Thinking that carries a redacted_thinking
// block: its Signature is this prefix followed by the block's opaque data,
// and its Text is empty. Real signatures are base64 and never contain ':'.
const redactedPrefix = "anthropic-redacted-thinking:"

// emptySchema stands in for a tool that declared no schema; the API
// requires input_schema.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// body encodes req as a streaming Messages request.
func (c *Client) body(req provider.Request) ([]byte, error) {
	model := req.Model
	if model == "" {
		model = c.model
	}
	return EncodeRequest(req, RequestOptions{Model: model, MaxTokens: c.maxTokens, Stream: true})
}

// RequestOptions are the fields of a Messages request body that do not
// come from the conversation.
type RequestOptions struct {
	// Model is the model field; empty leaves it out (Bedrock names the
	// model in the URL and refuses the field).
	Model     string
	MaxTokens int
	// Stream sets stream:true; false leaves the field out.
	Stream bool
	// Version is the anthropic_version field, written last; empty leaves
	// it out (the API takes the version as a header; Bedrock wants it
	// here, as bedrock-2023-05-31).
	Version string
}

// EncodeRequest writes req as a Messages request body: the system prompt,
// the transcript as alternating turns (see messages), and the tools, with
// the fields of o. A tool whose schema is not JSON is an error.
func EncodeRequest(req provider.Request, o RequestOptions) ([]byte, error) {
	w := wireRequest{Model: o.Model, MaxTokens: o.MaxTokens, System: req.System, Messages: messages(req.Messages), Stream: o.Stream, Version: o.Version}
	for _, t := range req.Tools {
		schema := t.Schema
		if len(bytes.TrimSpace(schema)) == 0 {
			schema = emptySchema
		} else if !json.Valid(schema) {
			return nil, fmt.Errorf("anthropic: tool %q has an invalid JSON schema", t.Name)
		}
		w.Tools = append(w.Tools, wireTool{Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(w); err != nil {
		return nil, fmt.Errorf("anthropic: encoding the request: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// messages maps the transcript onto Anthropic's alternating turns. Tool
// results become tool_result blocks of a user turn, and consecutive
// user-side messages (tool results, then possibly a user prompt) share one
// user turn, with the tool results first as the API requires.
func messages(in []provider.Message) []wireMessage {
	var out []wireMessage
	for _, m := range in {
		var role string
		var blocks []any
		switch m.Role {
		case provider.RoleAssistant:
			role = "assistant"
			blocks = assistantBlocks(m)
		case provider.RoleTool:
			role = "user"
			blocks = []any{toolResultBlock{Type: "tool_result", ToolUseID: m.CallID, Content: m.Text, IsError: m.IsError}}
		default:
			role = "user"
			blocks = []any{textBlock{Type: "text", Text: m.Text}}
		}
		if role == "user" && len(out) > 0 && out[len(out)-1].Role == "user" {
			last := &out[len(out)-1]
			last.Content = append(last.Content, blocks...)
			continue
		}
		out = append(out, wireMessage{Role: role, Content: blocks})
	}
	if out == nil {
		out = []wireMessage{}
	}
	return out
}

// assistantBlocks is an assistant turn: its signed reasoning first, then
// its text, then its tool calls.
func assistantBlocks(m provider.Message) []any {
	blocks := []any{}
	for _, t := range m.Thinking {
		switch {
		case t.Text == "" && strings.HasPrefix(t.Signature, redactedPrefix):
			blocks = append(blocks, redactedThinkingBlock{Type: "redacted_thinking", Data: strings.TrimPrefix(t.Signature, redactedPrefix)})
		case t.Signature == "" || strings.HasPrefix(t.Signature, redactedPrefix):
			// Unsigned reasoning (another vendor's, or a block cut short)
			// cannot be verified and would be refused: leave it out.
		default:
			blocks = append(blocks, thinkingBlock{Type: "thinking", Thinking: t.Text, Signature: t.Signature})
		}
	}
	if m.Text != "" {
		blocks = append(blocks, textBlock{Type: "text", Text: m.Text})
	}
	for _, tc := range m.ToolCalls {
		blocks = append(blocks, toolUseBlock{Type: "tool_use", ID: tc.ID, Name: tc.Name, Input: wirejson.Object(tc.Args)})
	}
	return blocks
}

// scrub removes the API key from an error's text, keeping its type so the
// retry policy still classifies it.
func (c *Client) scrub(err error) error { return provider.Redact(err, c.key) }
