package bedrock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/bedrock/sigv4"
	"github.com/openmax/openmax/provider/clock"
	"github.com/openmax/openmax/provider/httpx"
	"github.com/openmax/openmax/provider/retry"
)

// The credentials of the signing tests; no error, part or printed value
// may show the secret or the token.
var testCreds = sigv4.Credentials{AccessKeyID: "AKIDTEST", SecretAccessKey: "secret-KEY-must-not-leak-4f2a", SessionToken: "session-TOKEN-must-not-leak-91c0"}

var epoch = time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC)

// okReply is a complete Converse reply.
var okReply = cStart + cText(0, "ok") + cEnd("end_turn") + cMeta

// collectParts runs one stream to its end.
func collectParts(c provider.Provider) []provider.Part {
	var parts []provider.Part
	for p := range c.Stream(context.Background(), provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Text: "hi"}}}) {
		parts = append(parts, p)
	}
	return parts
}

// TestSignedRequest: a client with an access key signs each request with
// SigV4 for its region and bedrock, at the injected clock's time, over
// exactly what goes on the wire (host, the escaped model path, the body,
// the headers it lists); the session token goes in X-Amz-Security-Token;
// the secret never goes out.
func TestSignedRequest(t *testing.T) {
	type seen struct {
		r    *http.Request
		body []byte
	}
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r, b}
		w.Header().Set("Content-Type", ContentType)
		io.WriteString(w, okReply)
	}))
	defer srv.Close()
	fake := clock.NewFake(epoch)
	for _, api := range []API{APIConverse, APIInvoke} {
		t.Run(string(api), func(t *testing.T) {
			c, err := New(Config{API: api, Region: "eu-west-3", BaseURL: srv.URL, Model: "us.amazon.nova-micro-v1:0", Credentials: testCreds, HTTP: &httpx.Client{Clock: fake}})
			if err != nil {
				t.Fatal(err)
			}
			if api == APIConverse {
				if parts := collectParts(c); errorOf(parts) != nil {
					t.Fatalf("parts %v", parts)
				}
			} else {
				collectParts(c) // the Converse reply is no invoke reply; only the request matters
			}
			s := <-got
			if want := Path(api, "us.amazon.nova-micro-v1:0"); s.r.URL.EscapedPath() != want || !strings.Contains(want, "nova-micro-v1%3A0") {
				t.Errorf("path %s, want %s", s.r.URL.EscapedPath(), want)
			}
			auth := s.r.Header.Get("Authorization")
			wantPrefix := "AWS4-HMAC-SHA256 Credential=AKIDTEST/20260301/eu-west-3/bedrock/aws4_request, SignedHeaders=accept;content-type;host;x-amz-date;x-amz-security-token, Signature="
			if !strings.HasPrefix(auth, wantPrefix) {
				t.Fatalf("Authorization %q", auth)
			}
			if s.r.Header.Get("X-Amz-Date") != "20260301T093000Z" || s.r.Header.Get("X-Amz-Security-Token") != testCreds.SessionToken {
				t.Errorf("X-Amz-Date %q, token %q", s.r.Header.Get("X-Amz-Date"), s.r.Header.Get("X-Amz-Security-Token"))
			}
			// Sign what the server received, the way a verifier would.
			h := http.Header{"Accept": s.r.Header.Values("Accept"), "Content-Type": s.r.Header.Values("Content-Type")}
			sigv4.Sign(sigv4.Request{Method: s.r.Method, Host: s.r.Host, Path: s.r.URL.EscapedPath(), Query: s.r.URL.RawQuery, Header: h, Payload: s.body}, testCreds, "eu-west-3", "bedrock", epoch)
			if h.Get("Authorization") != auth {
				t.Errorf("the signature does not cover what was sent:\n sent     %s\n computed %s", auth, h.Get("Authorization"))
			}
			for k, vs := range s.r.Header {
				if strings.Contains(strings.Join(vs, " "), testCreds.SecretAccessKey) {
					t.Errorf("header %s carries the secret", k)
				}
			}
			if strings.Contains(string(s.body), testCreds.SecretAccessKey) || strings.Contains(string(s.body), testCreds.SessionToken) {
				t.Errorf("the body carries a secret")
			}
		})
	}
}

