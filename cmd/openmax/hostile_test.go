package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/internal/hostiletest"
)

// Hostile providers (issue 9, points 1 and 3): each case is a tiny
// loopback server that misbehaves one way, and the real binary must end
// the turn with exactly one done of the expected stop_reason, an error
// line naming the limit that ended it, no tool dispatched, and exit once
// stdin is closed, with its peak RSS bounded. The flags are short so the
// cases finish fast; the defaults are checked by the same mechanisms in
// provider/httpx and provider/sse.

// hostileWire is one vendor API the harness speaks.
type hostileWire struct {
	provider, keyEnv, path string
	flags                  []string // the wire's own flags
	head                   string   // what a well-behaved reply starts with
	token                  string   // one reply-text event
}

var (
	openaiWire = hostileWire{
		provider: "openai", keyEnv: "OPENAI_API_KEY", path: "/v1",
		token: `data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"tok "},"finish_reason":null}]}` + "\n\n",
	}
	responsesWire = hostileWire{
		provider: "openai", keyEnv: "OPENAI_API_KEY", path: "/v1", flags: []string{"--api", "responses"},
		head:  "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"status\":\"in_progress\",\"output\":[]}}\n\n",
		token: "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":1,\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":\"tok \"}\n\n",
	}
	anthropicWire = hostileWire{
		provider: "anthropic", keyEnv: "ANTHROPIC_API_KEY",
		head:  "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":4,\"output_tokens\":1}}}\n\n",
		token: "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"tok \"}}\n\n",
	}
)

// noHeaders takes the request and never answers it.
func noHeaders(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	<-r.Context().Done()
}

