package anthropic

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/codec"
	"github.com/openmax/openmax/provider/httpx"
	"github.com/openmax/openmax/provider/internal/wireread"
)

// The Messages wire in the registry (provider/codec): the fake provider,
// the replay transport, the cassette tools and the harness reach this
// package through it.

func init() { codec.Register(Wire{}) }

// WireName is the wire's name in the registry.
const WireName = "anthropic"

// DefaultModel is the model asked for when none is given.
const DefaultModel = "claude-sonnet-4-5"

// KeyEnv and BaseURLEnv are the variables the harness reads the API key
// and a base URL from.
const (
	KeyEnv     = "ANTHROPIC_API_KEY"
	BaseURLEnv = "ANTHROPIC_BASE_URL"
)

// Wire is the Messages wire as the registry knows it.
type Wire struct{}

// Info describes the wire.
func (Wire) Info() codec.Info {
	return codec.Info{
		Name: WireName, Provider: "anthropic", Default: true,
		Endpoints:     []string{Path},
		StreamType:    "text/event-stream; charset=utf-8",
		DefaultModel:  DefaultModel,
		CredentialEnv: []string{KeyEnv},
		ShownHeaders:  []string{"anthropic-ratelimit-"},
		SecretHeaders: []string{"X-Api-Key", "Authorization"},
	}
}

// Claim claims a path ending in /messages; a path below one
// (/v1/messages/count_tokens) or an anthropic-version header is a hint.
func (Wire) Claim(r *codec.Request) codec.Claim {
	p := r.Path()
	switch {
	case IsPath(p):
		return codec.ClaimEndpoint
	case strings.Contains(p, "/messages/"), HasVersionHeader(r.Header):
		return codec.ClaimHint
	}
	return codec.ClaimNone
}

// ClaimBody claims a stream with a message_start event, a whole message
// or an error body of Anthropic's shape.
func (Wire) ClaimBody(contentType string, body []byte) bool { return claimsBody(contentType, body) }

// ReadRequest reads a Messages request body.
func (Wire) ReadRequest(_ *codec.Request, body []byte) (*codec.Call, error) {
	return wireread.ReadMessages(body)
}

// NewEncoder is an Encoder of reply r, its id msg_fake_N; the usage its
// message_start states is the last Usage of r.Parts.
func (Wire) NewEncoder(r codec.Reply) codec.Encoder {
	var usage *provider.Usage
	for _, p := range r.Parts {
		if u, ok := p.(provider.Usage); ok {
			usage = &u
		}
	}
	return NewEncoder(replyID(r), r.Model, usage)
}

// Whole is Message of r.
func (Wire) Whole(r codec.Reply) ([]byte, bool) { return Message(replyID(r), r.Model, r.Parts) }

func replyID(r codec.Reply) string { return fmt.Sprintf("msg_fake_%d", r.Seq) }

// ImpliedFinish is StopReason.
func (Wire) ImpliedFinish(reason string) string { return StopReason(reason) }

// StatusMessage is StatusMessage.
func (Wire) StatusMessage(status int) string { return StatusMessage(status) }

// HTTPError is the error body of f; no header carries the error.
func (Wire) HTTPError(f codec.Failure) ([]byte, http.Header) {
	return HTTPErrorBody(f.Status, f.Type, f.Message), nil
}

// StreamFailure is overloaded_error (the default), rate_limit_error or
// api_error with the message Anthropic sends with it.
func (Wire) StreamFailure(code string) (*provider.StreamError, bool) {
	switch code {
	case "", "overloaded_error":
		return &provider.StreamError{Type: "overloaded_error", Message: "Overloaded"}, true
	case "rate_limit_error":
		return &provider.StreamError{Type: code, Message: StatusMessage(429)}, true
	case "api_error":
		return &provider.StreamError{Type: code, Message: StatusMessage(500)}, true
	}
	return nil, false
}

// ErrorEvent is the error event of f.
func (Wire) ErrorEvent(_, _ []byte, f *provider.StreamError) []byte { return ErrorEvent(f) }

// Parse reads a recorded Messages body.
func (Wire) Parse(contentType string, body []byte) *codec.Reading {
	return reader.Parse(contentType, body)
}

// NewClient builds a Messages client from ANTHROPIC_API_KEY and
// --base-url or ANTHROPIC_BASE_URL. c.HTTP must be nil or an
// *httpx.Client.
func (Wire) NewClient(c codec.ClientConfig) (provider.Provider, error) {
	key := c.Getenv(KeyEnv)
	if key == "" {
		return nil, codec.MissingCredential("anthropic", "an API key", KeyEnv)
	}
	cfg := Config{APIKey: key, BaseURL: c.BaseURLOr(BaseURLEnv), Model: c.ModelOr(DefaultModel)}
	if c.HTTP != nil {
		hc, ok := c.HTTP.(*httpx.Client)
		if !ok {
			return nil, fmt.Errorf("anthropic: the HTTP client is a %T, not an *httpx.Client", c.HTTP)
		}
		cfg.HTTP = hc
	}
	cl, err := New(cfg)
	if err != nil {
		return nil, err
	}
	return cl, nil
}
