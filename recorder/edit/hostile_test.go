package edit

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	vcr "github.com/dnaeon/go-vcr/v2/cassette"

	"github.com/openmax/openmax/recorder/cassette"
)

// TestShowNeverPrintsSecrets: a cassette recorded by another tool (or
// before the recorder scrubbed them) may hold credentials; show prints
// neither a secret header's value nor a URL's user information or key.
func TestShowNeverPrintsSecrets(t *testing.T) {
	f := cassette.New()
	f.Session = &cassette.Session{SessionID: "s", Args: []string{
		"--provider", "openai", "--base-url", "http://alice:hunter2-pass@127.0.0.1:9/v1?key=AIzaSy-arg-secret&alt=sse",
		"--base-url=https://sk-user-secret@h/v1",
	}}
	f.Interactions = []*cassette.Interaction{{
		Request: vcr.Request{Method: "POST", URL: "http://h/v1/chat/completions?key=AIzaSy-url-secret"},
		Response: vcr.Response{Code: 200, Status: "200 OK", Body: "{}", Headers: http.Header{
			"X-Request-Id-Token":           {"req-token-secret"},
			"X-Request-Id":                 {"req_123"},
			"X-Ratelimit-Remaining-Tokens": {"42"},
		}},
	}}
	var b bytes.Buffer
	if err := Show(&b, f); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, s := range []string{"hunter2", "alice", "AIzaSy", "sk-user-secret", "req-token-secret"} {
		if strings.Contains(out, s) {
			t.Errorf("show printed %q:\n%s", s, out)
		}
	}
	for _, s := range []string{"header X-Request-Id-Token: [scrubbed]", "header X-Request-Id: req_123", "header X-Ratelimit-Remaining-Tokens: 42", "alt=sse", "--base-url=https://%5Bscrubbed%5D@h/v1"} {
		if !strings.Contains(out, s) {
			t.Errorf("show does not print %q:\n%s", s, out)
		}
	}
}
