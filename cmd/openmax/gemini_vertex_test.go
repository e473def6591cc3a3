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

// TestGeminiVertexThroughBinary: with GOOGLE_GENAI_USE_VERTEXAI=true
// (as Google's SDKs read it), --provider gemini speaks Vertex AI: the
// request goes to the project's and location's publisher model path with
// the access token as a bearer, `openmax record` keeps neither the token
// nor anything of it, and the cassette replays to the same transcript.
// Without a project, or without a token, the error says which variable to
// set.
func TestGeminiVertexThroughBinary(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	bin := buildBinary(t)
	dir := t.TempDir()
	sc := filepath.Join(dir, "scenario.yaml")
	if err := os.WriteFile(sc, []byte("replies:\n  - text: \"From Vertex.\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const token = "ya29.vertex-test-token-0123456789"
	vertexEnv := []string{"GOOGLE_GENAI_USE_VERTEXAI=true", "GOOGLE_CLOUD_PROJECT=proj-1", "GOOGLE_CLOUD_LOCATION=europe-west4",
		"GOOGLE_VERTEX_ACCESS_TOKEN=" + token}
	home, project := t.TempDir(), t.TempDir()
	run := func(stdin string, env []string, args ...string) (string, string, int) {
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Dir = project
		cmd.Env = append([]string{"HOME=" + home, "XDG_CONFIG_HOME=" + home, "PATH=" + os.Getenv("PATH")}, env...)
		cmd.Stdin = strings.NewReader(stdin)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		cmd.Run()
		return out.String(), errb.String(), cmd.ProcessState.ExitCode()
	}
	if _, stderr, code := run("", nil, "trust", project); code != 0 {
		t.Fatalf("trust: exit %d: %s", code, stderr)
	}
	fp := startServer(t, ctx, bin, "fake-provider", "--scenario", sc)
	cas := filepath.Join(dir, "vertex.yaml")
	stdin := `{"cmd":"user","text":"hi"}` + "\n"
	live, stderr, code := run(stdin, vertexEnv, "record", "--cassette", cas, "--provider", "gemini", "--base-url", fp.URL)
	if code != 0 || !strings.Contains(live, `"text":"From Vertex."`) || !strings.Contains(live, `"stop_reason":"STOP"`) {
		t.Fatalf("record: exit %d\n%s%s", code, live, stderr)
	}
	fp.stop(t)
	data, err := os.ReadFile(cas)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte("/v1/projects/proj-1/locations/europe-west4/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse")) {
		t.Errorf("the request did not go to the Vertex path:\n%s", data)
	}
	// The session keeps what shaped the request, not the token.
	if !bytes.Contains(data, []byte("GOOGLE_CLOUD_PROJECT: proj-1")) || bytes.Contains(data, []byte("GOOGLE_VERTEX_ACCESS_TOKEN")) {
		t.Errorf("the session's env is not what the client read, credentials aside:\n%s", data)
	}
	if bytes.Contains(data, []byte("vertex-test-token")) || !bytes.Contains(data, []byte("Authorization:")) {
		t.Errorf("the token reached the cassette, or the Authorization header was not kept scrubbed:\n%s", data)
	}
	replayed, stderr, code := run("", nil, "replay", cas)
	if code != 0 || replayed != live {
		t.Errorf("replay: exit %d\n%s\nwant\n%s%s", code, replayed, live, stderr)
	}

	for _, tt := range []struct {
		drop, want string
	}{
		{"GOOGLE_CLOUD_PROJECT", "--provider gemini needs a Google Cloud project for Vertex AI: set GOOGLE_CLOUD_PROJECT"},
		{"GOOGLE_VERTEX_ACCESS_TOKEN", "--provider gemini needs a Vertex AI access token: set GOOGLE_VERTEX_ACCESS_TOKEN"},
	} {
		var env []string
		for _, e := range vertexEnv {
			if !strings.HasPrefix(e, tt.drop+"=") {
				env = append(env, e)
			}
		}
		out, stderr, code := run(stdin, env, "--stdio", "--provider", "gemini", "--base-url", "http://127.0.0.1:1")
		if code != 2 || out != "" || !strings.Contains(stderr, tt.want) {
			t.Errorf("without %s: exit %d, stdout %q, stderr %q", tt.drop, code, out, stderr)
		}
	}
}
