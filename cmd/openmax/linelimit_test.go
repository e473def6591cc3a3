package main

import (
	"encoding/json"
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
				var dones, messageDones int
				var errs []string
				for _, l := range r.lines {
					var ev struct {
						Type       string `json:"type"`
						StopReason string `json:"stop_reason"`
						Message    string `json:"message"`
					}
					if err := json.Unmarshal([]byte(l), &ev); err != nil {
						t.Fatalf("stdout line %q: %v", l, err)
					}
					switch ev.Type {
					case "done":
						dones++
						if ev.StopReason != wire.StopTruncated {
							t.Errorf("done %s, want stop_reason truncated", l)
						}
					case "message_done":
						messageDones++
					case "error":
						errs = append(errs, ev.Message)
					case "tool_start", "approval_request":
						t.Errorf("a tool was dispatched: %s", l)
					}
				}
				if dones != 1 {
					t.Errorf("%d done lines, want one:\n%s", dones, strings.Join(r.lines, "\n"))
				}
				if want := map[bool]int{false: 0, true: 1}[afterText]; messageDones != want {
					t.Errorf("%d message_done lines, want %d", messageDones, want)
				}
				if len(errs) != 1 || !strings.Contains(errs[0], "(SSE line cap)") {
					t.Errorf("error lines %q, want one naming the SSE line cap", errs)
				}
				if r.code != 0 {
					t.Errorf("exit %d, want 0; stderr:\n%s", r.code, r.stderr)
				}
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
