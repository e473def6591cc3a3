package gemini_test

import (
	"net/http"
	"testing"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/gemini"
	"github.com/openmax/openmax/provider/httpx"
	"github.com/openmax/openmax/provider/internal/codectest"
	"github.com/openmax/openmax/provider/internal/providertest"
)

// TestContract runs the shared vendor-client contract on the Gemini wire,
// with replies written by the package's own encoder: on the Gemini API
// (the key in x-goog-api-key) and on Vertex AI (the same wire under a
// project and location, the token as a bearer).
func TestContract(t *testing.T) {
	for _, tt := range []struct {
		name              string
		project, location string
		path              func(model string) string
		headers           func(key string) http.Header
	}{
		{"gemini api", "", "",
			func(model string) string { return gemini.Path(model, true) },
			func(key string) http.Header { return http.Header{gemini.KeyHeader: {key}} }},
		{"vertex ai", "proj-1", "europe-west4",
			func(model string) string { return gemini.VertexPath("proj-1", "europe-west4", model, true) },
			func(key string) http.Header { return http.Header{"Authorization": {"Bearer " + key}} }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			providertest.Run(t, providertest.Vendor{
				Name: "gemini",
				New: func(base string, hc *httpx.Client, key string) (provider.Provider, error) {
					return gemini.New(gemini.Config{APIKey: key, BaseURL: base, Model: "gemini-test", Project: tt.project, Location: tt.location, HTTP: hc})
				},
				Path:    tt.path("gemini-test"),
				PathFor: tt.path,
				Query:   gemini.StreamQuery,
				Headers: tt.headers,
				Encoder: func(*provider.Usage) codectest.Encoder {
					return gemini.NewEncoder("resp-contract", "gemini-test")
				},
				HTTPErrorBody: gemini.HTTPErrorBody,
				ErrorEvent:    gemini.ErrorEvent,
				Stop:          gemini.FinishStop,
				ToolStop:      gemini.FinishStop,
				// The chunk with the finish reason completes the reply;
				// the wire has no terminator.
				FinishEndsReply: true,
				Truncated:       "stream ended before finishReason",
				NoEvents:        "response ended with no events",
				Malformed:       "gemini: bad event",
			})
		})
	}
}
