package main

// The real codex CLI (npm @openai/codex, pinned in testdata/npm) run
// offline against `openmax fake-provider`, `openmax record --proxy` and
// `fake-provider --cassette`, as child processes over loopback. Each run
// gets a CODEX_HOME of its own whose config.toml names the fake as a model
// provider speaking the Responses wire; the network beyond loopback is a
// dead proxy, and the features that reach out (plugin sync, update
// checks, analytics) are off. See docs/codex.md.
//
// What codex 0.169.0 does on each fault, as these tests pin it:
//
//   - 429 with Retry-After: it waits as long as the header says (seconds
//     or an HTTP-date, no cap seen up to 70 s), prints "Reconnecting...
//     1/N" on stderr and sends the same request again. Its retries of a
//     429 or 5xx are counted by the provider's stream_max_retries (not
//     request_max_retries); once they are spent it prints "exceeded retry
//     limit, last status: 429 Too Many Requests" and exits 1.
//   - 429 without Retry-After (also with only retry-after-ms, or a
//     fractional Retry-After): no retry at all; one request, exit 1.
//   - A stream that ends (cleanly or by a reset) before response.completed,
//     or a response.failed (server_error), before or after text: it drops
//     the partial text, prints "Reconnecting... 1/N", sends the same
//     request again and prints only the retried answer. Once the retries
//     are spent: "stream disconnected before completion: stream closed
//     before response.completed" (clean end) or "... error decoding
//     response body" (reset), exit 1.
//   - response.failed with insufficient_quota: no retry, "Quota exceeded.
//     Check your plan and billing details.", exit 1.
//   - response.incomplete (max_output_tokens): no retry; the partial text
//     goes to stderr only, "Incomplete response returned, reason:
//     max_output_tokens", exit 1.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/openmax/openmax/recorder/cassette"
	"github.com/openmax/openmax/replay/codexscenario"
)

// codexPackages names, per platform, the npm package carrying codex's
// native binary and the target triple of its vendor folder.
var codexPackages = map[string][2]string{
	"linux/amd64":  {"codex-linux-x64", "x86_64-unknown-linux-musl"},
	"linux/arm64":  {"codex-linux-arm64", "aarch64-unknown-linux-musl"},
	"darwin/amd64": {"codex-darwin-x64", "x86_64-apple-darwin"},
	"darwin/arm64": {"codex-darwin-arm64", "aarch64-apple-darwin"},
}

// codexBinary installs the pinned npm packages (skipping without node and
// npm, see npmModules) and returns codex's native binary.
func codexBinary(t *testing.T) string {
	t.Helper()
	work := npmModules(t)
	key := runtime.GOOS + "/" + runtime.GOARCH
	pkg, ok := codexPackages[key]
	if !ok {
		t.Skipf("no codex binary is published for %s", key)
	}
	bin := filepath.Join(work, "node_modules", "@openai", pkg[0], "vendor", pkg[1], "bin", "codex")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("the npm install has no codex binary: %v", err)
	}
	return bin
}

// codexConfig is CODEX_HOME/config.toml for a real codex run offline
// against the fake at base (replay/codexscenario).
func codexConfig(base string, retries int) string {
	return codexscenario.CodexHomeConfig(base, retries)
}

// codexResult is how one codex run ended.
type codexResult struct {
	stdout, stderr string
	code           int
	work           string // the folder codex ran in
}

