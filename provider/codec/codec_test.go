package codec_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/openmax/openmax/provider/codec"
)

// stub is a wire that says only what the registry asks: its Info, and
// which request paths, headers and bodies it claims. Its other methods
// are the nil embedded interface's (never called here).
type stub struct {
	codec.Wire
	info     codec.Info
	endpoint string // a path suffix it claims as an endpoint
	hint     string // a header it takes as a hint
	body     string // a body prefix it claims
}

func (s stub) Info() codec.Info { return s.info }

func (s stub) Claim(r *codec.Request) codec.Claim {
	switch {
	case s.endpoint != "" && strings.HasSuffix(r.Path(), s.endpoint):
		return codec.ClaimEndpoint
	case s.hint != "" && r.Header.Get(s.hint) != "":
		return codec.ClaimHint
	}
	return codec.ClaimNone
}

func (s stub) ClaimBody(_ string, body []byte) bool {
	return s.body != "" && strings.HasPrefix(string(body), s.body)
}

// The registry of this test binary: alpha (two wires, chat the default),
// beta, and gamma, which claims what beta claims.
func init() {
	codec.Register(stub{info: codec.Info{Name: "alpha", Provider: "alpha", API: "chat", Default: true, StreamType: "text/event-stream",
		CredentialEnv: []string{"ALPHA_KEY"}, SecretHeaders: []string{"X-Alpha-Key"}}, endpoint: "/chat", hint: "Alpha-Version", body: "alpha:"})
	codec.Register(stub{info: codec.Info{Name: "alpha-2", Provider: "alpha", API: "two", StreamType: "text/event-stream",
		CredentialEnv: []string{"ALPHA_KEY"}, SecretQuery: []string{"Key"}}, endpoint: "/two"})
	codec.Register(stub{info: codec.Info{Name: "beta", Provider: "beta", Default: true, StreamType: "application/vnd.amazon.eventstream",
		CredentialEnv: []string{"BETA_SECRET", "BETA_TOKEN"}}, endpoint: "/converse-stream", body: "shared:"})
	codec.Register(stub{info: codec.Info{Name: "gamma", Provider: "gamma", Default: true, StreamType: "text/event-stream"},
		hint: "Alpha-Version", body: "shared:"})
}

func TestForRequest(t *testing.T) {
	tests := []struct {
		name   string
		method string
		url    string
		header http.Header
		wire   string // "" for an error
		claim  codec.Claim
	}{
		{"an endpoint", "POST", "http://h/v1/chat", nil, "alpha", codec.ClaimEndpoint},
		{"an endpoint, query and all", "POST", "http://h/v1/chat?x=1", nil, "alpha", codec.ClaimEndpoint},
		{"another wire of the provider", "POST", "http://h/two", nil, "alpha-2", codec.ClaimEndpoint},
		{"a model in the path", "POST", "/model/anthropic.claude-v2/converse-stream", nil, "beta", codec.ClaimEndpoint},
		{"an endpoint beats a hint", "POST", "/converse-stream", http.Header{"Alpha-Version": {"1"}}, "beta", codec.ClaimEndpoint},
		{"an endpoint beats two hints", "POST", "/chat", http.Header{"Alpha-Version": {"1"}}, "alpha", codec.ClaimEndpoint},
		{"two hints alike", "POST", "/proxy", http.Header{"Alpha-Version": {"1"}}, "", codec.ClaimNone},
		{"nothing claims it", "POST", "/v2/foo", nil, "", codec.ClaimNone},
		{"a recorded URL that does not parse", "POST", "%zz/chat", nil, "alpha", codec.ClaimEndpoint},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, claim, err := codec.ForRequest(codec.RecordedRequest(tt.method, tt.url, tt.header))
			if tt.wire == "" {
				if !errors.Is(err, codec.ErrUnknownWire) || w != nil || claim != codec.ClaimNone {
					t.Fatalf("%v %v %v, want ErrUnknownWire", w, claim, err)
				}
				return
			}
			if err != nil || w.Info().Name != tt.wire || claim != tt.claim {
				t.Fatalf("%v %v %v, want %s %v", w, claim, err, tt.wire, tt.claim)
			}
		})
	}
}

func TestUnknownWireError(t *testing.T) {
	_, _, err := codec.ForRequest(codec.RecordedRequest("POST", "http://h/v2/foo", nil))
	if want := "POST /v2/foo: no registered vendor wire claims it (known: alpha, alpha-2, beta, gamma)"; err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
	_, _, err = codec.ForRequest(codec.RecordedRequest("POST", "/proxy", http.Header{"Alpha-Version": {"1"}}))
	if want := "POST /proxy: the wires alpha and gamma all claim it, and none more surely"; err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
}

