package gemini

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/codec"
	"github.com/openmax/openmax/provider/httpx"
	"github.com/openmax/openmax/provider/internal/wireread"
)

// The Gemini wire in the registry (provider/codec): one wire for the
// Gemini API and Vertex AI, which differ only in the path's prefix and
// the credential. --provider gemini speaks to the Gemini API with
// GEMINI_API_KEY (or GOOGLE_API_KEY), or, as Google's own SDKs do, to
// Vertex AI when GOOGLE_GENAI_USE_VERTEXAI is true, with
// GOOGLE_CLOUD_PROJECT, GOOGLE_CLOUD_LOCATION and an OAuth access token in
// GOOGLE_VERTEX_ACCESS_TOKEN.

func init() { codec.Register(Wire{}) }

// WireName is the wire's name in the registry.
const WireName = "gemini"

// DefaultModel is the model asked for when none is given.
const DefaultModel = "gemini-2.5-flash"

// The environment of a Vertex AI client: the switch Google's SDKs read,
// the project and location they read, and the access token (a bearer,
// e.g. the output of `gcloud auth print-access-token`).
const (
	VertexEnv      = "GOOGLE_GENAI_USE_VERTEXAI"
	ProjectEnv     = "GOOGLE_CLOUD_PROJECT"
	LocationEnv    = "GOOGLE_CLOUD_LOCATION"
	VertexTokenEnv = "GOOGLE_VERTEX_ACCESS_TOKEN"
	// BaseURLEnv replaces the API root when --base-url is not given.
	BaseURLEnv = "GOOGLE_GEMINI_BASE_URL"
)

// Wire is the Gemini wire as the registry knows it.
type Wire struct{}

// Info describes the wire.
func (Wire) Info() codec.Info {
	return codec.Info{
		Name: WireName, Provider: "gemini", Default: true,
		Endpoints: []string{
			"/" + APIVersion + "/models/{model}:" + MethodStream,
			"/" + APIVersion + "/models/{model}:" + MethodWhole,
			"/" + VertexAPIVersion + "/projects/{project}/locations/{location}/publishers/google/models/{model}:" + MethodStream,
		},
		StreamType:    "text/event-stream",
		DefaultModel:  DefaultModel,
		CredentialEnv: []string{KeyEnv, AltKeyEnv, VertexTokenEnv},
		ShownHeaders:  []string{"x-goog-", "server-timing"},
		SecretHeaders: SecretHeaders,
		SecretQuery:   SecretQuery,
	}
}

// Claim claims a generateContent or streamGenerateContent path of either
// API; a request carrying the API key header elsewhere is a hint.
func (Wire) Claim(r *codec.Request) codec.Claim {
	if IsPath(r.Path()) {
		return codec.ClaimEndpoint
	}
	if r.Header != nil && r.Header.Get(KeyHeader) != "" {
		return codec.ClaimHint
	}
	return codec.ClaimNone
}

// ClaimBody claims a Gemini reply or error body (see claimsBody).
func (Wire) ClaimBody(contentType string, body []byte) bool { return claimsBody(contentType, body) }

// ReadRequest reads a request: the model and the method from the path,
// the rest from the body (ReadRequest). A body that is JSON but not all
// of it readable as the wire's request is Partial.
func (Wire) ReadRequest(r *codec.Request, body []byte) (*codec.Call, error) {
	info, err := ReadRequest(r.Path(), body)
	if err != nil && (info.Model == "" || !jsonObject(body)) {
		return nil, err
	}
	c := &codec.Call{Model: info.Model, Stream: info.Stream, UserText: info.LastUserText, HasUser: info.HasUser,
		UserHolds: info.UserHolds, Tools: info.Tools, Partial: err}
	for _, res := range info.Results {
		c.Results = append(c.Results, codec.Result{Name: res.Name, OK: !res.IsError, Output: res.Output})
	}
	c.Summary = wireread.HeadSummary(info.Model, info.Stream)
	if info.LastUserText != "" {
		c.Summary = append(c.Summary, "last user "+codec.Quote(info.LastUserText))
	}
	if n := len(info.Results); n > 0 {
		c.Summary = append(c.Summary, fmt.Sprintf("%d function responses", n))
	}
	return c, nil
}