// runCodex runs `codex exec prompt` against base in a fresh CODEX_HOME,
// HOME and working folder, allowing retries retries. Its environment is
// built from nothing: PATH, the three folders, the key, and proxies
// pointing at a closed loopback port, so nothing it tries beyond
// loopback can leave the machine or hang.
func runCodex(t *testing.T, ctx context.Context, codex, base, prompt string, retries int) codexResult {
	t.Helper()
	home, codexHome, work := t.TempDir(), t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(codexConfig(base, retries)), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, codex, "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "--color", "never", prompt)
	cmd.Dir = work
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, codexscenario.OfflineEnv(home, codexHome)...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run() // stdin is /dev/null: codex reads a piped stdin as more prompt
	if err != nil && cmd.ProcessState == nil {
		t.Fatalf("codex: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatalf("codex did not finish in time:\n%s", stderr.String())
	}
	return codexResult{stdout: stdout.String(), stderr: stderr.String(), code: cmd.ProcessState.ExitCode(), work: work}
}

// scripted serves scenario with `openmax fake-provider --scenario` behind
// `openmax record --proxy`, so a test sees what codex sent: finish stops
// both and returns the recording.
type scripted struct {
	URL      string
	upstream *childServer
	proxy    *childServer
	path     string
}

func serveScenario(t *testing.T, ctx context.Context, bin, scenario string) *scripted {
	t.Helper()
	dir := t.TempDir()
	sc := filepath.Join(dir, "scenario.yaml")
	if err := os.WriteFile(sc, []byte(scenario), 0o644); err != nil {
		t.Fatal(err)
	}
	s := &scripted{path: filepath.Join(dir, "codex.yaml")}
	s.upstream = startServer(t, ctx, bin, "fake-provider", "--scenario", sc)
	s.proxy = startServer(t, ctx, bin, "record", "--proxy", "--upstream", s.upstream.URL, "--cassette", s.path)
	s.URL = s.proxy.URL
	return s
}

// finish stops the proxy and the fake and loads the recording.
func (s *scripted) finish(t *testing.T) *cassette.File {
	t.Helper()
	if code := s.proxy.stop(t); code != 0 {
		t.Fatalf("record --proxy exited %d\n%s", code, s.proxy.stderr)
	}
	if code := s.upstream.stop(t); code != 0 {
		t.Fatalf("fake-provider --scenario exited %d\n%s", code, s.upstream.stderr)
	}
	f, err := cassette.Load(s.path)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// responsesRequest is the part of codex's request body the tests read.
type responsesRequest struct {
	Model  string `json:"model"`
	Stream bool   `json:"stream"`
	Input  []struct {
		Type   string `json:"type"`
		Role   string `json:"role"`
		CallID string `json:"call_id"`
		Name   string `json:"name"`
		Output string `json:"output"`
	} `json:"input"`
}

// requests decodes the recorded request bodies, checking each went to
// POST /v1/responses.
func requests(t *testing.T, f *cassette.File) []responsesRequest {
	t.Helper()
	var out []responsesRequest
	for i, it := range f.Interactions {
		if it.Request.Method != "POST" || !strings.HasSuffix(it.Request.URL, "/v1/responses") {
			t.Errorf("request %d: %s %s, want POST .../v1/responses", i, it.Request.Method, it.Request.URL)
		}
		var r responsesRequest
		if err := json.Unmarshal([]byte(it.Request.Body), &r); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		out = append(out, r)
	}
	return out
}

// codexTool is the scenario of the tool round trip: codex's shell tool
// (exec_command) runs a command that writes a file and prints a line,
// then the model answers.
const codexTool = `replies:
  - tool_calls:
      - {id: call_probe, name: exec_command, args: {cmd: "echo probe-$((6*7)) | tee probe.txt"}}
    usage: {prompt_tokens: 30, completion_tokens: 8}
  - text: "The command printed probe-42."
    usage: {prompt_tokens: 40, completion_tokens: 7}
`

// TestCodex runs codex exec against the fake provider: a plain answer, a
// tool round trip (recorded, then served from the recording to two fresh
// CODEX_HOMEs, then with faults injected into it), a rate limit and a
// stream cut short.
// codexGuard bounds one subtest's wait on codex and the servers it talks
// to, so a hang fails the test instead of stalling it. It starts when the
// subtest does: a parallel subtest may queue for minutes behind the
// package's other tests on a loaded machine, and that wait must not count.
func codexGuard(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func TestCodex(t *testing.T) {
	t.Parallel() // waits on child processes: overlaps the package's other slow tests
	codex := codexBinary(t)
	bin := buildBinary(t)

	t.Run("answer", func(t *testing.T) {
		t.Parallel()
		ctx := codexGuard(t)
		s := serveScenario(t, ctx, bin, `replies:
  - chunks: [{text: "Hello from "}, {text: "the fake."}, {usage: {prompt_tokens: 20, completion_tokens: 5}}, {finish: stop}]
`)
		r := runCodex(t, ctx, codex, s.URL, "say hello", 0)
		if r.code != 0 || r.stdout != "Hello from the fake.\n" {
			t.Errorf("exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
		}
		reqs := requests(t, s.finish(t))
		if len(reqs) != 1 || !reqs[0].Stream || reqs[0].Model != "gpt-5-codex" {
			t.Fatalf("requests: %+v", reqs)
		}
		last := reqs[0].Input[len(reqs[0].Input)-1]
		if last.Role != "user" {
			t.Errorf("the last input item is %+v, want the user's prompt", last)
		}
	})

	// Faults served by the fake; codex may retry twice. Each row is
	// what codex 0.169.0 does (see the top of this file).
	t.Run("faults", func(t *testing.T) {
		t.Parallel()
		tests := []struct {
			name   string
			first  string // the first reply; the second is "After the fault."
			code   int
			stdout string
			stderr string
			reqs   int // requests codex sent
		}{
			// Retry-After 0 keeps the test fast; codex waits what the
			// header says (a 1 s header costs 1 s).
			{"429 with Retry-After", `{status: 429, headers: {Retry-After: "0"}}`,
				0, "After the fault.\n", "Reconnecting... 1/2", 2},
			{"429 without Retry-After", `{status: 429}`,
				1, "", "exceeded retry limit, last status: 429 Too Many Requests", 1},
			{"stream ends before response.completed", `{chunks: [{text: "Half an "}, {died: "cut"}]}`,
				0, "After the fault.\n", "Reconnecting... 1/2", 2},
			{"response.failed after text", `{chunks: [{text: "Half an "}, {stream_error: {type: server_error, message: boom}}]}`,
				0, "After the fault.\n", "Reconnecting... 1/2", 2},
			{"response.failed for quota", `{chunks: [{stream_error: {type: insufficient_quota, message: "You exceeded your current quota."}}]}`,
				1, "", "Quota exceeded. Check your plan and billing details.", 1},
			{"response.incomplete", `{text: "Cut by the token limit", finish: length}`,
				1, "", "Incomplete response returned, reason: max_output_tokens", 1},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				ctx := codexGuard(t)
				s := serveScenario(t, ctx, bin, "replies:\n  - "+tt.first+"\n  - text: \"After the fault.\"\n")
				r := runCodex(t, ctx, codex, s.URL, "say hello", 2)
				if r.code != tt.code || r.stdout != tt.stdout || !strings.Contains(r.stderr, tt.stderr) {
					t.Errorf("exit %d, stdout %q, want exit %d, %q and stderr with %q\n%s", r.code, r.stdout, tt.code, tt.stdout, tt.stderr, r.stderr)
				}
				// A retry is the same request: the same input
				// (client_metadata is a map codex writes in a random key
				// order, so the bytes differ).
				reqs := requests(t, s.finish(t))
				if len(reqs) != tt.reqs || len(reqs) == 2 && !reflect.DeepEqual(reqs[0], reqs[1]) {
					t.Errorf("%d requests, want %d (a retry the same request)", len(reqs), tt.reqs)
				}
			})
		}
	})

	t.Run("recording", func(t *testing.T) {
		t.Parallel()
		ctx := codexGuard(t)
		s := serveScenario(t, ctx, bin, codexTool)
		const prompt = "run the probe"
		live := runCodex(t, ctx, codex, s.URL, prompt, 2)
		checkToolRun(t, live, "live")
		f := s.finish(t)
		reqs := requests(t, f)
		if len(reqs) != 2 {
			t.Fatalf("%d requests, want 2", len(reqs))
		}
		// The second request carries the call and its result back.
		var call, result bool
		for _, it := range reqs[1].Input {
			switch {
			case it.Type == "function_call" && it.CallID == "call_probe" && it.Name == "exec_command":
				call = true
			case it.Type == "function_call_output" && it.CallID == "call_probe":
				result = strings.Contains(it.Output, "Process exited with code 0") && strings.HasSuffix(it.Output, "\nprobe-42\n")
				if !result {
					t.Errorf("function_call_output %q", it.Output)
				}
			}
		}
		if !call || !result {
			t.Errorf("the second request lacks the call (%v) or its output (%v)", call, result)
		}

		// Served from the recording, twice, to fresh folders: the same
		// output, every request matched in spite of codex's per-run ids,
		// dates, folders and tool timings.
		for round := range 2 {
			fp := startServer(t, ctx, bin, "fake-provider", "--cassette", s.path, "--pace", "instant")
			r := runCodex(t, ctx, codex, fp.URL, prompt, 2)
			checkToolRun(t, r, fmt.Sprintf("replay %d", round))
			if r.stdout != live.stdout {
				t.Errorf("replay %d: stdout %q, live %q", round, r.stdout, live.stdout)
			}
			checkServed(t, fp, 2, 2)
		}

		// Without the built-in rules the first request already misses on
		// codex's per-run fields (ids in client_metadata and on the input
		// items, its folders in the text); codex prints the 400 and exits
		// 1. (prompt_cache_key and the session ids are the session id,
		// which the recorder scrubs as it does on the way in.)
		fp := startServer(t, ctx, bin, "fake-provider", "--cassette", s.path, "--pace", "instant", "--no-default-ignores")
		r := runCodex(t, ctx, codex, fp.URL, prompt, 2)
		fp.stop(t)
		log := fp.stderr.String()
		if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, "no recorded interaction matches") ||
			!strings.Contains(log, "request 0: POST /v1/responses: MISS, nearest interaction 0 differs in client_metadata.") ||
			!strings.Contains(log, "input[0].id") {
			t.Errorf("strict: exit %d, stdout %q\n%s\nlog:\n%s", r.code, r.stdout, r.stderr, log)
		}

		// Faults injected into the recording; codex (2 retries allowed)
		// sees each, retries, and ends with the recorded answer.
		answer := f.Interactions[1].Response.Body
		cut := strings.Index(answer, "event: response.output_text.delta")
		cut += strings.Index(answer[cut:], "\n\n") + 2 // after the first text delta
		for _, tt := range []struct {
			op       string
			requests int
		}{
			// A 429 with Retry-After (0 s, to keep the test fast) before
			// the first model request.
			{"429@0:retry-after=0", 3},
			// The answer's stream ends cleanly after its first text
			// delta, with no response.completed (cut by events: the
			// proxy read this fast stream in one chunk); the retry gets
			// the recorded stream.
			{fmt.Sprintf("truncate@1:event=%d,recover=true", strings.Count(answer[:cut], "\n\n")), 3},
			// The answer cut by a reset after its first text delta.
			{fmt.Sprintf("reset@1:byte=%d,recover=true", cut), 3},
		} {
			out := filepath.Join(t.TempDir(), "injected.yaml")
			if _, stderr, code := runCLI(t, "", "cassette", "inject", s.path, out, "--op", tt.op); code != 0 {
				t.Fatalf("inject %s: exit %d: %s", tt.op, code, stderr)
			}
			fp := startServer(t, ctx, bin, "fake-provider", "--cassette", out, "--pace", "instant")
			r := runCodex(t, ctx, codex, fp.URL, prompt, 2)
			checkToolRun(t, r, tt.op)
			if !strings.Contains(r.stderr, "Reconnecting... 1/2") {
				t.Errorf("%s: codex did not report a retry:\n%s", tt.op, r.stderr)
			}
			checkServed(t, fp, tt.requests, tt.requests)
		}
	})
}

// checkToolRun checks a run of codexTool: exit 0, the answer on stdout,
// the command's line on stderr and its file in the working folder.
func checkToolRun(t *testing.T, r codexResult, what string) {
	t.Helper()
	if r.code != 0 || r.stdout != "The command printed probe-42.\n" || !strings.Contains(r.stderr, "\nprobe-42\n") {
		t.Errorf("%s: exit %d, stdout %q\n%s", what, r.code, r.stdout, r.stderr)
	}
	if b, err := os.ReadFile(filepath.Join(r.work, "probe.txt")); err != nil || string(b) != "probe-42\n" {
		t.Errorf("%s: the shell tool's file: %q, %v", what, b, err)
	}
}

// checkServed stops a fake-provider --cassette and checks it served every
// one of requests requests and missed none.
func checkServed(t *testing.T, fp *childServer, requests, interactions int) {
	t.Helper()
	code := fp.stop(t)
	log := fp.stderr.String()
	summary := fmt.Sprintf("%d request(s): %d served, 0 missed; all %d interaction(s) served", requests, requests, interactions)
	if code != 0 || strings.Contains(log, "MISS") || !strings.Contains(log, summary) {
		t.Errorf("fake-provider --cassette: exit %d, want the summary %q:\n%s", code, summary, log)
	}
}
