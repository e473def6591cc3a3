package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/openmax/openmax/core/wire"
)

// TestFramingEdgesThroughBinary: what the real binary answers on stdin
// lines at the edges of the framing rules. The CR of a CRLF ending does not
// count toward the 8 MiB cap; lines of whitespace that is not JSON
// whitespace are bad lines (protocol_error), not blank ones.
func TestFramingEdgesThroughBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped in -short mode")
	}
	bin := buildBinary(t)
	pad := func(total int) string { // a cancel command of exactly total bytes
		head, tail := `{"cmd":"cancel","pad":"`, `"}`
		return head + strings.Repeat("x", total-len(head)-len(tail)) + tail
	}
	lines := []string{
		pad(wire.MaxLine) + "\r",                 // 1: exactly the cap, then CRLF: accepted
		pad(wire.MaxLine+1) + "\r",               // 2: one over: refused
		" \t\r",                                  // 3: JSON whitespace: skipped
		"\v", "\f", "\u00a0", "\u2028", "\u3000", // 4-8: bad lines
		`{"cmd":"quit"}`, // 9
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--stdio", "--provider", "echo", "--project", t.TempDir())
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir())
	cmd.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("exit: %v\nstderr: %s", err, stderr.String())
	}
	answered := map[int]string{}
	for _, l := range strings.Split(strings.TrimSpace(stdout.String()), "\n")[1:] {
		var pe struct{ Type, Message string }
		if err := jsonUnmarshal(l, &pe); err != nil || pe.Type != "protocol_error" {
			t.Errorf("unexpected line %.200s", l)
			continue
		}
		n, ok := wire.AnsweredLine(pe.Message)
		if !ok {
			t.Errorf("protocol_error names no line: %s", l)
		}
		answered[n] = pe.Message
	}
	want := map[int]bool{2: true, 4: true, 5: true, 6: true, 7: true, 8: true}
	for n := 1; n <= len(lines); n++ {
		if _, got := answered[n]; got != want[n] {
			t.Errorf("line %d: protocol_error %v (%q), want %v", n, got, answered[n], want[n])
		}
	}
	if m := answered[2]; !strings.Contains(m, "8388609 bytes") {
		t.Errorf("line 2's refusal does not give its size without the CR: %q", m)
	}
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }
