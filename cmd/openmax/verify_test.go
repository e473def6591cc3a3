package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openmax/openmax/internal/fixture"
	"github.com/openmax/openmax/provider/codec"
	"github.com/openmax/openmax/recorder/cassette"
	"github.com/openmax/openmax/recorder/importer"
)

// verifyKey is the key verify puts back into the requests; it must never
// be printed.
const verifyKey = "sk-verify-secret-0123456789abcdef"

// runVerifyBin runs `openmax cassette verify` with every wire's key set.
func runVerifyBin(t *testing.T, ctx context.Context, bin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.CommandContext(ctx, bin, append([]string{"cassette", "verify"}, args...)...)
	cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH"), "OPENAI_API_KEY=" + verifyKey,
		"ANTHROPIC_API_KEY=" + verifyKey, "GEMINI_API_KEY=" + verifyKey, "AWS_ACCESS_KEY_ID=AKIDVERIFY", "AWS_SECRET_ACCESS_KEY=" + verifyKey}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Run()
	if strings.Contains(out.String()+errb.String(), verifyKey) {
		t.Errorf("the key was printed:\n%s%s", out.String(), errb.String())
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}

// silent reports whether a recording holds an exchange that ended in the
// client giving up on a silent server (a stall: a timeout, or a cancel
// before the wire's completion signal): served again, it would wait out
// --timeout, which no test does.
func silent(t *testing.T, path string) bool {
	t.Helper()
	f, _, err := importer.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range f.Interactions {
		e := it.Failure()
		if e == nil || e.Kind != cassette.KindTimeout && e.Kind != cassette.KindCancel {
			continue
		}
		ct := it.Response.Headers.Get("Content-Type")
		w, err := codec.ForRecording(codec.RecordedRequest(it.Request.Method, it.Request.URL, it.Request.Headers), ct, []byte(it.Body()))
		if err != nil || e.Kind == cassette.KindTimeout || w.Parse(ct, []byte(it.Body())).Signal == "" {
			return true
		}
	}
	return false
}

// TestVerifyLiveKeepsShape: every cassette of the library and every real
// recording, served as recorded by `fake-provider --cassette` and
// verified against it through the binary, keeps its shape (exit 0),
// though the requests go out again with the key put back; Bedrock's
// SigV4-signed requests are not sent, and say why (exit 1). Recordings
// whose client gave up on a stall are left out (they would wait out
// --timeout).
func TestVerifyLiveKeepsShape(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	lib, _ := filepath.Glob(filepath.Join(libraryDir, "*.yaml"))
	real, _ := filepath.Glob(filepath.Join(fixture.RealDir(), "*.*"))
	n := 0
	for _, path := range append(lib, real...) {
		if strings.HasSuffix(path, ".md") || silent(t, path) {
			continue
		}
		n++
		t.Run(filepath.Base(path), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			fp := startServer(t, ctx, bin, "fake-provider", "--cassette", path, "--pace", "instant")
			defer fp.stop(t)
			out, stderr, code := runVerifyBin(t, ctx, bin, "--live", "--base-url", fp.URL, path)
			if strings.Contains(filepath.Base(path), "bedrock") {
				if code != 1 || !strings.Contains(out, "not sent: a signed request (bedrock") {
					t.Errorf("exit %d\n%s%s", code, out, stderr)
				}
				return
			}
			if code != 0 || !strings.Contains(stderr, " 0 drifted, 0 not sent,") {
				t.Errorf("exit %d\n%s%s", code, out, stderr)
			}
		})
	}
	if n < 50 {
		t.Errorf("only %d recordings verified", n)
	}
}

