package fake

import (
	"strings"
	"testing"
)

// TestBedrockWholeFailureStatus: a whole (not streamed) Bedrock reply
// that fails in-stream answers with the status Bedrock gives that
// exception (the wire's codec.FailureStatuser) and names it in
// x-amzn-ErrorType; an error type Bedrock has no status for keeps the
// fake provider's default.
func TestBedrockWholeFailureStatus(t *testing.T) {
	for _, tt := range []struct {
		typ, path string
		status    int
		errorType string
		inMessage string
	}{
		{"throttlingException", "/model/m/converse", 429, "ThrottlingException", "Too many requests"},
		{"serviceUnavailableException", "/model/m/invoke", 503, "ServiceUnavailableException", "unable to process"},
		{"modelStreamErrorException", "/model/m/converse", 424, "ModelStreamErrorException", "boom"},
		{"overloaded_error", "/model/m/converse", 529, "ServiceUnavailableException", "boom"},
	} {
		t.Run(tt.typ, func(t *testing.T) {
			msg := "boom"
			if tt.inMessage != "boom" {
				msg = ""
			}
			h := start(t, "replies:\n  - chunks:\n      - stream_error: {type: "+tt.typ+", message: '"+msg+"'}\n")
			resp, body := h.read(tt.path, `{"messages":[{"role":"user","content":[{"text":"hi"}]}]}`)
			got := resp.Header.Get("X-Amzn-Errortype")
			if resp.StatusCode != tt.status || !strings.HasPrefix(got, tt.errorType+":") || !strings.Contains(body, tt.inMessage) {
				t.Errorf("status %d, x-amzn-ErrorType %q, body %s; want %d, %s", resp.StatusCode, got, body, tt.status, tt.errorType)
			}
		})
	}
}
