package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/internal/hostiletest"
)

// TestStreamLineOverLimit: a provider stream line longer than the
// client's SSE line cap ends the turn truncated on every wire (the
// contract's "exceeded a client limit"), with one error line naming the
// cap, and no tool dispatched. Two shapes per wire: the line as the first
// bytes of the body, and after reply text streamed (message_done due).
func TestStreamLineOverLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped in -short mode")
	}
	x := strings.Repeat("x", 4096)
	bin := buildBinary(t)
	for _, w := range []struct {
		name string
		hostileWire
	}{{"openai", openaiWire}, {"anthropic", anthropicWire}, {"responses", responsesWire}} {
		for _, afterText := range []bool{false, true} {
			name := w.name + "/before text"
			head := w.head
			if afterText {
				name = w.name + "/after text"
				head += w.token
			}
			t.Run(name, func(t *testing.T) {
				srv := httptestServer(t, hostiletest.Endless(head+"data: ", x, false, 0))
				r := runHostile(t, bin, w.hostileWire, srv, []string{"--max-attempts", "1"})
				checkHostileRun(t, r, wire.StopTruncated, "(SSE line cap)", afterText)
			})
		}
	}
}

func httptestServer(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}
