package recorder

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// TestScrubFuncBody: the body ScrubFunc returns is the scrubbed text; one
// with nothing to scrub comes back as the slice given (no copy), one with
// a secret as a new slice, the caller's bytes untouched.
func TestScrubFuncBody(t *testing.T) {
	const key = "sk-live-0123456789abcdef"
	tests := []struct {
		name     string
		patterns []*regexp.Regexp
		header   http.Header
		body     string
		want     string
		same     bool // the given slice comes back
	}{
		{"nothing to scrub", nil, http.Header{"Content-Type": {"application/json"}}, `{"model":"m"}`, `{"model":"m"}`, true},
		{"a secret header's value in the body", nil, http.Header{"Authorization": {"Bearer " + key}}, `{"echo":"` + key + `"}`, `{"echo":"` + Scrubbed + `"}`, false},
		{"a user pattern", []*regexp.Regexp{regexp.MustCompile(`tok-[0-9]+`)}, nil, `{"t":"tok-42"}`, `{"t":"` + Scrubbed + `"}`, false},
		{"a pattern that does not occur", []*regexp.Regexp{regexp.MustCompile(`tok-[0-9]+`)}, nil, `{"t":"none"}`, `{"t":"none"}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := []byte(tt.body)
			_, _, got := ScrubFunc(tt.patterns)("POST", "https://api.example.com/v1/x", tt.header, body)
			if string(got) != tt.want {
				t.Fatalf("body %q, want %q", got, tt.want)
			}
			if same := len(got) > 0 && &got[0] == &body[0]; same != tt.same {
				t.Fatalf("the given slice came back: %v, want %v", same, tt.same)
			}
			if string(body) != tt.body {
				t.Fatalf("the caller's body changed to %q", body)
			}
			if strings.Contains(string(got), key) {
				t.Fatal("the secret is still there")
			}
		})
	}
}