// jsonObject reports whether body is a JSON object.
func jsonObject(body []byte) bool {
	_, err := object(body)
	return err == nil
}

func replyID(r codec.Reply) string { return fmt.Sprintf("fake-resp-%d", r.Seq) }

// NewEncoder is an Encoder whose response id is fake-resp-N.
func (Wire) NewEncoder(r codec.Reply) codec.Encoder { return NewEncoder(replyID(r), r.Model) }

// Whole is Whole of r.
func (Wire) Whole(r codec.Reply) ([]byte, bool) { return Whole(replyID(r), r.Model, r.Parts) }

// ImpliedFinish is FinishReason.
func (Wire) ImpliedFinish(reason string) string { return FinishReason(reason) }

// StatusMessage is StatusMessage.
func (Wire) StatusMessage(status int) string { return StatusMessage(status) }

// HTTPError is the API's error body for f: a google.rpc.Status whose
// status is f.Type when that is a status name (RESOURCE_EXHAUSTED), else
// the name of f.Status.
func (Wire) HTTPError(f codec.Failure) ([]byte, http.Header) {
	code := ""
	if isStatusName(f.Type) {
		code = f.Type
	}
	return HTTPErrorBody(f.Status, code, f.Message), nil
}

// isStatusName reports whether s is written as a google.rpc status name:
// upper-case words joined by underscores.
func isStatusName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if (r < 'A' || r > 'Z') && r != '_' {
			return false
		}
	}
	return true
}

// StreamFailure is StreamFailure.
func (Wire) StreamFailure(code string) (*provider.StreamError, bool) { return StreamFailure(code) }

// ErrorEvent is ErrorEvent of f: an event stands alone, so neither the
// kept part nor the body matters.
func (Wire) ErrorEvent(_, _ []byte, f *provider.StreamError) []byte { return ErrorEvent(f) }

// Parse reads a recorded body (see read.go).
func (Wire) Parse(contentType string, body []byte) *codec.Reading {
	return reader.Parse(contentType, body)
}

// NewClient builds a client from the environment: the Gemini API with
// GEMINI_API_KEY (or GOOGLE_API_KEY), or Vertex AI when
// GOOGLE_GENAI_USE_VERTEXAI is true (GOOGLE_CLOUD_PROJECT,
// GOOGLE_CLOUD_LOCATION, default global, and GOOGLE_VERTEX_ACCESS_TOKEN).
// --base-url, else GOOGLE_GEMINI_BASE_URL, replaces the API root. c.HTTP
// must be nil or an *httpx.Client.
func (Wire) NewClient(c codec.ClientConfig) (provider.Provider, error) {
	cfg := Config{BaseURL: c.BaseURLOr(BaseURLEnv), Model: c.ModelOr(DefaultModel)}
	if v := strings.TrimSpace(c.Getenv(VertexEnv)); strings.EqualFold(v, "true") || v == "1" {
		cfg.Project = strings.TrimSpace(c.Getenv(ProjectEnv))
		cfg.Location = strings.TrimSpace(c.Getenv(LocationEnv))
		if cfg.Location == "" {
			cfg.Location = "global"
		}
		if cfg.Project == "" {
			return nil, codec.MissingCredential("gemini", "a Google Cloud project for Vertex AI", ProjectEnv)
		}
		cfg.APIKey = strings.TrimSpace(c.Getenv(VertexTokenEnv))
		if cfg.APIKey == "" {
			return nil, codec.MissingCredential("gemini", "a Vertex AI access token", VertexTokenEnv)
		}
	} else {
		cfg.APIKey = strings.TrimSpace(c.Getenv(KeyEnv))
		if cfg.APIKey == "" {
			cfg.APIKey = strings.TrimSpace(c.Getenv(AltKeyEnv))
		}
		if cfg.APIKey == "" {
			return nil, codec.MissingCredential("gemini", "an API key", KeyEnv+" (or "+AltKeyEnv+")")
		}
	}
	if c.HTTP != nil {
		hc, ok := c.HTTP.(*httpx.Client)
		if !ok {
			return nil, fmt.Errorf("gemini: the HTTP client is a %T, not an *httpx.Client", c.HTTP)
		}
		cfg.HTTP = hc
	}
	return New(cfg)
}
