package responses

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/httpx"
	"github.com/openmax/openmax/provider/openai"
)

// DefaultBaseURL is the OpenAI API root.
const DefaultBaseURL = openai.DefaultBaseURL

// IncludeEncryptedReasoning is the include entry that makes the server
// return a reasoning item's encrypted content, so the item can be sent
// back on the next request of a conversation that is not stored.
const IncludeEncryptedReasoning = "reasoning.encrypted_content"

// Config configures a Client: the same settings as the Chat Completions
// client's (BaseURL is the API root; requests go to BaseURL + Path).
type Config = openai.Config

// Client streams Responses API replies. It is safe for concurrent use.
type Client struct {
	key   string
	url   string
	model string
	http  *httpx.Client
	// plain is set once the server refused the request for asking for
	// encrypted reasoning (a model that does not reason): from then on
	// the client no longer asks.
	plain atomic.Bool
}

// String describes the client without its key.
func (c *Client) String() string {
	return fmt.Sprintf("responses.Client{URL: %q, Model: %q}", c.url, c.model)
}

// GoString is String.
func (c *Client) GoString() string { return c.String() }

// New checks cfg and returns a client. A missing key is an error wrapping
// provider.ErrMissingKey.
func New(cfg Config) (*Client, error) {
	ep, err := cfg.Endpoint(Path)
	if err != nil {
		return nil, fmt.Errorf("responses: %w", err)
	}
	return &Client{key: ep.Key, url: ep.URL, model: ep.Model, http: ep.HTTP}, nil
}

// Stream sends req and yields the reply as it arrives: ThinkingDelta and
// TextDelta as they stream (a reasoning item's encrypted content as a
// ThinkingDelta signature when the item is done), then, once
// response.completed arrived, the function calls in output order, Usage
// and Finish. A failure ends the sequence with one Error part; a cancelled
// ctx ends it with nothing more.
func (c *Client) Stream(ctx context.Context, req provider.Request) iter.Seq[provider.Part] {
	return func(yield func(provider.Part) bool) {
		fail := func(err error) { yield(provider.Error{Err: c.scrub(err)}) }
		include := !c.plain.Load()
		body, err := buildRequest(req, c.model, include)
		if err != nil {
			fail(err)
			return
		}
		if ctx.Err() != nil {
			return
		}
		header := http.Header{"Authorization": {"Bearer " + c.key}}
		resp, err := c.http.Post(ctx, c.url, header, body)
		if include && encryptedRefused(err) {
			// Models that do not reason refuse the include outright (400
			// "Encrypted content is not supported with this model"): the
			// same request without it is the one that can succeed, and
			// this client will not ask again.
			c.plain.Store(true)
			if body, err = buildRequest(req, c.model, false); err != nil {
				fail(err)
				return
			}
			resp, err = c.http.Post(ctx, c.url, header, body)
		}
		c.http.Reply(ctx, resp, err, "responses", readWhole, readStream, c.scrub, yield)
	}
}

// emptySchema stands in for a tool without a schema: the API wants an
// object schema.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// RequestBody renders req as the streaming request Client.Stream sends,
// with model standing in when req names none: the conversation is not
// stored on the server (store false), so every request carries it whole,
// reasoning items included with their encrypted content.
func RequestBody(req provider.Request, model string) ([]byte, error) {
	return buildRequest(req, model, true)
}

// encryptedRefused reports the API's refusal of a request asking for
// encrypted reasoning from a model that has none.
func encryptedRefused(err error) bool {
	var he *provider.HTTPError
	return errors.As(err, &he) && he.Status == http.StatusBadRequest &&
		strings.Contains(strings.ToLower(he.Message), "encrypted content is not supported")
}

// buildRequest renders req; include asks for the reasoning's encrypted
// content.
func buildRequest(req provider.Request, model string, include bool) ([]byte, error) {
	if m := strings.TrimSpace(req.Model); m != "" {
		model = m
	}
	no := false
	out := Request{
		Model:        model,
		Instructions: req.System,
		Input:        make([]Item, 0, len(req.Messages)),
		Stream:       true,
		Store:        &no,
	}
	if include {
		out.Include = []string{IncludeEncryptedReasoning}
	}
	for i, m := range req.Messages {
		switch m.Role {
		case provider.RoleUser:
			out.Input = append(out.Input, Item{Type: "message", Role: "user",
				Content: []Content{{Type: "input_text", Text: strRef(m.Text)}}})
		case provider.RoleAssistant:
			// Reasoning goes back first, as it came: only a block with
			// its encrypted content can be sent back.
			for _, th := range m.Thinking {
				if th.Signature == "" {
					continue
				}
				summary := []Content{}
				if th.Text != "" {
					summary = append(summary, Content{Type: "summary_text", Text: strRef(th.Text)})
				}
				out.Input = append(out.Input, Item{Type: "reasoning", Summary: summary, EncryptedContent: strRef(th.Signature)})
			}
			if m.Text != "" || len(m.ToolCalls) == 0 {
				out.Input = append(out.Input, Item{Type: "message", Role: "assistant", Phase: m.Phase,
					Content: []Content{{Type: "output_text", Text: strRef(m.Text)}}})
			}
			for _, tc := range m.ToolCalls {
				args := string(tc.Args)
				if strings.TrimSpace(args) == "" {
					args = "{}"
				}
				out.Input = append(out.Input, Item{Type: "function_call", CallID: tc.ID, Name: tc.Name, Arguments: strRef(args)})
			}
		case provider.RoleTool:
			out.Input = append(out.Input, Item{Type: "function_call_output", CallID: m.CallID, Output: strRef(m.Text)})
		default:
			return nil, fmt.Errorf("responses: message %d has unknown role %q", i, m.Role)
		}
	}
	for _, t := range req.Tools {
		params := t.Schema
		if p := bytes.TrimSpace(params); len(p) == 0 || bytes.Equal(p, []byte("null")) {
			params = emptySchema
		}
		out.Tools = append(out.Tools, Tool{Type: "function", Name: t.Name, Description: t.Description, Parameters: params})
	}
	if len(out.Tools) > 0 {
		yes := true
		out.ToolChoice, out.ParallelToolCalls = "auto", &yes
	}
	body, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("responses: encoding request: %w", err)
	}
	return body, nil
}

// scrub removes the API key from an error's text (a compatible server may
// echo it in an error body).
func (c *Client) scrub(err error) error { return provider.Redact(err, c.key) }

func strRef(s string) *string { return &s }
