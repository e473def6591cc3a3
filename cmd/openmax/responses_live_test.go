package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestResponsesLiveBinary runs the live harness the way a user does
// against OpenAI's Responses API, with both ends real processes over
// loopback: `openmax fake-provider --scenario` serves the wire, and
// `openmax --stdio --provider openai --api responses` drives two turns
// (through `openmax record --proxy`, which keeps the requests).
// The first turn meets a 429 with Retry-After (retried), streams a
// reasoning summary, calls the built-in read_file tool on a file of the
// project, and answers from its output; the second turn's request carries
// the first turn's encrypted reasoning and the call with its output back
// (store is false), which the fake's request log shows.
func TestResponsesLiveBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped in -short mode")
	}
	bin := buildBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	project := filepath.Join(dir, "project")
	if err := os.MkdirAll(project, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(project, "note.txt"), []byte("the note says hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The fake behind `openmax record --proxy`, so the requests are seen.
	fp := serveScenario(t, ctx, bin, `replies:
  - status: 429
    headers: {Retry-After: "0"}
    code: rate_limit_exceeded
    message: "Rate limit reached"
  - chunks:
      - thinking: "The user wants the note; "
      - thinking: "I read it."
      - signature: "gAAAAABsaXZlLWVuY3J5cHRlZA"
      - tool_call: {id: call_note, name: read_file, args: {path: note.txt}}
      - usage: {prompt_tokens: 900, completion_tokens: 40, cached_tokens: 512, reasoning_tokens: 24}
      - finish: stop
  - text: "The note says hi."
  - text: "Still here."
`)

	env := trustedBinaryEnv(t, ctx, bin, project, "", "OPENAI_API_KEY=sk-live-responses-test")
	cmd := exec.CommandContext(ctx, bin, "--stdio", "--provider", "openai", "--api", "responses",
		"--base-url", fp.URL+"/v1", "--project", project)
	cmd.Env = env
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Each prompt goes once the previous turn's done is out.
	var stdout strings.Builder
	lines := bufio.NewScanner(out)
	for _, prompt := range []string{"What does note.txt say?", "Are you there?"} {
		fmt.Fprintf(stdin, "{\"cmd\":\"user\",\"text\":%q}\n", prompt)
		for lines.Scan() {
			stdout.WriteString(lines.Text() + "\n")
			if strings.Contains(lines.Text(), `"type":"done"`) {
				break
			}
		}
	}
	stdin.Close()
	for lines.Scan() {
		stdout.WriteString(lines.Text() + "\n")
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("openmax: %v\nstderr:\n%s\nstdout:\n%s", err, stderr.String(), stdout.String())
	}
	transcript := stdout.String()
	checkWire(t, transcript)
	if strings.Contains(transcript, "sk-live-responses-test") || strings.Contains(transcript, "gAAAAABsaXZlLWVuY3J5cHRlZA") {
		t.Errorf("the key or the encrypted reasoning reached stdout:\n%s", transcript)
	}
	rest := transcript
	for _, want := range []string{
		`"type":"retry","attempt":2`, "HTTP 429 Too Many Requests: rate_limit_exceeded: Rate limit reached",
		`"type":"thinking","text":"The user wants the note; "`, `"type":"thinking","text":"I read it."`,
		`"type":"usage","prompt_tokens":900,"completion_tokens":40,"cached_tokens":512`,
		`"type":"tool_start","call_id":"call_note","name":"read_file"`,
		`"type":"tool_end","call_id":"call_note","ok":true`, "the note says hi",
		`"type":"message_done","text":"The note says hi."`, `"type":"done","stop_reason":"completed"`,
		`"type":"message_done","text":"Still here."`, `"type":"done","stop_reason":"completed"`,
	} {
		i := strings.Index(rest, want)
		if i < 0 {
			t.Fatalf("the transcript lacks %s (in this order):\n%s", want, transcript)
		}
		rest = rest[i+len(want):]
	}

	// The last request (the second turn) sent everything back: the
	// reasoning item with its encrypted content, the call without an id,
	// its output, and the answer.
	f := fp.finish(t)
	if len(f.Interactions) != 4 {
		t.Fatalf("%d requests, want 4 (429, tool call, answer, second turn)", len(f.Interactions))
	}
	lastBody := f.Interactions[3].Request.Body
	var last struct {
		Store   *bool             `json:"store"`
		Include []string          `json:"include"`
		Input   []json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal([]byte(lastBody), &last); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	body := lastBody
	for _, raw := range last.Input {
		var it struct{ Type, Role string }
		json.Unmarshal(raw, &it)
		kinds = append(kinds, strings.TrimSpace(it.Type+" "+it.Role))
	}
	want := "message user,reasoning,function_call,function_call_output,message assistant,message user"
	if got := strings.Join(kinds, ","); got != want || last.Store == nil || *last.Store ||
		!strings.Contains(body, `"encrypted_content":"gAAAAABsaXZlLWVuY3J5cHRlZA"`) ||
		!strings.Contains(body, `"call_id":"call_note"`) || !strings.Contains(body, `the note says hi`) {
		t.Errorf("the second turn's input is %s (want %s), store %v:\n%s", got, want, last.Store, body)
	}
}
