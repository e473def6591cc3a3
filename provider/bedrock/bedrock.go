// Package bedrock is the client of Amazon Bedrock's runtime API in
// streaming mode, both ways a model can be called there:
//
//   - ConverseStream (APIConverse): POST {base}/model/{modelId}/converse-stream
//     with Bedrock's own request shape (messages, system, toolConfig,
//     inferenceConfig); the reply is a binary event stream of
//     messageStart, contentBlockStart, contentBlockDelta,
//     contentBlockStop, messageStop and metadata events.
//   - InvokeModelWithResponseStream (APIInvoke): POST
//     {base}/model/{modelId}/invoke-with-response-stream with an Anthropic
//     Messages request body (anthropic_version bedrock-2023-05-31, no
//     model or stream field); every frame of the reply is a chunk whose
//     bytes are one Anthropic stream event, folded by provider/anthropic's
//     Decoder.
//
// The model id goes in the path escaped as AWS's SDKs escape it
// (us.amazon.nova-micro-v1:0 is us.amazon.nova-micro-v1%3A0). Requests are
// signed with SigV4 (package sigv4) from AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN for AWS_REGION, or carry a
// Bedrock API key (AWS_BEARER_TOKEN_BEDROCK) as a bearer token. Either way
// the credentials travel in the Authorization and X-Amz-Security-Token
// headers (SecretHeaders), which a recorder must scrub, and never in an
// error.
//
// One Stream call is one HTTP attempt: retries belong to provider/retry,
// which decides from the failure types this package reports (see
// errors.go for how each AWS error and exception maps onto them). The
// framing is package eventstream; encoders for the fake provider are in
// encode.go, the reader of recorded bodies with event offsets in
// parse.go, and the reader of recorded requests in request.go.
package bedrock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"strings"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/bedrock/eventstream"
	"github.com/openmax/openmax/provider/bedrock/sigv4"
	"github.com/openmax/openmax/provider/clock"
	"github.com/openmax/openmax/provider/httpx"
)

// API names one of the two streaming operations.
type API string

// The operations.
const (
	// APIConverse is ConverseStream, Bedrock's own model-neutral shape.
	APIConverse API = "converse"
	// APIInvoke is InvokeModelWithResponseStream carrying Anthropic
	// Messages bodies (Claude models).
	APIInvoke API = "invoke"
)

// Defaults and fixed values.
const (
	// DefaultRegion is the region when neither the configuration nor
	// the environment names one.
	DefaultRegion = "us-east-1"
	// DefaultMaxTokens is the max_tokens of an Anthropic body (the
	// Messages API requires one). A Converse request sends maxTokens only
	// when configured: the model's own default holds otherwise.
	DefaultMaxTokens = 8192
	// SigningName is the service name in a SigV4 credential scope.
	SigningName = "bedrock"
	// AnthropicVersion is the anthropic_version of an invoke body.
	AnthropicVersion = "bedrock-2023-05-31"
	// ContentType is the media type of a streamed reply.
	ContentType = "application/vnd.amazon.eventstream"
)

// The environment variables Bedrock's credentials and region are read
// from (ConfigFromEnv), as AWS's tools read them.
const (
	EnvAccessKeyID     = "AWS_ACCESS_KEY_ID"
	EnvSecretAccessKey = "AWS_SECRET_ACCESS_KEY"
	EnvSessionToken    = "AWS_SESSION_TOKEN"
	EnvRegion          = "AWS_REGION"
	EnvDefaultRegion   = "AWS_DEFAULT_REGION"
	EnvBearerToken     = "AWS_BEARER_TOKEN_BEDROCK"
)

// SecretHeaders are the request headers that carry credentials: the SigV4
// signature or bearer key, and the session token.
var SecretHeaders = []string{"Authorization", "X-Amz-Security-Token"}

// Config configures a Client.
type Config struct {
	// API is the operation; empty is APIConverse.
	API API
	// Region signs the requests and names the default endpoint; empty is
	// DefaultRegion.
	Region string
	// BaseURL is the runtime endpoint; empty is
	// https://bedrock-runtime.{Region}.amazonaws.com.
	BaseURL string
	// Model is the model id (or inference profile or ARN); required; a
	// Request's own Model takes precedence.
	Model     string
	MaxTokens int
	// APIKey is a Bedrock API key, sent as a bearer token instead of a
	// signature when set.
	APIKey string
	// Credentials sign the requests with SigV4 when there is no APIKey.
	Credentials sigv4.Credentials
	HTTP        *httpx.Client
}

