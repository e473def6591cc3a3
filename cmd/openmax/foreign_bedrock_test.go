package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// bedrockScenario answers the Bedrock client's three turns: two
// ConverseStream replies, then an InvokeModelWithResponseStream one.
const bedrockScenario = `replies:
  - text: "Hello from Bedrock."
    usage: {prompt_tokens: 12, completion_tokens: 4}
  - chunks: [{text: "Second "}, {text: "turn, "}, {text: "in frames."}, {usage: {prompt_tokens: 20, completion_tokens: 5}}, {finish: end_turn}]
  - text: "Invoked."
    usage: {prompt_tokens: 9, completion_tokens: 2}
`

// runBedrockClient runs testdata/npm/bedrock.mjs against base.
func runBedrockClient(t *testing.T, ctx context.Context, work, base string, extra ...string) (string, int) {
	t.Helper()
	return runNodeClient(t, ctx, work, "bedrock.mjs", append([]string{"BEDROCK_BASE_URL=" + base}, extra...)...)
}

// runNodeClient runs the script testdata/npm/NAME with node in work
// (where npmModules linked the pinned packages), with env added to ours,
// and returns its stdout and exit code; its stderr goes to the test log.
func runNodeClient(t *testing.T, ctx context.Context, work, name string, env ...string) (string, int) {
	t.Helper()
	script, err := os.ReadFile(filepath.Join(npmDir, name))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, name), script, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, "node", name)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "NODE_NO_WARNINGS=1")
	cmd.Env = append(cmd.Env, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil && cmd.ProcessState == nil {
		t.Fatalf("node %s: %v", name, err)
	}
	if stderr.Len() > 0 {
		t.Logf("node %s stderr:\n%s", name, stderr.String())
	}
	return stdout.String(), cmd.ProcessState.ExitCode()
}

// TestForeignBedrockClient: AWS's JavaScript SDK talks to the fake
// provider's Bedrock through `openmax record --proxy` (ConverseStream
// twice, InvokeModelWithResponseStream once, every reply a binary event
// stream), then to fake-provider --cassette serving the recording: it
// reads the same replies, every request served; a request the cassette
// does not hold is a miss AWS's client sees as a ValidationException.
func TestForeignBedrockClient(t *testing.T) {
	t.Parallel()
	work := npmModules(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bin := buildBinary(t)
	dir := t.TempDir()
	sc := filepath.Join(dir, "scenario.yaml")
	if err := os.WriteFile(sc, []byte(bedrockScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	upstream := startServer(t, ctx, bin, "fake-provider", "--scenario", sc)
	path := filepath.Join(dir, "bedrock.yaml")
	proxy := startServer(t, ctx, bin, "record", "--proxy", "--upstream", upstream.URL, "--cassette", path)
	live, code := runBedrockClient(t, ctx, work, proxy.URL)
	want := "converse: \"Hello from Bedrock.\" (end_turn)\nconverse: \"Second turn, in frames.\" (end_turn)\ninvoke: \"Invoked.\" (end_turn)\n"
	if code != 0 || live != want {
		t.Fatalf("live: exit %d, output %q, want %q", code, live, want)
	}
	if code := proxy.stop(t); code != 0 {
		t.Fatalf("record --proxy exited %d\n%s", code, proxy.stderr)
	}
	if code := upstream.stop(t); code != 0 {
		t.Fatalf("fake-provider --scenario exited %d\n%s", code, upstream.stderr)
	}

	fp := startServer(t, ctx, bin, "fake-provider", "--cassette", path, "--pace", "instant")
	if out, code := runBedrockClient(t, ctx, work, fp.URL); code != 0 || out != live {
		t.Errorf("replay: exit %d, output %q, want %q", code, out, live)
	}
	if code := fp.stop(t); code != 0 || strings.Contains(fp.stderr.String(), "MISS") ||
		!strings.Contains(fp.stderr.String(), "3 request(s): 3 served, 0 missed; all 3 interaction(s) served") {
		t.Errorf("replay: exit %d, stderr:\n%s", code, fp.stderr)
	}

	fp = startServer(t, ctx, bin, "fake-provider", "--cassette", path, "--pace", "instant")
	out, code := runBedrockClient(t, ctx, work, fp.URL, "PROMPT=something else")
	if code != 3 || !strings.HasPrefix(out, "ERROR status=400 type=ValidationException message=") || !strings.Contains(out, "no recorded interaction matches POST") {
		t.Errorf("miss: exit %d, output %q", code, out)
	}
	fp.stop(t)
	if log := fp.stderr.String(); !strings.Contains(log, "request 0: POST /model/us.anthropic.claude-haiku-4-5-20251001-v1%3A0/converse-stream: MISS") {
		t.Errorf("the log lacks the miss:\n%s", log)
	}
}