// TestSecretsNeverLeak: servers that echo the secret key and the session
// token in every place an error's text comes from get them [redacted],
// the error keeping its type; printing a client or its configuration
// shows neither.
func TestSecretsNeverLeak(t *testing.T) {
	echo := "key " + testCreds.SecretAccessKey + " token " + testCreds.SessionToken
	redacted := "key [redacted] token [redacted]"
	tests := []struct {
		name    string
		status  int
		ctype   string
		header  http.Header
		body    string
		want    error
		invoked bool
	}{
		{"HTTP error", 403, "application/json", HTTPErrorHeader(403, "UnrecognizedClientException"), string(HTTPErrorBody(403, "", echo)),
			&provider.HTTPError{Status: 403, Code: "UnrecognizedClientException", Message: redacted}, false},
		{"plain-text error", 502, "text/plain", nil, echo, &provider.HTTPError{Status: 502, Message: redacted}, false},
		{"exception", 200, ContentType, nil, cStart + exc("validationException", echo), &provider.StreamError{Type: "validationException", Message: redacted}, false},
		{"error with status 200", 200, "application/json", HTTPErrorHeader(200, "ValidationException"), string(HTTPErrorBody(400, "", echo)),
			&provider.StreamError{Type: "ValidationException", Message: redacted}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for k, vs := range tt.header {
					w.Header()[k] = vs
				}
				w.Header().Set("Content-Type", tt.ctype)
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			c, err := New(Config{BaseURL: srv.URL, Model: "m", Credentials: testCreds})
			if err != nil {
				t.Fatal(err)
			}
			parts := collectParts(c)
			if want := []provider.Part{provider.Error{Err: tt.want}}; !reflect.DeepEqual(parts, want) {
				t.Fatalf("parts %#v, want %#v", parts, want)
			}
		})
	}
	cfg := Config{Model: "m", Credentials: testCreds, APIKey: "bearer-KEY-must-not-leak-7d"}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{fmt.Sprint(c), fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", c), fmt.Sprint(cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg)} {
		for _, secret := range []string{testCreds.SecretAccessKey, testCreds.SessionToken, cfg.APIKey} {
			if strings.Contains(s, secret) {
				t.Errorf("printing shows a secret: %s", s)
			}
		}
	}
}

// TestNew: the configuration's checks and defaults.
func TestNew(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		err     string
		missing bool
		url     string
		api     API
	}{
		{"no credentials", Config{Model: "m"}, "missing API key", true, "", ""},
		{"a key id without its secret", Config{Model: "m", Credentials: sigv4.Credentials{AccessKeyID: "A"}}, "missing API key", true, "", ""},
		{"no model", Config{APIKey: "k"}, "no model", false, "", ""},
		{"unknown API", Config{APIKey: "k", Model: "m", API: "chat"}, `unknown API "chat"`, false, "", ""},
		{"defaults", Config{APIKey: "k", Model: "m"}, "", false, "https://bedrock-runtime.us-east-1.amazonaws.com", APIConverse},
		{"region", Config{Credentials: testCreds, Model: "m", Region: "ap-south-1", API: APIInvoke}, "", false, "https://bedrock-runtime.ap-south-1.amazonaws.com", APIInvoke},
		{"base URL", Config{APIKey: "k", Model: "m", BaseURL: "http://127.0.0.1:9/"}, "", false, "http://127.0.0.1:9", APIConverse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(tt.cfg)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || errors.Is(err, provider.ErrMissingKey) != tt.missing {
					t.Fatalf("error %v, want one saying %q", err, tt.err)
				}
				return
			}
			if err != nil || c.base != tt.url || c.api != tt.api {
				t.Fatalf("client %v, err %v", c, err)
			}
		})
	}
}

// TestConfigFromEnv: the credentials, region and API key come from AWS's
// variables, AWS_REGION before AWS_DEFAULT_REGION.
func TestConfigFromEnv(t *testing.T) {
	env := map[string]string{EnvAccessKeyID: "AKID", EnvSecretAccessKey: "S", EnvSessionToken: "T", EnvDefaultRegion: "eu-north-1", EnvBearerToken: "B"}
	cfg := ConfigFromEnv(APIInvoke, func(k string) string { return env[k] })
	want := Config{API: APIInvoke, Region: "eu-north-1", APIKey: "B", Credentials: sigv4.Credentials{AccessKeyID: "AKID", SecretAccessKey: "S", SessionToken: "T"}}
	if !reflect.DeepEqual(cfg, want) {
		t.Fatalf("%#v", cfg)
	}
	env[EnvRegion] = "us-west-2"
	if cfg := ConfigFromEnv(APIConverse, func(k string) string { return env[k] }); cfg.Region != "us-west-2" {
		t.Fatalf("region %q", cfg.Region)
	}
}

