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
// with replies written by the package's own encoder.
func TestContract(t *testing.T) {
	providertest.Run(t, providertest.Vendor{
		Name: "gemini",
		New: func(base string, hc *httpx.Client, key string) (provider.Provider, error) {
			return gemini.New(gemini.Config{APIKey: key, BaseURL: base, Model: "gemini-test", HTTP: hc})
		},
		Path:    gemini.Path("gemini-test", true),
		PathFor: func(model string) string { return gemini.Path(model, true) },
		Query:   gemini.StreamQuery,
		Headers: func(key string) http.Header { return http.Header{gemini.KeyHeader: {key}} },
		Encoder: func(*provider.Usage) codectest.Encoder {
			return gemini.NewEncoder("resp-contract", "gemini-test")
		},
		HTTPErrorBody: gemini.HTTPErrorBody,
		ErrorEvent:    gemini.ErrorEvent,
		Stop:          gemini.FinishStop,
		ToolStop:      gemini.FinishStop,
		// The chunk with the finish reason completes the reply; the wire
		// has no terminator.
		FinishEndsReply: true,
		Truncated:       "stream ended before finishReason",
		NoEvents:        "response ended with no events",
		Malformed:       "gemini: bad event",
	})
}

// TestContractVertex runs the contract on Vertex AI: the same wire under a
// project and location, the token as a bearer.
func TestContractVertex(t *testing.T) {
	providertest.Run(t, providertest.Vendor{
		Name: "gemini",
		New: func(base string, hc *httpx.Client, key string) (provider.Provider, error) {
			return gemini.New(gemini.Config{APIKey: key, BaseURL: base, Model: "gemini-test", Project: "proj-1", Location: "europe-west4", HTTP: hc})
		},
		Path:    gemini.VertexPath("proj-1", "europe-west4", "gemini-test", true),
		PathFor: func(model string) string { return gemini.VertexPath("proj-1", "europe-west4", model, true) },
		Query:   gemini.StreamQuery,
		Headers: func(key string) http.Header { return http.Header{"Authorization": {"Bearer " + key}} },
		Encoder: func(*provider.Usage) codectest.Encoder {
			return gemini.NewEncoder("resp-contract", "gemini-test")
		},
		HTTPErrorBody:   gemini.HTTPErrorBody,
		ErrorEvent:      gemini.ErrorEvent,
		Stop:            gemini.FinishStop,
		ToolStop:        gemini.FinishStop,
		FinishEndsReply: true,
		Truncated:       "stream ended before finishReason",
		NoEvents:        "response ended with no events",
		Malformed:       "gemini: bad event",
	})
}
