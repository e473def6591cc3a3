package responses_test

import (
	"net/http"
	"testing"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/httpx"
	"github.com/openmax/openmax/provider/internal/codectest"
	"github.com/openmax/openmax/provider/internal/providertest"
	"github.com/openmax/openmax/provider/openai/responses"
)

// TestContract runs the shared vendor-client contract on the Responses
// wire, with replies written by the package's own encoder.
func TestContract(t *testing.T) {
	providertest.Run(t, providertest.Vendor{
		Name: "responses",
		New: func(base string, hc *httpx.Client, key string) (provider.Provider, error) {
			return responses.New(responses.Config{APIKey: key, BaseURL: base, Model: "gpt-test", HTTP: hc})
		},
		Path:    responses.Path,
		Headers: func(key string) http.Header { return http.Header{"Authorization": {"Bearer " + key}} },
		Encoder: func(*provider.Usage) codectest.Encoder {
			return responses.NewEncoder("resp_contract", "gpt-test", 1767225600)
		},
		HTTPErrorBody: responses.HTTPErrorBody,
		ErrorEvent:    responses.ErrorEvent,
		Stop:          responses.FinishCompleted,
		ToolStop:      responses.FinishCompleted,
		// The terminal event (response.completed) completes a reply; the
		// encoder writes it in Close, not for the Finish part.
		FinishEndsReply: false,
		Truncated:       "stream ended before response.completed",
		NoEvents:        "response ended with no events",
		Malformed:       "responses: bad",
	})
}