// ConfigFromEnv is the region, the SigV4 credentials and the API key the
// environment gives (getenv is os.Getenv in production), for api.
func ConfigFromEnv(api API, getenv func(string) string) Config {
	region := getenv(EnvRegion)
	if region == "" {
		region = getenv(EnvDefaultRegion)
	}
	return Config{
		API:    api,
		Region: region,
		APIKey: getenv(EnvBearerToken),
		Credentials: sigv4.Credentials{
			AccessKeyID:     getenv(EnvAccessKeyID),
			SecretAccessKey: getenv(EnvSecretAccessKey),
			SessionToken:    getenv(EnvSessionToken),
		},
	}
}

// String describes the configuration without its secrets.
func (c Config) String() string {
	return fmt.Sprintf("bedrock.Config{API: %q, Region: %q, BaseURL: %q, Model: %q, MaxTokens: %d, APIKey: %s, Credentials: %s}",
		c.API, c.Region, c.BaseURL, c.Model, c.MaxTokens, set(c.APIKey), c.Credentials)
}

// GoString is String, so %#v does not print the secrets either.
func (c Config) GoString() string { return c.String() }

func set(s string) string {
	if s == "" {
		return "(none)"
	}
	return "(set)"
}

// Client streams replies from Bedrock. It is safe for concurrent use.
type Client struct {
	api       API
	base      string
	region    string
	model     string
	maxTokens int
	key       string
	creds     sigv4.Credentials
	http      *httpx.Client
}

// String describes the client without its secrets.
func (c *Client) String() string {
	auth := "sigv4"
	if c.key != "" {
		auth = "api key"
	}
	return fmt.Sprintf("bedrock.Client{API: %q, URL: %q, Region: %q, Model: %q, Auth: %s}", c.api, c.base, c.region, c.model, auth)
}

// GoString is String.
func (c *Client) GoString() string { return c.String() }

// New checks cfg and fills in its defaults. Without an API key or a
// complete access key (id and secret) it fails with an error wrapping
// provider.ErrMissingKey.
func New(cfg Config) (*Client, error) {
	if cfg.APIKey == "" && !cfg.Credentials.Valid() {
		return nil, fmt.Errorf("bedrock: %w (set %s, or %s and %s)", provider.ErrMissingKey, EnvBearerToken, EnvAccessKeyID, EnvSecretAccessKey)
	}
	if cfg.Model == "" {
		return nil, errors.New("bedrock: no model configured")
	}
	api := cfg.API
	switch api {
	case "":
		api = APIConverse
	case APIConverse, APIInvoke:
	default:
		return nil, fmt.Errorf("bedrock: unknown API %q (want %q or %q)", api, APIConverse, APIInvoke)
	}
	region := cfg.Region
	if region == "" {
		region = DefaultRegion
	}
	base := cfg.BaseURL
	if base == "" {
		base = "https://bedrock-runtime." + region + ".amazonaws.com"
	}
	base = strings.TrimRight(base, "/")
	if _, err := url.Parse(base); err != nil {
		return nil, fmt.Errorf("bedrock: base URL: %w", err)
	}
	hc := cfg.HTTP
	if hc == nil {
		hc = &httpx.Client{}
	}
	return &Client{api: api, base: base, region: region, model: cfg.Model, maxTokens: cfg.MaxTokens,
		key: cfg.APIKey, creds: cfg.Credentials, http: hc}, nil
}

// Path is the request path of api for model, the model id escaped.
func Path(api API, model string) string {
	op := "converse-stream"
	if api == APIInvoke {
		op = "invoke-with-response-stream"
	}
	return "/model/" + sigv4.EscapeLabel(model) + "/" + op
}

