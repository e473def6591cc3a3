package anthropic

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
// this wire as on OpenAI's (an over-long line was a plain error here).
func TestHostileBodiesHitClientLimits(t *testing.T) {
	const capBytes = 1 << 20
	start := sseEvent("message_start", `{"type":"message_start","message":{"usage":{"input_tokens":4,"output_tokens":1}}}`)
	token := sseEvent("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"tok "}}`)
	tests := []struct {
		name       string
		head, unit string
		zip        bool
		decodeSelf bool // the transport leaves the gzip to the client
		max        int64
		want       string
		text       bool // some reply text streams first
	}{
		{"data lines with no blank line", start + "event: content_block_delta\n", "data: " + strings.Repeat("x", 1000) + "\n", false, false, 0, "SSE event cap", false},
		{"one endless line", start + "data: ", "yyyyyyyyyyyyyyyy", false, false, 0, "SSE line cap", false},
		{"endless comments", start, ": keepalive\n", false, false, capBytes, "max reply bytes", false},
		{"endless pings", start, sseEvent("ping", `{"type":"ping"}`), false, false, capBytes, "max reply bytes", false},
		{"endless tokens", start, token, false, false, capBytes, "max reply bytes", true},
		{"gzip of newlines, decoded by the transport", start, "\n\n\n\n\n\n\n\n", true, false, capBytes, "max reply bytes", false},
		{"gzip of newlines, decoded by the client", start, "\n\n\n\n\n\n\n\n", true, true, capBytes, "max reply bytes", false},
		{"gzip of data lines, decoded by the client", start, "data: zzzzzzzzzzzzzzzzzzzzzzzzz\n", true, true, capBytes, "max reply bytes", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := hostiletest.EndlessServer(t, tt.head, tt.unit, tt.zip)
			hc := &httpx.Client{MaxReplyBytes: tt.max}
			if tt.decodeSelf {
				hc.HTTP = &http.Client{Transport: &http.Transport{DisableCompression: true}}
			}
			r := collect(t, context.Background(), newClient(t, srv.URL, hc), provider.Request{}, nil)
			if !errors.Is(r.err, provider.ErrLimit) || !errors.Is(r.err, provider.ErrIncomplete) || !strings.Contains(r.err.Error(), tt.want) {
				t.Fatalf("error %v, want a client limit naming %q", r.err, tt.want)
			}
			if (r.text != "") != tt.text || r.finish != nil {
				t.Errorf("text %q finish %v", r.text, r.finish)
			}
		})
	}
}
