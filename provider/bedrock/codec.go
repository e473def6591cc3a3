package bedrock

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/codec"
	"github.com/openmax/openmax/provider/httpx"
)

// Bedrock in the registry (provider/codec): two wires, one per operation,
// because what they stream differs in every event: "bedrock" is
// ConverseStream (and Converse), Bedrock's own shape and --provider
// bedrock's default; "bedrock-invoke" is InvokeModelWithResponseStream
// (and InvokeModel) carrying Anthropic Messages events, --provider
// bedrock --api invoke. The registry hands a wire no request path when it
// encodes a reply or reads a recorded body, so one wire serving both
// operations would have to guess the operation from the body; two wires
// each know theirs.

func init() {
	codec.Register(Wire{API: APIConverse})
	codec.Register(Wire{API: APIInvoke})
}

// The wires' names in the registry.
const (
	WireName       = "bedrock"
	InvokeWireName = "bedrock-invoke"
)

// DefaultModel is the model asked for when none is given: a
// cross-region inference profile, as on-demand Claude calls need.
const DefaultModel = "us.anthropic.claude-haiku-4-5-20251001-v1:0"

// BaseURLEnv is the variable a runtime endpoint is read from when
// --base-url is not given, the one AWS's SDKs read for this service.
const BaseURLEnv = "AWS_ENDPOINT_URL_BEDROCK_RUNTIME"

// Wire is one of Bedrock's two operations as the registry knows it.
type Wire struct{ API API }

func (w Wire) api() API {
	if w.API == APIInvoke {
		return APIInvoke
	}
	return APIConverse
}

// Info describes the wire.
func (w Wire) Info() codec.Info {
	in := codec.Info{
		Name: WireName, Provider: "bedrock", API: string(APIConverse), Default: true,
		Endpoints:     []string{"/model/{model}/converse-stream", "/model/{model}/converse"},
		StreamType:    ContentType,
		DefaultModel:  DefaultModel,
		CredentialEnv: []string{EnvAccessKeyID, EnvSecretAccessKey, EnvSessionToken, EnvBearerToken},
		ShownHeaders:  []string{"x-amzn-ErrorType", "x-amzn-bedrock-"},
		SecretHeaders: SecretHeaders,
		SecretQuery:   []string{"X-Amz-Signature", "X-Amz-Credential", "X-Amz-Security-Token"},
		Signed:        true,
	}
	if w.api() == APIInvoke {
		in.Name, in.API, in.Default = InvokeWireName, string(APIInvoke), false
		in.Endpoints = []string{"/model/{model}/invoke-with-response-stream", "/model/{model}/invoke"}
	}
	return in
}

// Claim claims a POST path of the wire's operation under /model/, the
// streaming one or the whole one.
func (w Wire) Claim(r *codec.Request) codec.Claim {
	if _, api, _, ok := ParseRequestPath(r.Path()); ok && api == w.api() {
		return codec.ClaimEndpoint
	}
	return codec.ClaimNone
}

// ClaimBody is ClaimsBody of the wire's operation.
func (w Wire) ClaimBody(contentType string, body []byte) bool {
	return ClaimsBody(w.api(), contentType, body)
}

// ReadRequest reads a request of the operation: the model from the path,
// the rest from the body.
func (w Wire) ReadRequest(r *codec.Request, body []byte) (*codec.Call, error) {
	c, err := ReadRequest(r.Path(), body)
	if err != nil {
		return nil, err
	}
	out := &codec.Call{Model: c.Model, Stream: c.Stream, UserText: c.UserText, HasUser: c.HasUser,
		UserHolds: c.UserHolds, Tools: c.Tools}
	for _, res := range c.Results {
		out.Results = append(out.Results, codec.Result{Name: res.Name, OK: res.OK, Output: res.Output})
	}
	return out, nil
}

// lastUsage is the last Usage of parts, nil when none.
func lastUsage(parts []provider.Part) *provider.Usage {
	var usage *provider.Usage
	for _, p := range parts {
		if u, ok := p.(provider.Usage); ok {
			usage = &u
		}
	}
	return usage
}

func replyID(r codec.Reply) string { return fmt.Sprintf("msg_bdrk_fake_%d", r.Seq) }