func TestForRecording(t *testing.T) {
	tests := []struct {
		name, url, body string
		wire            string // "" for an error
	}{
		{"by its request", "/v1/chat", "shared:x", "alpha"},
		{"by its body", "/proxy", "alpha: hi", "alpha"},
		{"a body two wires claim", "/proxy", "shared: hi", ""},
		{"a body none claims", "/proxy", "data: {}\n\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := codec.ForRecording(codec.RecordedRequest("POST", tt.url, nil), "", []byte(tt.body))
			if tt.wire == "" {
				if !errors.Is(err, codec.ErrUnknownWire) || w != nil {
					t.Fatalf("%v %v, want ErrUnknownWire", w, err)
				}
				return
			}
			if err != nil || w.Info().Name != tt.wire {
				t.Fatalf("%v %v, want %s", w, err, tt.wire)
			}
		})
	}
	// Two hints alike are no answer either, whatever the body says.
	if w, err := codec.ForRecording(codec.RecordedRequest("POST", "/proxy", http.Header{"Alpha-Version": {"1"}}), "", []byte("alpha:")); err == nil {
		t.Errorf("two hints: %v", w.Info().Name)
	}
}

func TestForProvider(t *testing.T) {
	tests := []struct {
		provider, api string
		wire          string // "" for an error
		err           string
	}{
		{"alpha", "", "alpha", ""},
		{"alpha", "chat", "alpha", ""},
		{"alpha", "two", "alpha-2", ""},
		{"beta", "", "beta", ""},
		{"alpha", "three", "", `unknown --api "three" for --provider alpha (known: chat, two)`},
		{"beta", "chat", "", "--provider beta has no --api"},
		{"delta", "", "", `no wire for --provider "delta" (known: alpha, beta, gamma)`},
	}
	for _, tt := range tests {
		w, err := codec.ForProvider(tt.provider, tt.api)
		switch {
		case tt.wire != "" && (err != nil || w.Info().Name != tt.wire):
			t.Errorf("ForProvider(%q, %q) = %v, %v; want %s", tt.provider, tt.api, w, err, tt.wire)
		case tt.wire == "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("ForProvider(%q, %q) = %v, %v; want an error %q", tt.provider, tt.api, w, err, tt.err)
		}
	}
	if got := strings.Join(codec.APIs("alpha"), ","); got != "chat,two" {
		t.Errorf("APIs(alpha) = %s", got)
	}
	if got := strings.Join(codec.Providers(), ","); got != "alpha,beta,gamma" {
		t.Errorf("Providers() = %s", got)
	}
}

func TestSecrets(t *testing.T) {
	if got := strings.Join(codec.CredentialEnv(), ","); got != "ALPHA_KEY,BETA_SECRET,BETA_TOKEN" {
		t.Errorf("CredentialEnv() = %s", got)
	}
	if got := strings.Join(codec.SecretHeaders(), ","); got != "x-alpha-key" {
		t.Errorf("SecretHeaders() = %s", got)
	}
	if got := strings.Join(codec.SecretQuery(), ","); got != "key" {
		t.Errorf("SecretQuery() = %s", got)
	}
}

func TestRegisterRefuses(t *testing.T) {
	tests := []struct {
		name string
		w    codec.Wire
	}{
		{"nil", nil},
		{"no name", stub{info: codec.Info{Provider: "p", StreamType: "t"}}},
		{"no provider", stub{info: codec.Info{Name: "n", StreamType: "t"}}},
		{"no stream type", stub{info: codec.Info{Name: "n", Provider: "p"}}},
		{"a name taken", stub{info: codec.Info{Name: "beta", Provider: "p", StreamType: "t"}}},
		{"a provider and api taken", stub{info: codec.Info{Name: "n", Provider: "alpha", API: "two", StreamType: "t"}}},
		{"a second default", stub{info: codec.Info{Name: "n", Provider: "alpha", API: "three", Default: true, StreamType: "t"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("Register did not panic")
				}
			}()
			codec.Register(tt.w)
		})
	}
	if len(codec.Wires()) != 4 {
		t.Errorf("%d wires registered after the refusals", len(codec.Wires()))
	}
}

// TestConcurrentLookups: lookups from many goroutines at once agree (run
// it under -race).
func TestConcurrentLookups(t *testing.T) {
	done := make(chan string)
	for g := 0; g < 8; g++ {
		go func() {
			got := ""
			for i := 0; i < 1000; i++ {
				w, _, err := codec.ForRequest(codec.RecordedRequest("POST", "/v1/chat", nil))
				if err != nil {
					got = err.Error()
					break
				}
				if _, ok := codec.Lookup("beta"); !ok || len(codec.Wires()) != 4 || len(codec.SecretHeaders()) != 1 {
					got = "lookup"
					break
				}
				got = w.Info().Name
			}
			done <- got
		}()
	}
	for g := 0; g < 8; g++ {
		if got := <-done; got != "alpha" {
			t.Errorf("goroutine got %q", got)
		}
	}
}