// Stream sends req and yields the reply as it streams: TextDelta and
// ThinkingDelta as they arrive, then, once the reply completed, the tool
// calls in block order, Usage and Finish. A failure ends the sequence
// with one Error part; a cancelled ctx ends it with none.
func (c *Client) Stream(ctx context.Context, req provider.Request) iter.Seq[provider.Part] {
	return func(yield func(provider.Part) bool) {
		model := req.Model
		if model == "" {
			model = c.model
		}
		var body []byte
		var err error
		if c.api == APIInvoke {
			body, err = invokeBody(req, c.maxTokens)
		} else {
			body, err = converseBody(req, c.maxTokens)
		}
		if err != nil {
			yield(provider.Error{Err: c.scrub(err)})
			return
		}
		u := c.base + Path(c.api, model)
		h, err := c.headers(u, body)
		if err != nil {
			yield(provider.Error{Err: c.scrub(err)})
			return
		}
		resp, err := c.http.PostWith(ctx, u, h, body, ReadHTTPError)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			yield(provider.Error{Err: c.scrub(err)})
			return
		}
		defer resp.Body.Close()
		out := func(p provider.Part) bool {
			if e, ok := p.(provider.Error); ok {
				p = provider.Error{Err: c.scrub(e.Err)}
			}
			return yield(p)
		}
		whole := func(_ context.Context, data []byte, yield func(provider.Part) bool) {
			yield(provider.Error{Err: wholeReply(resp.Header, data)})
		}
		stream := func(ctx context.Context, body io.Reader, _ string, yield func(provider.Part) bool) {
			readStream(ctx, body, newState(c.api), yield)
		}
		httpx.ReadReply(ctx, resp, c.http.MaxReplyBytes, "bedrock", whole, stream, out)
	}
}

// streamState is a wire's client parser, one message at a time.
type streamState interface {
	// message folds one message into the reply: the parts the client
	// yields for it (an Error part for a failure), and whether the reply
	// is over.
	message(m eventstream.Message) (parts []provider.Part, over bool)
	// end is what the client yields when the stream ends (err io.EOF) or
	// breaks before the reply is over.
	end(err error) []provider.Part
}

// newState is api's parser at the start of a reply.
func newState(api API) streamState {
	if api == APIInvoke {
		return newInvokeState()
	}
	return newConverseState()
}

// readStream parses a streamed reply with st.
func readStream(ctx context.Context, body io.Reader, st streamState, yield func(provider.Part) bool) {
	d := eventstream.NewDecoder(body)
	for {
		if ctx.Err() != nil {
			return
		}
		m, err := d.Next()
		var parts []provider.Part
		over := true
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			parts = st.end(err)
		} else {
			parts, over = st.message(m)
		}
		for _, p := range parts {
			if !yield(p) {
				return
			}
		}
		if over {
			return
		}
	}
}

// wholeReply is the failure of a 2xx reply that came back as one JSON
// document instead of an event stream: Bedrock's error object when it is
// one (a message, or an error type in the headers), else a plain error.
func wholeReply(h http.Header, data []byte) error {
	var b map[string]json.RawMessage
	_ = json.Unmarshal(data, &b)
	if h.Get("X-Amzn-Errortype") != "" || b["message"] != nil || b["Message"] != nil {
		return jsonError(h, data)
	}
	return fmt.Errorf("bedrock: expected an event stream, got application/json: %s", cut(string(data)))
}

// headers are a request's headers, signed (or carrying the API key).
func (c *Client) headers(rawURL string, body []byte) (http.Header, error) {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", ContentType)
	if c.key != "" {
		h.Set("Authorization", "Bearer "+c.key)
		return h, nil
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("bedrock: request URL: %w", err)
	}
	clk := c.http.Clock
	if clk == nil {
		clk = clock.Real{}
	}
	sigv4.Sign(sigv4.Request{Method: http.MethodPost, Host: u.Host, Path: u.EscapedPath(), Query: u.RawQuery, Header: h, Payload: body},
		c.creds, c.region, SigningName, clk.Now())
	return h, nil
}

// scrub removes every secret the client holds from an error's text,
// keeping its type so the retry policy still classifies it.
func (c *Client) scrub(err error) error {
	for _, s := range []string{c.key, c.creds.SecretAccessKey, c.creds.SessionToken} {
		err = provider.Redact(err, s)
	}
	return err
}

// ParsePath reads a runtime request path: the model it names (unescaped)
// and the streaming operation; ok is false for a path that is neither
// converse-stream nor invoke-with-response-stream under /model/.
func ParsePath(p string) (model string, api API, ok bool) {
	p, _, _ = strings.Cut(p, "?")
	i := strings.LastIndex(p, "/model/")
	if i < 0 {
		return "", "", false
	}
	rest := p[i+len("/model/"):]
	j := strings.LastIndexByte(rest, '/')
	if j < 0 {
		return "", "", false
	}
	switch rest[j+1:] {
	case "converse-stream":
		api = APIConverse
	case "invoke-with-response-stream":
		api = APIInvoke
	default:
		return "", "", false
	}
	m, err := url.PathUnescape(rest[:j])
	if err != nil || m == "" {
		return "", "", false
	}
	return m, api, true
}
