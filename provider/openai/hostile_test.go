package openai

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/openmax/openmax/internal/hostiletest"
	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/httpx"
)

// TestHostileBodiesHitClientLimits: bodies that never end (issue 9) end
// the reply with a client-limit error, an incomplete reply the engine
// reports as truncated and the retry policy never resends: the same on
// this wire as on Anthropic's.
func TestHostileBodiesHitClientLimits(t *testing.T) {
	const capBytes = 1 << 20
	tests := []struct {
		name       string
		head, unit string
		zip        bool
		decodeSelf bool // the transport leaves the gzip to the client
		max        int64
		want       string
		text       bool // some reply text streams first
	}{
		{"data lines with no blank line", "", "data: " + strings.Repeat("x", 1000) + "\n", false, false, 0, "SSE event cap", false},
		{"one endless line", "data: ", "yyyyyyyyyyyyyyyy", false, false, 0, "SSE line cap", false},
		{"endless comments", "", ": keepalive\n", false, false, capBytes, "max reply bytes", false},
		{"endless blank lines", "", "\n", false, false, capBytes, "max reply bytes", false},
		{"endless tokens", "", "data: " + text("tok ") + "\n\n", false, false, capBytes, "max reply bytes", true},
		{"gzip of newlines, decoded by the transport", "", "\n\n\n\n\n\n\n\n", true, false, capBytes, "max reply bytes", false},
		{"gzip of newlines, decoded by the client", "", "\n\n\n\n\n\n\n\n", true, true, capBytes, "max reply bytes", false},
		{"gzip of data lines, decoded by the client", "", "data: zzzzzzzzzzzzzzzzzzzzzzzzz\n", true, true, capBytes, "max reply bytes", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := hostiletest.EndlessServer(t, tt.head, tt.unit, tt.zip)
			hc := &httpx.Client{MaxReplyBytes: tt.max}
			if tt.decodeSelf {
				hc.HTTP = &http.Client{Transport: &http.Transport{DisableCompression: true}}
			}
			got := run(t, context.Background(), newClient(t, srv.URL, hc), simpleReq)
			if !errors.Is(got.Err, provider.ErrLimit) || !errors.Is(got.Err, provider.ErrIncomplete) || !strings.Contains(got.Err.Error(), tt.want) {
				t.Fatalf("error %v, want a client limit naming %q", got.Err, tt.want)
			}
			if (got.Text != "") != tt.text || got.Finish != nil {
				t.Errorf("outcome %s", show(got))
			}
		})
	}
}