// TestReadHTTPError: where the code and message of an AWS error are
// found.
func TestReadHTTPError(t *testing.T) {
	tests := []struct {
		name      string
		header    http.Header
		body      string
		code, msg string
	}{
		{"x-amzn-ErrorType with its URI", http.Header{"X-Amzn-Errortype": {"ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/"}},
			`{"message":"Too many requests, please wait before trying again."}`, "ThrottlingException", "Too many requests, please wait before trying again."},
		{"__type with a namespace", nil, `{"__type":"com.amazonaws.bedrock#ValidationException","Message":"bad"}`, "ValidationException", "bad"},
		{"code in the body", nil, `{"code":"AccessDeniedException","message":"no"}`, "AccessDeniedException", "no"},
		{"the header wins over the body", http.Header{"X-Amzn-Errortype": {"ModelNotReadyException"}}, `{"__type":"Other","message":"m"}`, "ModelNotReadyException", "m"},
		{"not JSON", nil, "  <html>Bad gateway</html>\n", "", "<html>Bad gateway</html>"},
		{"JSON without a message", nil, `{"Output":{"__type":"x"}}`, "", `{"Output":{"__type":"x"}}`},
		{"a long body is cut", nil, strings.Repeat("x", 300), "", strings.Repeat("x", 200) + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			he := &provider.HTTPError{Status: 400}
			ReadHTTPError(he, tt.header, []byte(tt.body))
			if he.Code != tt.code || he.Message != tt.msg {
				t.Fatalf("code %q message %q, want %q %q", he.Code, he.Message, tt.code, tt.msg)
			}
		})
	}
}

// TestRetryRules: each AWS error, as an HTTP error with Bedrock's status
// and header or as an exception in a stream before any text, is resent by
// provider/retry exactly when errors.go's table says.
func TestRetryRules(t *testing.T) {
	tests := []struct {
		code    string
		status  int // 200: an exception in the stream
		retried bool
	}{
		{"ThrottlingException", 429, true},
		{"ModelNotReadyException", 429, true},
		{"ServiceUnavailableException", 503, true},
		{"InternalServerException", 500, true},
		{"ModelTimeoutException", 408, false},
		{"ModelErrorException", 424, false},
		{"ValidationException", 400, false},
		{"ServiceQuotaExceededException", 400, false},
		{"AccessDeniedException", 403, false},
		{"UnrecognizedClientException", 403, false},
		{"ResourceNotFoundException", 404, false},
		{"throttlingException", 200, true},
		{"serviceUnavailableException", 200, true},
		{"internalServerException", 200, true},
		{"modelTimeoutException", 200, true},
		{"modelStreamErrorException", 200, false},
		{"validationException", 200, false},
	}
	for _, tt := range tests {
		t.Run(tt.code, func(t *testing.T) {
			n := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n++
				if tt.status == 200 {
					w.Header().Set("Content-Type", ContentType)
					io.WriteString(w, cStart+exc(tt.code, "failed"))
					return
				}
				for k, vs := range HTTPErrorHeader(tt.status, tt.code) {
					w.Header()[k] = vs
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tt.status)
				w.Write(HTTPErrorBody(tt.status, tt.code, "failed"))
			}))
			defer srv.Close()
			c, err := New(Config{BaseURL: srv.URL, Model: "m", APIKey: "k"})
			if err != nil {
				t.Fatal(err)
			}
			fake := clock.NewFake(epoch)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var last error
			for p := range retry.New(c, retry.Policy{MaxAttempts: 2}, fake).Stream(ctx, provider.Request{}) {
				switch p := p.(type) {
				case provider.Retry:
					go func() {
						if fake.BlockUntil(ctx, 1) == nil {
							fake.Advance(time.Minute)
						}
					}()
				case provider.Error:
					last = p.Err
				}
			}
			want := 1
			if tt.retried {
				want = 2
			}
			if n != want || last == nil || !strings.Contains(last.Error(), tt.code) {
				t.Fatalf("%d requests (want %d), error %v", n, want, last)
			}
		})
	}
}

