package responses

import (
	"fmt"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/codec"
	"github.com/openmax/openmax/provider/openai"
)

// The Responses API wire in the registry (provider/codec): the fake
// provider, the replay transport, the cassette tools and the harness
// (--provider openai --api responses) reach this package through it.

func init() { codec.Register(Wire{}) }

// WireName is the wire's name in the registry.
const WireName = "responses"

// Wire is the Responses API wire as the registry knows it. It is
// OpenAI's: it takes Chat Completions' error bodies, status messages,
// in-stream failures and finish reasons (openai.Wire) and has its own
// endpoint, events, encoders and requests.
type Wire struct{ openai.Wire }

// Info describes the wire: the openai provider's responses API, with
// OpenAI's key, base URL variable, default model and headers.
func (w Wire) Info() codec.Info {
	in := w.Wire.Info()
	in.Name, in.API, in.Default = WireName, "responses", false
	in.Endpoints = []string{"/v1" + Path, Path}
	return in
}

// Claim claims a path ending in /responses.
func (Wire) Claim(r *codec.Request) codec.Claim {
	if IsPath(r.Path()) {
		return codec.ClaimEndpoint
	}
	return codec.ClaimNone
}

// ClaimBody claims a stream of response.* events or a whole response
// object.
func (Wire) ClaimBody(contentType string, body []byte) bool { return claimsBody(contentType, body) }

// ReadRequest reads a Responses request body: its user text from the
// input (a string, or the role messages among its items), its flat
// function tools, and the function_call_output items at the end of its
// input, named after the function_call items they answer.
func (Wire) ReadRequest(_ *codec.Request, body []byte) (*codec.Call, error) {
	return readRequest(body)
}

// NewEncoder is an Encoder of reply r, its id resp_fake_N.
func (Wire) NewEncoder(r codec.Reply) codec.Encoder {
	return NewEncoder(replyID(r), r.Model, r.Created)
}

// Whole is Whole of r.
func (Wire) Whole(r codec.Reply) ([]byte, bool) {
	return Whole(replyID(r), r.Model, r.Created, r.Parts)
}

func replyID(r codec.Reply) string { return fmt.Sprintf("resp_fake_%d", r.Seq) }

// ErrorEvent is the response.failed event of f: it names the recorded
// stream's response and follows the kept events in their numbering.
func (Wire) ErrorEvent(kept, body []byte, f *provider.StreamError) []byte {
	return failedEvent(string(kept), string(body), f)
}

// Parse reads a recorded Responses body.
func (Wire) Parse(contentType string, body []byte) *codec.Reading {
	return parseRecorded(contentType, body)
}

// NewClient builds a Responses client from OPENAI_API_KEY and --base-url
// or OPENAI_BASE_URL (openai.ConfigFrom).
func (Wire) NewClient(c codec.ClientConfig) (provider.Provider, error) {
	cfg, err := openai.ConfigFrom(c)
	if err != nil {
		return nil, err
	}
	cl, err := New(cfg)
	if err != nil {
		return nil, err
	}
	return cl, nil
}
