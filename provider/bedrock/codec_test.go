package bedrock

import (
	"net/http"
	"strings"
	"testing"

	"github.com/openmax/openmax/provider/codec"
)

// TestWireClaims: each of the two wires claims its own operation's paths,
// streaming and whole, and no other; the registry routes a request by
// them and --provider bedrock [--api invoke] picks them.
func TestWireClaims(t *testing.T) {
	for _, tt := range []struct {
		path, wire string
		stream     bool
	}{
		{"/model/us.anthropic.claude-haiku-4-5-20251001-v1%3A0/converse-stream", WireName, true},
		{"/model/amazon.nova-micro-v1:0/converse", WireName, false},
		{"/model/m/invoke-with-response-stream", InvokeWireName, true},
		{"/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A1%3Ainference-profile%2Fx/invoke", InvokeWireName, false},
		{"/v1/model/m/converse-stream", WireName, true},
		{"/model/m/invoke-with-bidirectional-stream", "", false},
		{"/models/m/converse", "", false},
	} {
		r := codec.RecordedRequest(http.MethodPost, "https://bedrock-runtime.us-east-1.amazonaws.com"+tt.path, nil)
		w, claim, err := codec.ForRequest(r)
		if tt.wire == "" {
			if err == nil && claim == codec.ClaimEndpoint {
				t.Errorf("%s: claimed by %s", tt.path, w.Info().Name)
			}
			continue
		}
		if err != nil || claim != codec.ClaimEndpoint || w.Info().Name != tt.wire {
			t.Errorf("%s: %v %v %v, want %s", tt.path, w, claim, err, tt.wire)
			continue
		}
		c, err := w.ReadRequest(r, []byte(`{"messages":[]}`))
		if err != nil || c.Stream != tt.stream || c.Model == "" {
			t.Errorf("%s: ReadRequest %+v %v, want stream %v", tt.path, c, err, tt.stream)
		}
	}
	for api, want := range map[string]string{"": WireName, "converse": WireName, "invoke": InvokeWireName} {
		if w, err := codec.ForProvider("bedrock", api); err != nil || w.Info().Name != want {
			t.Errorf("--provider bedrock --api %q: %v %v, want %s", api, w, err, want)
		}
	}
}

// TestWireNewClient: the client comes from the AWS environment, its
// endpoint from --base-url or AWS_ENDPOINT_URL_BEDROCK_RUNTIME; without
// credentials the error names the variables.
func TestWireNewClient(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	_, err := Wire{}.NewClient(codec.ClientConfig{Getenv: env(nil)})
	if err == nil || !strings.Contains(err.Error(), "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_BEARER_TOKEN_BEDROCK)") {
		t.Errorf("no credentials: %v", err)
	}
	for _, tt := range []struct {
		cfg  codec.ClientConfig
		want string
	}{
		{codec.ClientConfig{Getenv: env(map[string]string{EnvAccessKeyID: "AKID", EnvSecretAccessKey: "s", EnvRegion: "eu-west-3"})},
			"https://bedrock-runtime.eu-west-3.amazonaws.com"},
		{codec.ClientConfig{Getenv: env(map[string]string{EnvBearerToken: "k", BaseURLEnv: "http://127.0.0.1:9/"})}, "http://127.0.0.1:9"},
		{codec.ClientConfig{BaseURL: "http://127.0.0.1:8", Getenv: env(map[string]string{EnvBearerToken: "k", BaseURLEnv: "http://127.0.0.1:9"})}, "http://127.0.0.1:8"},
	} {
		p, err := (Wire{API: APIInvoke}).NewClient(tt.cfg)
		if err != nil {
			t.Fatal(err)
		}
		c := p.(*Client)
		if c.base != tt.want || c.api != APIInvoke || c.model != DefaultModel {
			t.Errorf("client %v, want base %s", c, tt.want)
		}
	}
	if _, err := (Wire{}).NewClient(codec.ClientConfig{HTTP: fakePoster{}, Getenv: env(map[string]string{EnvBearerToken: "k"})}); err == nil {
		t.Error("a Poster that is not an *httpx.Client was taken")
	}
}

type fakePoster struct{ codec.Poster }

// TestWireHTTPError: the type goes in x-amzn-ErrorType, capitalised as
// Bedrock names exceptions there; a type that is no Bedrock exception
// takes the status's; the message defaults to Bedrock's own.
func TestWireHTTPError(t *testing.T) {
	for _, tt := range []struct {
		f         codec.Failure
		typ, body string
	}{
		{codec.Failure{Status: 429, Type: "throttlingException"}, "ThrottlingException", `{"message":"Too many requests, please wait before trying again."}`},
		{codec.Failure{Status: 429, Type: "rate_limit_error", Message: "slow"}, "ThrottlingException", `{"message":"slow"}`},
		{codec.Failure{Status: 500, Type: "server_error"}, "InternalServerException", `{"message":"Internal Server Error"}`},
		{codec.Failure{Status: 400, Type: "ValidationException", Message: "bad"}, "ValidationException", `{"message":"bad"}`},
	} {
		body, h := Wire{}.HTTPError(tt.f)
		if got := h.Get("X-Amzn-Errortype"); !strings.HasPrefix(got, tt.typ+":") || string(body) != tt.body {
			t.Errorf("%+v: %q %s, want %s %s", tt.f, got, body, tt.typ, tt.body)
		}
	}
	if _, ok := (Wire{}).FailureStatus("rate_limit_error"); ok {
		t.Error("FailureStatus claims a type that is not Bedrock's")
	}
	var fs codec.FailureStatuser = Wire{}
	if s, ok := fs.FailureStatus("ThrottlingException"); !ok || s != 429 {
		t.Errorf("ThrottlingException: %d %v", s, ok)
	}
}
