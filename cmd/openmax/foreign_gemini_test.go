package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// geminiScenario answers the Gemini client's two turns: a thought closed
// by its signature, then text; then text in three chunks.
const geminiScenario = `replies:
  - chunks:
      - thinking: "Greet back."
      - signature: "c2lnLW5vZGUtMQ=="
      - text: "Hello from Gemini."
      - usage: {prompt_tokens: 12, completion_tokens: 7, reasoning_tokens: 3}
      - finish: STOP
  - chunks: [{text: "Second "}, {text: "turn, "}, {text: "in events."}, {finish: STOP}]
`

// runGeminiClient runs testdata/npm/gemini.mjs against base.
func runGeminiClient(t *testing.T, ctx context.Context, work, base string, extra ...string) (string, int) {
	t.Helper()
	return runNodeClient(t, ctx, work, "gemini.mjs", append([]string{"GEMINI_BASE_URL=" + base}, extra...)...)
}

// TestForeignGeminiClient: Google's JavaScript SDK talks to the fake
// provider's Gemini API through `openmax record --proxy` (two turns, the
// second sending the first reply's thought and its signature back), then
// to fake-provider --cassette serving the recording: it reads the same
// replies, every request served, and the key never reached the cassette;
// a request the cassette does not hold is a miss the SDK sees as an HTTP
// error.
func TestForeignGeminiClient(t *testing.T) {
	t.Parallel()
	work := npmModules(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bin := buildBinary(t)
	dir := t.TempDir()
	sc := filepath.Join(dir, "scenario.yaml")
	if err := os.WriteFile(sc, []byte(geminiScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	upstream := startServer(t, ctx, bin, "fake-provider", "--scenario", sc)
	path := filepath.Join(dir, "gemini.yaml")
	proxy := startServer(t, ctx, bin, "record", "--proxy", "--upstream", upstream.URL, "--cassette", path)
	live, code := runGeminiClient(t, ctx, work, proxy.URL)
	want := "turn: thought \"Greet back.\" text \"Hello from Gemini.\" signatures 1 (STOP)\n" +
		"turn: thought \"\" text \"Second turn, in events.\" signatures 0 (STOP)\n"
	if code != 0 || live != want {
		t.Fatalf("live: exit %d, output %q, want %q", code, live, want)
	}
	if code := proxy.stop(t); code != 0 {
		t.Fatalf("record --proxy exited %d\n%s", code, proxy.stderr)
	}
	if code := upstream.stop(t); code != 0 {
		t.Fatalf("fake-provider --scenario exited %d\n%s", code, upstream.stderr)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(data, []byte("node-gemini-test-key")) {
		t.Error("the API key reached the cassette")
	}
	// The second request sent the first reply's signature back on its
	// thought part.
	if !bytes.Contains(data, []byte(`\"thought\":true,\"thoughtSignature\":\"c2lnLW5vZGUtMQ==\"`)) {
		t.Errorf("the second request does not carry the signature back:\n%s", data)
	}

	fp := startServer(t, ctx, bin, "fake-provider", "--cassette", path, "--pace", "instant")
	if out, code := runGeminiClient(t, ctx, work, fp.URL); code != 0 || out != live {
		t.Errorf("replay: exit %d, output %q, want %q", code, out, live)
	}
	if code := fp.stop(t); code != 0 || strings.Contains(fp.stderr.String(), "MISS") ||
		!strings.Contains(fp.stderr.String(), "2 request(s): 2 served, 0 missed; all 2 interaction(s) served") {
		t.Errorf("replay: exit %d, stderr:\n%s", code, fp.stderr)
	}

	fp = startServer(t, ctx, bin, "fake-provider", "--cassette", path, "--pace", "instant")
	out, code := runGeminiClient(t, ctx, work, fp.URL, "PROMPT=something else")
	if code != 3 || !strings.HasPrefix(out, "ERROR status=") || !strings.Contains(out, "no recorded interaction matches POST") {
		t.Errorf("miss: exit %d, output %q", code, out)
	}
	fp.stop(t)
	if log := fp.stderr.String(); !strings.Contains(log, "request 0: POST /v1beta/models/gemini-2.5-flash:streamGenerateContent") || !strings.Contains(log, "MISS") {
		t.Errorf("the log lacks the miss:\n%s", log)
	}
}
