package openai

import (
	"fmt"
	"net/http"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/codec"
	"github.com/openmax/openmax/provider/httpx"
	"github.com/openmax/openmax/provider/internal/wireread"
)

// The Chat Completions wire in the registry (provider/codec): the fake
// provider, the replay transport, the cassette tools and the harness reach
// this package through it.

func init() { codec.Register(Wire{}) }

// WireName is the wire's name in the registry.
const WireName = "openai"

// DefaultModel is the model asked for when none is given.
const DefaultModel = "gpt-4o-mini"

// KeyEnv and BaseURLEnv are the variables the harness reads the API key
// and a base URL from (for the Responses API too).
const (
	KeyEnv     = "OPENAI_API_KEY"
	BaseURLEnv = "OPENAI_BASE_URL"
)

// Wire is the Chat Completions wire as the registry knows it.
type Wire struct{}

// Info describes the wire.
func (Wire) Info() codec.Info {
	return codec.Info{
		Name: WireName, Provider: "openai", API: "chat", Default: true,
		Endpoints:     []string{"/v1" + Path, Path},
		StreamType:    "text/event-stream; charset=utf-8",
		DefaultModel:  DefaultModel,
		CredentialEnv: []string{KeyEnv},
		ShownHeaders:  []string{"x-ratelimit-"},
		SecretHeaders: []string{"Authorization"},
	}
}

// Claim claims a path ending in /chat/completions.
func (Wire) Claim(r *codec.Request) codec.Claim {
	if IsPath(r.Path()) {
		return codec.ClaimEndpoint
	}
	return codec.ClaimNone
}

// ClaimBody claims a stream of chat.completion.chunk events or a whole
// chat.completion.
func (Wire) ClaimBody(contentType string, body []byte) bool { return claimsBody(contentType, body) }

// ReadRequest reads a Chat Completions request body.
func (Wire) ReadRequest(_ *codec.Request, body []byte) (*codec.Call, error) {
	return wireread.ReadMessages(body)
}

// NewEncoder is an Encoder of reply r, its id chatcmpl-fake-N.
func (Wire) NewEncoder(r codec.Reply) codec.Encoder {
	return NewEncoder(replyID(r), r.Model, r.Created)
}

// Whole is Completion of r.
func (Wire) Whole(r codec.Reply) ([]byte, bool) {
	return Completion(replyID(r), r.Model, r.Created, r.Parts)
}

func replyID(r codec.Reply) string { return fmt.Sprintf("chatcmpl-fake-%d", r.Seq) }

// ImpliedFinish keeps a finish reason: the shorthand's are the wire's.
func (Wire) ImpliedFinish(reason string) string { return reason }

// StatusMessage is StatusMessage.
func (Wire) StatusMessage(status int) string { return StatusMessage(status) }

// HTTPError is the error body of f; no header carries the error.
func (Wire) HTTPError(f codec.Failure) ([]byte, http.Header) {
	return FailureBody(f), nil
}

// StreamFailure is server_error (the default) or rate_limit_exceeded with
// the message OpenAI sends with a 500 or a 429.
func (Wire) StreamFailure(code string) (*provider.StreamError, bool) { return StreamFailure(code) }

// StreamFailure is the failure of an in-stream error on both OpenAI wires
// (see codec.Wire.StreamFailure).
func StreamFailure(code string) (*provider.StreamError, bool) {
	switch code {
	case "", "server_error":
		return &provider.StreamError{Type: "server_error", Message: StatusMessage(500)}, true
	case "rate_limit_exceeded":
		return &provider.StreamError{Type: code, Message: StatusMessage(429)}, true
	}
	return nil, false
}

// ErrorEvent is the error frame of f.
func (Wire) ErrorEvent(_, _ []byte, f *provider.StreamError) []byte { return ErrorEvent(f) }

// Parse reads a recorded Chat Completions body.
func (Wire) Parse(contentType string, body []byte) *codec.Reading {
	return reader.Parse(contentType, body)
}

// NewClient builds a Chat Completions client from OPENAI_API_KEY and
// --base-url or OPENAI_BASE_URL.
func (Wire) NewClient(c codec.ClientConfig) (provider.Provider, error) {
	cfg, err := ConfigFrom(c)
	if err != nil {
		return nil, err
	}
	cl, err := New(cfg)
	if err != nil {
		return nil, err
	}
	return cl, nil
}

// ConfigFrom is the Config of a client of either OpenAI wire: the key from
// OPENAI_API_KEY (required), the base URL from c or OPENAI_BASE_URL, the
// model from c or DefaultModel. c.HTTP must be nil or an *httpx.Client.
func ConfigFrom(c codec.ClientConfig) (Config, error) {
	key := c.Getenv(KeyEnv)
	if key == "" {
		return Config{}, codec.MissingCredential("openai", "an API key", KeyEnv)
	}
	cfg := Config{APIKey: key, BaseURL: c.BaseURLOr(BaseURLEnv), Model: c.ModelOr(DefaultModel)}
	if c.HTTP != nil {
		hc, ok := c.HTTP.(*httpx.Client)
		if !ok {
			return Config{}, fmt.Errorf("openai: the HTTP client is a %T, not an *httpx.Client", c.HTTP)
		}
		cfg.HTTP = hc
	}
	return cfg, nil
}