// NewEncoder is a ConverseEncoder, or for invoke an InvokeEncoder whose
// message is msg_bdrk_fake_N; the usage stated is the last Usage of
// r.Parts.
func (w Wire) NewEncoder(r codec.Reply) codec.Encoder {
	if w.api() == APIInvoke {
		return NewInvokeEncoder(replyID(r), r.Model, lastUsage(r.Parts))
	}
	return NewConverseEncoder(lastUsage(r.Parts))
}

// Whole is ConverseWhole, or InvokeWhole, of r.
func (w Wire) Whole(r codec.Reply) ([]byte, bool) {
	if w.api() == APIInvoke {
		return InvokeWhole(replyID(r), r.Model, r.Parts)
	}
	return ConverseWhole(r.Parts)
}

// ImpliedFinish is StopReason (both operations say the reasons the same
// way: end_turn, tool_use, max_tokens).
func (Wire) ImpliedFinish(reason string) string { return StopReason(reason) }

// StatusMessage is StatusMessage.
func (Wire) StatusMessage(status int) string { return StatusMessage(status) }

// HTTPError is Bedrock's error reply for f: {"message"} and the
// x-amzn-ErrorType header. f.Type names the exception when it is one
// (ThrottlingException, or throttlingException as a stream says it);
// any other type takes ErrorType's for the status. Without a message,
// Bedrock's own for the status (StatusMessage) is sent, else the status
// text.
func (Wire) HTTPError(f codec.Failure) ([]byte, http.Header) {
	code := ""
	if strings.HasSuffix(f.Type, "Exception") {
		code = strings.ToUpper(f.Type[:1]) + f.Type[1:]
	}
	msg := f.Message
	if msg == "" {
		msg = StatusMessage(f.Status)
	}
	return HTTPErrorBody(f.Status, code, msg), HTTPErrorHeader(f.Status, code)
}

// StreamFailure is StreamFailure.
func (Wire) StreamFailure(code string) (*provider.StreamError, bool) { return StreamFailure(code) }

// FailureStatus is the HTTP status of a whole reply failing with the
// exception typ (the status Bedrock answers it with); ok is false for a
// type that is not one of Bedrock's exceptions.
func (Wire) FailureStatus(typ string) (int, bool) {
	switch strings.ToLower(typ) {
	case "throttlingexception":
		return http.StatusTooManyRequests, true
	case "serviceunavailableexception":
		return http.StatusServiceUnavailable, true
	case "modeltimeoutexception":
		return http.StatusRequestTimeout, true
	case "modelstreamerrorexception", "modelerrorexception":
		return http.StatusFailedDependency, true
	case "internalserverexception":
		return http.StatusInternalServerError, true
	case "validationexception":
		return http.StatusBadRequest, true
	}
	return 0, false
}

// ErrorEvent is ExceptionFrame of f: a frame stands alone, so neither the
// kept part nor the body matters.
func (Wire) ErrorEvent(_, _ []byte, f *provider.StreamError) []byte { return ExceptionFrame(f) }

// Parse is Parse of the wire's operation: each event is one event-stream
// frame.
func (w Wire) Parse(contentType string, body []byte) *codec.Reading {
	return Parse(w.api(), contentType, body)
}

// NewClient builds a client of the wire's operation from the AWS
// environment (ConfigFromEnv: AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY, or AWS_BEARER_TOKEN_BEDROCK; AWS_REGION), with
// --base-url or AWS_ENDPOINT_URL_BEDROCK_RUNTIME as the endpoint. c.HTTP
// must be nil or an *httpx.Client.
func (w Wire) NewClient(c codec.ClientConfig) (provider.Provider, error) {
	cfg := ConfigFromEnv(w.api(), c.Getenv)
	if cfg.APIKey == "" && !cfg.Credentials.Valid() {
		return nil, codec.MissingCredential("bedrock", "AWS credentials",
			EnvAccessKeyID+" and "+EnvSecretAccessKey+" (or "+EnvBearerToken+")")
	}
	cfg.BaseURL = c.BaseURLOr(BaseURLEnv)
	cfg.Model = c.ModelOr(DefaultModel)
	if c.HTTP != nil {
		hc, ok := c.HTTP.(*httpx.Client)
		if !ok {
			return nil, fmt.Errorf("bedrock: the HTTP client is a %T, not an *httpx.Client", c.HTTP)
		}
		cfg.HTTP = hc
	}
	cl, err := New(cfg)
	if err != nil {
		return nil, err
	}
	return cl, nil
}
