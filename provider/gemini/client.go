package gemini

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
	"github.com/openmax/openmax/provider/internal/wirejson"
)

// Config configures a Client.
type Config struct {
	// APIKey is the Gemini API key, sent in the x-goog-api-key header
	// (never in the URL); for Vertex AI it is an OAuth 2 access token,
	// sent as Authorization: Bearer.
	APIKey string
	// BaseURL is the API root; requests go to BaseURL + Path (or
	// VertexPath). Default DefaultBaseURL, or VertexBaseURL(Location).
	BaseURL string
	// Model is required; a Request's own Model takes precedence. A
	// "models/" prefix is taken off.
	Model string
	// Project and Location, both set, make the client speak to Vertex AI.
	Project, Location string
	// Whole asks for whole replies (generateContent) instead of a stream.
	Whole bool
	// NoThoughts leaves out the request for thought summaries
	// (thinkingConfig.includeThoughts), which the client otherwise sends,
	// and stops sending once a model refused it.
	NoThoughts bool
	// MaxTokens caps the reply (maxOutputTokens); 0 leaves the model's own.
	MaxTokens int
	HTTP      *httpx.Client
}

// Vertex reports whether the configuration is Vertex AI's.
func (c Config) Vertex() bool { return c.Project != "" && c.Location != "" }

// String describes the configuration without its key.
func (c Config) String() string {
	key := "(none)"
	if c.APIKey != "" {
		key = "(set)"
	}
	return fmt.Sprintf("gemini.Config{BaseURL: %q, Model: %q, Project: %q, Location: %q, Whole: %v, APIKey: %s}",
		c.BaseURL, c.Model, c.Project, c.Location, c.Whole, key)
}

// GoString is String, so %#v does not print the key either.
func (c Config) GoString() string { return c.String() }

// Client streams replies from the Gemini API or Vertex AI. It is safe for
// concurrent use.
type Client struct {
	key       string
	base      string
	model     string
	project   string
	location  string
	stream    bool
	maxTokens int
	http      *httpx.Client
	// plain is set once a model refused the request for thought
	// summaries, or when they were never to be asked for.
	plain atomic.Bool
}

// String describes the client without its key.
func (c *Client) String() string {
	return fmt.Sprintf("gemini.Client{URL: %q, Model: %q}", c.url(c.model), c.model)
}

// GoString is String.
func (c *Client) GoString() string { return c.String() }

// New checks cfg and fills in its defaults. An empty APIKey is an error
// wrapping provider.ErrMissingKey.
func New(cfg Config) (*Client, error) {
	if cfg.APIKey == "" {
		what := "the Gemini API key"
		if cfg.Vertex() {
			what = "a Vertex AI access token"
		}
		return nil, fmt.Errorf("gemini: %w (set %s)", provider.ErrMissingKey, what)
	}
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, errors.New("gemini: no model configured")
	}
	if (cfg.Project == "") != (cfg.Location == "") {
		return nil, errors.New("gemini: Vertex AI needs both a project and a location")
	}
	base := cfg.BaseURL
	if base == "" {
		base = DefaultBaseURL
		if cfg.Vertex() {
			base = VertexBaseURL(cfg.Location)
		}
	}
	hc := httpx.Client{}
	if cfg.HTTP != nil {
		hc = *cfg.HTTP
	}
	c := &Client{key: cfg.APIKey, base: strings.TrimRight(base, "/"), model: cfg.Model, project: cfg.Project,
		location: cfg.Location, stream: !cfg.Whole, maxTokens: cfg.MaxTokens, http: &hc}
	c.plain.Store(cfg.NoThoughts)
	return c, nil
}

// url is the endpoint of a request for model.
func (c *Client) url(model string) string {
	if c.project != "" {
		u := c.base + VertexPath(c.project, c.location, model, c.stream)
		if c.stream {
			u += "?" + StreamQuery
		}
		return u
	}
	u := c.base + Path(model, c.stream)
	if c.stream {
		u += "?" + StreamQuery
	}
	return u
}

// header carries the credential: the API key, or Vertex's bearer token.
func (c *Client) header() http.Header {
	if c.project != "" {
		return http.Header{"Authorization": {"Bearer " + c.key}}
	}
	return http.Header{KeyHeader: {c.key}}
}

// Stream sends req and yields the reply as it streams: TextDelta and
// ThinkingDelta (signatures included) as they arrive, then, once the
// stream ended after a finish reason, the function calls in order, Usage
// and Finish (see the mapping in stream.go). A failure ends the sequence
// with one Error part; a cancelled ctx ends it with none.
func (c *Client) Stream(ctx context.Context, req provider.Request) iter.Seq[provider.Part] {
	return func(yield func(provider.Part) bool) {
		fail := func(err error) { yield(provider.Error{Err: c.scrub(err)}) }
		model := c.model
		if m := strings.TrimSpace(req.Model); m != "" {
			model = m
		}
		thoughts := !c.plain.Load()
		body, err := buildRequest(req, c.maxTokens, thoughts)
		if err != nil {
			fail(err)
			return
		}
		if ctx.Err() != nil {
			return
		}
		url, header := c.url(model), c.header()
		resp, err := c.http.PostWith(ctx, url, header, body, readHTTPError)
		if thoughts && thoughtsRefused(err) {
			// A model that does not think refuses the request for
			// thought summaries: the same request without it is the
			// one that can succeed, and this client will not ask again.
			c.plain.Store(true)
			if body, err = buildRequest(req, c.maxTokens, false); err != nil {
				fail(err)
				return
			}
			resp, err = c.http.PostWith(ctx, url, header, body, readHTTPError)
		}
		c.http.Reply(ctx, resp, err, "gemini", readWhole, readStream, c.scrub, yield)
	}
}