// TestWholeJSONReply: a 2xx reply that is one JSON document instead of
// an event stream is Bedrock's error when it reads as one, else a plain
// error saying what came.
func TestWholeJSONReply(t *testing.T) {
	for _, tt := range []struct {
		name, body string
		want       string
		stream     bool
	}{
		{"an error object", `{"message":"Model is getting throttled."}`, "Model is getting throttled.", true},
		{"a whole reply", `{"output":{"message":{"role":"assistant","content":[]}},"stopReason":"end_turn"}`, "bedrock: expected an event stream, got application/json", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			c, _ := New(Config{BaseURL: srv.URL, Model: "m", APIKey: "k"})
			err := errorOf(collectParts(c))
			var se *provider.StreamError
			if err == nil || !strings.Contains(err.Error(), tt.want) || errors.As(err, &se) != tt.stream || errors.Is(err, provider.ErrIncomplete) {
				t.Fatalf("error %v (%T)", err, err)
			}
		})
	}
}

// TestParsePath: the runtime paths, streaming or not, name their model
// (escaped as AWS's SDKs escape it, or not at all) and operation.
func TestParsePath(t *testing.T) {
	tests := []struct {
		path   string
		model  string
		api    API
		stream bool
		ok     bool
	}{
		{"/model/us.amazon.nova-micro-v1%3A0/converse-stream", "us.amazon.nova-micro-v1:0", APIConverse, true, true},
		{"/model/us.anthropic.claude-haiku-4-5-20251001-v1%3A0/invoke-with-response-stream", "us.anthropic.claude-haiku-4-5-20251001-v1:0", APIInvoke, true, true},
		{"/model/us.amazon.nova-micro-v1:0/converse", "us.amazon.nova-micro-v1:0", APIConverse, false, true},
		{"/proxy/model/m/invoke", "m", APIInvoke, false, true},
		{"/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A1%3Ainference-profile%2Fx/converse-stream", "arn:aws:bedrock:us-east-1:1:inference-profile/x", APIConverse, true, true},
		{"/model/m/converse-stream?x=1", "m", APIConverse, true, true},
		{"/model//converse-stream", "", "", false, false},
		{"/model/m/count-tokens", "", "", false, false},
		{"/v1/messages", "", "", false, false},
	}
	for _, tt := range tests {
		m, api, stream, ok := ParseRequestPath(tt.path)
		if m != tt.model || api != tt.api || stream != tt.stream || ok != tt.ok {
			t.Errorf("ParseRequestPath(%q) = %q %q %v %v", tt.path, m, api, stream, ok)
		}
		if tt.ok && tt.stream {
			if got := Path(api, m); !strings.HasSuffix(strings.TrimSuffix(tt.path, "?x=1"), got) {
				t.Errorf("Path(%q, %q) = %q", api, m, got)
			}
		}
	}
}

// TestStreamFailure: the fake provider's in-stream failures: the default
// is a transient one the retry policy resends, with Bedrock's message.
func TestStreamFailure(t *testing.T) {
	for _, tt := range []struct {
		code, typ, msg string
		ok             bool
	}{
		{"", "serviceUnavailableException", "Bedrock is unable to process your request.", true},
		{"throttlingException", "throttlingException", "Too many requests, please wait before trying again.", true},
		{"validationException", "validationException", "", false},
	} {
		se, ok := StreamFailure(tt.code)
		if se.Type != tt.typ || se.Message != tt.msg || ok != tt.ok {
			t.Errorf("StreamFailure(%q) = %+v, %v", tt.code, se, ok)
		}
	}
	for status, typ := range map[int]string{429: "throttlingException", 503: "serviceUnavailableException", 500: "internalServerException",
		408: "modelTimeoutException", 424: "modelStreamErrorException", 400: "validationException"} {
		if got := ExceptionType(status); got != typ {
			t.Errorf("ExceptionType(%d) = %q, want %q", status, got, typ)
		}
	}
	for status, typ := range map[int]string{429: "ThrottlingException", 503: "ServiceUnavailableException", 500: "InternalServerException",
		502: "InternalServerException", 400: "ValidationException", 403: "AccessDeniedException", 404: "ResourceNotFoundException", 418: "ValidationException"} {
		if got := ErrorType(status); got != typ {
			t.Errorf("ErrorType(%d) = %q, want %q", status, got, typ)
		}
	}
}