// TestVerifyLiveDrift: a fake provider set up to drift from a library
// recording (thinking it never sent, no usage, another finish; a 429
// with Retry-After instead of a stream) is reported, each change named,
// on every SSE wire; other words in the same shape are not; --json says
// the same.
func TestVerifyLiveDrift(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	tests := []struct {
		cassette, drifted string
		want              []string
	}{
		{"openai_plain", "replies:\n  - chunks: [{thinking: hmm}, {text: Other}, {finish: length}]\n",
			[]string{"field chat.completion.chunk: choices[].delta.reasoning_content: new (present)", "field chat.completion.chunk: usage: missing (was present)", "finish: stop → length"}},
		{"anthropic_plain", "replies:\n  - chunks: [{thinking: hmm}, {signature: c2ln}, {text: Other}, {finish: max_tokens}]\n",
			[]string{"field content_block_start: content_block.type=thinking: new (present)", "field content_block_delta: delta.type=signature_delta: new (present)", "finish: end_turn → max_tokens"}},
		{"responses_plain", "replies:\n  - chunks: [{thinking: hmm}, {text: Other}, {finish: stop}]\n",
			[]string{"event response.reasoning_summary_text.delta: new (1 event)", "field response.completed: response.usage: missing (was present)"}},
		{"gemini_plain", "replies:\n  - chunks: [{text: Other}, {finish: MAX_TOKENS}]\n",
			[]string{"field (unnamed): candidates[].content.parts[].thought: missing (was present)", "field (unnamed): usageMetadata: missing (was present)", "finish: STOP → MAX_TOKENS"}},
		{"openai_plain", "replies:\n  - status: 429\n    headers: {Retry-After: \"3\"}\n",
			[]string{"status: 200 → 429", "body: a stream → a whole body", "header retry-after: new (present)", "error: none → an error reported"}},
	}
	for _, tt := range tests {
		t.Run(tt.cassette+"/"+tt.want[0], func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			path := filepath.Join(libraryDir, tt.cassette+".yaml")
			sc := filepath.Join(t.TempDir(), "drift.yaml")
			if err := os.WriteFile(sc, []byte(tt.drifted), 0o644); err != nil {
				t.Fatal(err)
			}
			fp := startServer(t, ctx, bin, "fake-provider", "--scenario", sc)
			out, stderr, code := runVerifyBin(t, ctx, bin, "--live", "--base-url", fp.URL, path)
			fp.stop(t)
			if code != 1 || !strings.Contains(out, "#0 POST ") || !strings.Contains(stderr, "1 drifted") {
				t.Fatalf("exit %d\n%s%s", code, out, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, "  "+w+"\n") {
					t.Errorf("the report lacks %q:\n%s", w, out)
				}
			}

			fp = startServer(t, ctx, bin, "fake-provider", "--scenario", sc)
			js, _, code := runVerifyBin(t, ctx, bin, "--live", "--json", "--base-url", fp.URL, path)
			fp.stop(t)
			var rep struct {
				Interactions []struct {
					Wire  string `json:"wire"`
					Drift []struct {
						What string `json:"what"`
					} `json:"drift"`
				} `json:"interactions"`
				Drifted int `json:"drifted"`
			}
			if err := json.Unmarshal([]byte(js), &rep); err != nil || code != 1 || rep.Drifted != 1 || len(rep.Interactions[0].Drift) < len(tt.want) {
				t.Errorf("--json: exit %d, %v\n%s", code, err, js)
			}
		})
	}

	// The same shape in other words is no drift.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sc := filepath.Join(t.TempDir(), "words.yaml")
	os.WriteFile(sc, []byte("replies:\n  - text: \"Entirely other words, and more of them.\"\n    usage: {prompt_tokens: 99, completion_tokens: 77}\n"), 0o644)
	fp := startServer(t, ctx, bin, "fake-provider", "--scenario", sc)
	out, stderr, code := runVerifyBin(t, ctx, bin, "--live", "--base-url", fp.URL, filepath.Join(libraryDir, "openai_plain.yaml"))
	fp.stop(t)
	if code != 0 || !strings.Contains(out, "same shape") {
		t.Errorf("other words: exit %d\n%s%s", code, out, stderr)
	}
}

// TestVerifyUsage: --live is required, one cassette, a base URL that is
// one, a positive timeout; a missing file is a failure.
func TestVerifyUsage(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lib := filepath.Join(libraryDir, "openai_plain.yaml")
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{lib}, 2, "--live is required"},
		{[]string{"--live"}, 2, "want one cassette, got 0"},
		{[]string{"--live", lib, lib}, 2, "want one cassette, got 2"},
		{[]string{"--live", "--base-url", "nope", lib}, 2, `--base-url "nope"`},
		{[]string{"--live", "--timeout", "0s", lib}, 2, "--timeout must be positive"},
		{[]string{"--live", "/nonexistent.yaml"}, 1, "nonexistent"},
	} {
		out, stderr, code := runVerifyBin(t, ctx, bin, tt.args...)
		if code != tt.code || out != "" || !strings.Contains(stderr, tt.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", tt.args, code, out, stderr)
		}
	}
}