// thoughtsRefused reports the API's refusal of a request asking for
// thoughts from a model that has none (400 INVALID_ARGUMENT naming
// thinking).
func thoughtsRefused(err error) bool {
	var he *provider.HTTPError
	return errors.As(err, &he) && he.Status == http.StatusBadRequest &&
		strings.Contains(strings.ToLower(he.Message), "think")
}

// scrub removes the key from an error's text, keeping its type so the
// retry policy still classifies it.
func (c *Client) scrub(err error) error { return provider.Redact(err, c.key) }

// RequestBody renders req as the body Client.Stream sends (thought
// summaries asked for), for the records and tests of other packages.
func RequestBody(req provider.Request) ([]byte, error) { return buildRequest(req, 0, true) }

// emptySchema stands in for a tool that declared no schema.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// buildRequest renders req as a GenerateContentRequest.
func buildRequest(req provider.Request, maxTokens int, thoughts bool) ([]byte, error) {
	contents, err := Contents(req.Messages)
	if err != nil {
		return nil, err
	}
	w := Request{Contents: contents}
	if req.System != "" {
		w.SystemInstruction = &Content{Parts: []Part{{Text: &req.System}}}
	}
	if len(req.Tools) > 0 {
		var decls []FunctionDeclaration
		for _, t := range req.Tools {
			schema := bytes.TrimSpace(t.Schema)
			switch {
			case len(schema) == 0 || bytes.Equal(schema, []byte("null")):
				schema = emptySchema
			case !json.Valid(schema):
				return nil, fmt.Errorf("gemini: tool %q has an invalid JSON schema", t.Name)
			}
			decls = append(decls, FunctionDeclaration{Name: t.Name, Description: t.Description, ParametersJSONSchema: schema})
		}
		w.Tools = []Tool{{FunctionDeclarations: decls}}
	}
	if maxTokens > 0 || thoughts {
		w.GenerationConfig = &GenerationConfig{MaxOutputTokens: maxTokens}
		if thoughts {
			w.GenerationConfig.ThinkingConfig = &ThinkingConfig{IncludeThoughts: true}
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(w); err != nil {
		return nil, fmt.Errorf("gemini: encoding the request: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Contents maps the transcript onto the wire's turns. A user prompt is a
// user turn with a text part. An assistant message is a model turn (see
// ModelParts). Tool results are functionResponse parts of a user turn,
// named after the call they answer ({"output": text}, or {"error": text}
// for a failed call); consecutive user-side messages share one user turn,
// function responses first, and an assistant message with nothing to send
// is left out.
func Contents(msgs []provider.Message) ([]Content, error) {
	names := map[string]string{}
	out := []Content{}
	for i, m := range msgs {
		var role string
		var parts []Part
		switch m.Role {
		case provider.RoleAssistant:
			role = "model"
			parts = ModelParts(m)
			for _, tc := range m.ToolCalls {
				names[tc.ID] = tc.Name
			}
			if len(parts) == 0 {
				continue
			}
		case provider.RoleTool:
			role = "user"
			key := "output"
			if m.IsError {
				key = "error"
			}
			resp, _ := json.Marshal(map[string]string{key: m.Text})
			parts = []Part{{FunctionResponse: &FunctionResponse{ID: m.CallID, Name: names[m.CallID], Response: resp}}}
		case provider.RoleUser:
			role = "user"
			text := m.Text
			parts = []Part{{Text: &text}}
		default:
			return nil, fmt.Errorf("gemini: message %d has unknown role %q", i, m.Role)
		}
		if n := len(out); n > 0 && out[n-1].Role == role && role == "user" {
			last := &out[n-1]
			if parts[0].FunctionResponse != nil {
				// Function responses come first in their turn.
				k := 0
				for k < len(last.Parts) && last.Parts[k].FunctionResponse != nil {
					k++
				}
				last.Parts = append(last.Parts[:k], append(parts, last.Parts[k:]...)...)
			} else {
				last.Parts = append(last.Parts, parts...)
			}
			continue
		}
		out = append(out, Content{Role: role, Parts: parts})
	}
	return out, nil
}

// ModelParts is an assistant message as the parts of a model turn, its
// thought signatures back where they came from (see SignatureSite): each
// reasoning block's text as a thought part (carrying the block's
// signature when it is a thought's), then the reply's text as one text
// part (carrying a text signature; an empty one when only the signature
// came), then the function calls with their ids, arguments (an object;
// anything else is {}) and signatures. A block whose signature is another
// vendor's cannot be told from a thought's and goes back as one.
func ModelParts(m provider.Message) []Part {
	var parts []Part
	textSig := ""
	callSigs := map[string]string{}
	for _, th := range m.Thinking {
		site, id, sig := SignatureSite(th.Signature)
		var own string
		switch site {
		case SiteText:
			textSig = sig
		case SiteCall:
			callSigs[id] = sig
		default:
			own = sig
		}
		if th.Text != "" || own != "" {
			text := th.Text
			parts = append(parts, Part{Text: &text, Thought: true, ThoughtSignature: own})
		}
	}
	if m.Text != "" || textSig != "" {
		text := m.Text
		parts = append(parts, Part{Text: &text, ThoughtSignature: textSig})
	}
	for _, tc := range m.ToolCalls {
		parts = append(parts, Part{FunctionCall: &FunctionCall{ID: tc.ID, Name: tc.Name, Args: wirejson.Object(tc.Args)},
			ThoughtSignature: callSigs[tc.ID]})
	}
	return parts
}