func TestHostileProviders(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped in -short mode")
	}
	t.Parallel() // waits on child processes: overlaps the package's other slow tests
	dataLines := "data: " + strings.Repeat("x", 1000) + "\n"
	tests := []struct {
		name    string
		wire    hostileWire
		handler func(w hostileWire) http.HandlerFunc
		flags   []string
		stop    string
		errHas  string
		text    bool // reply text streamed first, so a message_done is due
	}{
		{"no headers (openai)", openaiWire, func(hostileWire) http.HandlerFunc { return noHeaders },
			[]string{"--header-timeout", "200ms", "--max-attempts", "1"}, wire.StopError, "no response headers within 200ms (header timeout)", false},
		{"no headers (anthropic)", anthropicWire, func(hostileWire) http.HandlerFunc { return noHeaders },
			[]string{"--header-timeout", "200ms", "--max-attempts", "1"}, wire.StopError, "no response headers within 200ms (header timeout)", false},
		{"data lines with no blank line (openai)", openaiWire, func(w hostileWire) http.HandlerFunc { return hostiletest.Endless(w.head, dataLines, false, 0) },
			nil, wire.StopTruncated, "passed 16 MiB with no blank line to end it (SSE event cap)", false},
		{"data lines with no blank line (anthropic)", anthropicWire, func(w hostileWire) http.HandlerFunc {
			return hostiletest.Endless(w.head+"event: content_block_delta\n", dataLines, false, 0)
		}, nil, wire.StopTruncated, "passed 16 MiB with no blank line to end it (SSE event cap)", false},
		{"gzip bomb of data lines (openai)", openaiWire, func(w hostileWire) http.HandlerFunc { return hostiletest.Endless(w.head, dataLines, true, 0) },
			nil, wire.StopTruncated, "(SSE event cap)", false},
		{"gzip bomb of newlines (anthropic)", anthropicWire, func(w hostileWire) http.HandlerFunc { return hostiletest.Endless(w.head, "\n\n\n\n\n\n\n\n", true, 0) },
			[]string{"--max-reply-bytes", "4MiB"}, wire.StopTruncated, "the response body passed 4 MiB (max reply bytes)", false},
		{"endless comments (openai)", openaiWire, func(w hostileWire) http.HandlerFunc { return hostiletest.Endless(w.head, ": keepalive\n", false, 0) },
			[]string{"--reply-timeout", "300ms", "--max-reply-bytes", "1GiB"}, wire.StopTruncated, "not complete 300ms after the request went out (reply timeout)", false},
		{"endless blank lines (anthropic)", anthropicWire, func(w hostileWire) http.HandlerFunc { return hostiletest.Endless(w.head, "\n", false, 0) },
			[]string{"--max-reply-bytes", "1MiB"}, wire.StopTruncated, "the response body passed 1 MiB (max reply bytes)", false},
		{"endless tokens (openai)", openaiWire, func(w hostileWire) http.HandlerFunc { return hostiletest.Endless(w.head, w.token, false, 0) },
			[]string{"--max-reply-bytes", "256KiB"}, wire.StopTruncated, "passed 256 KiB (max reply bytes)", true},
		{"endless tokens (anthropic)", anthropicWire, func(w hostileWire) http.HandlerFunc { return hostiletest.Endless(w.head, w.token, false, 0) },
			[]string{"--max-reply-bytes", "256KiB"}, wire.StopTruncated, "passed 256 KiB (max reply bytes)", true},
		{"no headers (responses)", responsesWire, func(hostileWire) http.HandlerFunc { return noHeaders },
			[]string{"--header-timeout", "200ms", "--max-attempts", "1"}, wire.StopError, "no response headers within 200ms (header timeout)", false},
		{"data lines with no blank line (responses)", responsesWire, func(w hostileWire) http.HandlerFunc {
			return hostiletest.Endless(w.head+"event: response.output_text.delta\n", dataLines, false, 0)
		}, nil, wire.StopTruncated, "passed 16 MiB with no blank line to end it (SSE event cap)", false},
		{"gzip bomb of tokens (responses)", responsesWire, func(w hostileWire) http.HandlerFunc { return hostiletest.Endless(w.head, w.token, true, 0) },
			[]string{"--max-reply-bytes", "2MiB"}, wire.StopTruncated, "the response body passed 2 MiB (max reply bytes)", true},
		{"token drip under the idle timeout (responses)", responsesWire, func(w hostileWire) http.HandlerFunc {
			return hostiletest.Endless(w.head, w.token, false, 50*time.Millisecond)
		}, []string{"--idle-timeout", "300ms", "--reply-timeout", "700ms"}, wire.StopTruncated, "(reply timeout)", true},
		{"drip under the idle timeout (anthropic)", anthropicWire, func(w hostileWire) http.HandlerFunc {
			return hostiletest.Endless(w.head, ": drip\n", false, 50*time.Millisecond)
		}, []string{"--idle-timeout", "300ms", "--reply-timeout", "700ms"}, wire.StopTruncated, "(reply timeout)", false},
		{"token drip under the idle timeout (openai)", openaiWire, func(w hostileWire) http.HandlerFunc {
			return hostiletest.Endless(w.head, w.token, false, 50*time.Millisecond)
		}, []string{"--idle-timeout", "300ms", "--reply-timeout", "700ms"}, wire.StopTruncated, "(reply timeout)", true},
	}
	bin := buildBinary(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(tt.handler(tt.wire))
			defer srv.Close()
			r := runHostile(t, bin, tt.wire, srv.URL, tt.flags)
			t.Logf("done after %v, peak RSS %d MiB, exit %d", r.toDone.Round(time.Millisecond), r.maxRSS>>20, r.code)
			checkHostileRun(t, r, tt.stop, tt.errHas, tt.text)
			if r.maxRSS > 512<<20 {
				t.Errorf("peak RSS %d MiB", r.maxRSS>>20)
			}
			if _, err := wire.CheckStreamStrict(strings.NewReader(strings.Join(r.lines, "\n")), func(v wire.Verdict) {
				if v.Err != nil {
					t.Errorf("line %d: %v", v.Line, v.Err)
				}
			}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// checkHostileRun checks what one run of the binary showed: exactly one
// done with stop_reason stop, one message_done when reply text streamed
// first (text) and none otherwise, one error line containing errHas, no
// tool dispatched, and the exit code the stop reason calls for.
func checkHostileRun(t *testing.T, r hostileRun, stop, errHas string, text bool) {
	t.Helper()
	var dones, messageDones int
	var errs []string
	for _, l := range r.lines {
		var ev struct {
			Type       string `json:"type"`
			StopReason string `json:"stop_reason"`
			Message    string `json:"message"`
			Text       string `json:"text"`
		}
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("stdout line %q: %v", l, err)
		}
		switch ev.Type {
		case "done":
			dones++
			if ev.StopReason != stop {
				t.Errorf("done %s, want stop_reason %s", l, stop)
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
		t.Errorf("%d done lines, want exactly one:\n%s", dones, strings.Join(r.lines, "\n"))
	}
	if (messageDones == 1) != text || messageDones > 1 {
		t.Errorf("%d message_done lines (reply text streamed: %v)", messageDones, text)
	}
	if len(errs) != 1 || !strings.Contains(errs[0], errHas) {
		t.Errorf("error lines %q, want one naming %q", errs, errHas)
	}
	wantCode := 0
	if stop == wire.StopError {
		wantCode = 1
	}
	if r.code != wantCode {
		t.Errorf("exit %d, want %d; stderr:\n%s", r.code, wantCode, r.stderr)
	}
}

// hostileRun is what one run of the binary showed.
type hostileRun struct {
	lines  []string
	stderr string
	code   int
	toDone time.Duration // from the user command to the done line
	maxRSS int64         // bytes
}

// runHostile sends one user command to `openmax --stdio` against base and
// closes stdin at once: EOF while the turn runs, so the process must exit
// once that turn is done. A process still running after the guard fails
// the test (and is killed).
func runHostile(t *testing.T, bin string, w hostileWire, base string, flags []string) hostileRun {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	env := trustedBinaryEnv(t, ctx, bin, dir, "", w.keyEnv+"=sk-hostile-test")
	args := append([]string{"--stdio", "--provider", w.provider, "--base-url", base + w.path, "--project", dir}, w.flags...)
	args = append(args, flags...)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(env, "OPENMAX_PEAK_RSS=1")
	cmd.Stdin = strings.NewReader(`{"cmd":"user","text":"go"}` + "\n")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var r hostileRun
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		r.lines = append(r.lines, sc.Text())
		if strings.Contains(sc.Text(), `"type":"done"`) && r.toDone == 0 {
			r.toDone = time.Since(start)
		}
	}
	err = cmd.Wait()
	if ctx.Err() != nil {
		t.Fatalf("the process did not exit after stdin EOF within 30s; stdout:\n%s\nstderr:\n%s", strings.Join(r.lines, "\n"), stderr.String())
	}
	r.code = cmd.ProcessState.ExitCode()
	if err != nil && r.code < 0 {
		t.Fatalf("exit: %v\nstderr: %s", err, stderr.String())
	}
	r.maxRSS, r.stderr = ownPeakRSS(t, stderr.String())
	return r
}
