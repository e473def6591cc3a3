package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openmax/openmax/internal/fixture"

	stockcassette "github.com/dnaeon/go-vcr/v2/cassette"

	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/internal/golden"
	"github.com/openmax/openmax/provider"
	fakeprovider "github.com/openmax/openmax/provider/fake"
	"github.com/openmax/openmax/provider/openai"
	"github.com/openmax/openmax/provider/script"
	"github.com/openmax/openmax/recorder/cassette"
	"github.com/openmax/openmax/recorder/replay"
	"github.com/openmax/openmax/replay/goldens"
)

// The cassette library (cassettes/*.yaml) is recorded, not written: each
// cassette is the provider traffic of one fake-provider session case
// (golden/sessions/http_*.txtar), captured by `openmax record` over real
// loopback HTTP. Re-record the whole library with
//
//	OPENMAX_RECORD=1 go test ./cmd/openmax -run TestRecordLibrary
//
// (cassettes/record.sh does that), then refresh the goldens with
// go test ./cmd/openmax -run TestCassetteLibrary -update.

const libraryDir = "../../cassettes"

func TestRecordLibrary(t *testing.T) {
	if os.Getenv("OPENMAX_RECORD") != "1" {
		t.Skip("re-records cassettes/ only when OPENMAX_RECORD=1 (see cassettes/record.sh)")
	}
	paths, _ := filepath.Glob(filepath.Join(sessionsDir, "http_*.txtar"))
	if len(paths) == 0 {
		t.Fatal("no http_* session cases in " + sessionsDir)
	}
	for _, casePath := range paths {
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(casePath), "http_"), ".txtar")
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(libraryDir, name+".yaml")
			transcript, _ := runSession(t, casePath, []string{"record", "--overwrite", "--cassette", path})
			// The recording run is the live session: it must match that
			// session's golden transcript.
			if err := golden.Section(casePath, "transcript", "recording", transcript, false); err != nil {
				t.Errorf("recording %s changed the live transcript: %v", name, err)
			}
		})
	}
}

// TestCassetteLibrary replays every cassette of the library through the
// real harness with the test API users get (goldens.Run): twice, checked
// against the contract and against golden/cassettes/NAME.golden.
func TestCassetteLibrary(t *testing.T) {
	goldens.Run(t, libraryDir, "../../golden/cassettes", *update)
}

// TestRecordThenReplay records a live session over loopback with
// `openmax record`, then replays the cassette: the replay prints exactly
// what the live session printed, and the cassette holds no key.
func TestRecordThenReplay(t *testing.T) {
	path := filepath.Join(t.TempDir(), "story.yaml")
	live, _ := runSession(t, sessionPath("http_story"), []string{"record", "--cassette", path})
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(data, []byte(testOpenAIKey)) {
		t.Fatal("the API key reached the cassette")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	replayed, err := replayOne(ctx, path, replay.Pace{Mode: "instant"}, nil, io.Discard, env{})
	if err != nil {
		t.Fatal(err)
	}
	want := live[:bytes.Index(live, []byte("request:"))]
	if !bytes.Equal(replayed, want) {
		t.Errorf("replay differs from the live session:\n--- live\n%s--- replay\n%s", want, replayed)
	}
}

// TestReplayCommand drives `openmax replay` itself: a directory table that
// passes, and a golden mismatch that fails with a diff.
func TestReplayCommand(t *testing.T) {
	out, stderr, code := runCLI(t, "", "replay", libraryDir, "--golden", "../../golden/cassettes")
	if code != 0 || !strings.Contains(out, "story") || !strings.Contains(out, " passed, 0 failed") {
		t.Errorf("replay DIR: exit %d\n%s\n%s", code, out, stderr)
	}
	bad := filepath.Join(t.TempDir(), "story.golden")
	if err := os.WriteFile(bad, []byte("something else\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = runCLI(t, "", "replay", filepath.Join(libraryDir, "story.yaml"), "--golden", bad)
	if code != 1 || !strings.Contains(stderr, "-something else") || !strings.Contains(stderr, `+{"type":"hello"`) {
		t.Errorf("golden mismatch: exit %d\n%s", code, stderr)
	}
	out, _, code = runCLI(t, "", "replay", filepath.Join(libraryDir, "quota_429.yaml"))
	if code != 1 || !strings.Contains(out, "insufficient_quota") {
		t.Errorf("replay of an error session: exit %d\n%s", code, out)
	}
}

// TestRecordProxyCommand: `openmax record --proxy` prints its base URL
// first, passes a client's stream through and writes the cassette when
// stopped.
func TestRecordProxyCommand(t *testing.T) {
	sc, err := script.Parse([]byte("replies:\n  - text: \"through the proxy\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	upstream := fakeprovider.New(sc, fakeprovider.Options{})
	base, err := upstream.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer upstream.Close()
	path := filepath.Join(t.TempDir(), "proxy.yaml")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	proxyCtx, stop := context.WithCancel(ctx)
	outR, outW := io.Pipe()
	codec := make(chan int, 1)
	go func() {
		codec <- run(proxyCtx, []string{"record", "--proxy", "--upstream", base, "--cassette", path}, strings.NewReader(""), outW, io.Discard, env{})
		outW.Close()
	}()
	first, err := bufio.NewReader(outR).ReadString('\n')
	if err != nil || !strings.HasPrefix(first, "http://127.0.0.1:") {
		t.Fatalf("first line %q, %v", first, err)
	}
	c, err := openai.New(openai.Config{APIKey: "sk-proxy-secret-123456", BaseURL: strings.TrimSpace(first) + "/v1", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	var text string
	for p := range c.Stream(ctx, provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Text: "hi"}}}) {
		if d, ok := p.(provider.TextDelta); ok {
			text += d.Text
		}
	}
	if text != "through the proxy" {
		t.Errorf("text through the proxy %q", text)
	}
	stop()
	if code := <-codec; code != 0 {
		t.Fatalf("exit %d", code)
	}
	f, err := cassette.Load(path)
	if err != nil || len(f.Interactions) != 1 || f.Interactions[0].Response.Code != 200 {
		t.Fatalf("cassette: %v %+v", err, f)
	}
	data, _ := os.ReadFile(path)
	if bytes.Contains(data, []byte("sk-proxy-secret-123456")) {
		t.Error("the key reached the cassette")
	}
	if _, err := stockcassette.Load(strings.TrimSuffix(path, ".yaml")); err != nil {
		t.Errorf("stock go-vcr cannot load it: %v", err)
	}
}

// TestCassetteCommands: import a real recording, show it, inject a fault
// into a library cassette and replay the result.
func TestCassetteCommands(t *testing.T) {
	dir := t.TempDir()
	imported := filepath.Join(dir, "a4.yaml")
	out, stderr, code := runCLI(t, "", "cassette", "import", fixture.Real(t, "anthropic-sdk-go__tool_runner_streaming_all.yaml"), imported)
	if code != 0 || !strings.Contains(out, "2 interaction(s)") {
		t.Fatalf("import: exit %d\n%s%s", code, out, stderr)
	}
	out, stderr, code = runCLI(t, "", "cassette", "show", imported)
	if code != 0 || !strings.Contains(out, "I'll get the current weather in San Francisco for you in Fahrenheit.") || !strings.Contains(out, "get_weather") {
		t.Errorf("show: exit %d\n%s%s", code, out, stderr)
	}
	injected := filepath.Join(dir, "plain_503.yaml")
	if _, stderr, code := runCLI(t, "", "cassette", "inject", filepath.Join(libraryDir, "openai_plain.yaml"), injected, "--op", "503@0:retry-after=2"); code != 0 {
		t.Fatalf("inject: exit %d: %s", code, stderr)
	}
	out, stderr, code = runCLI(t, "", "replay", injected)
	if code != 0 || !strings.Contains(out, `"type":"retry","attempt":2`) || !strings.Contains(out, "HTTP 503") || !strings.Contains(out, "Hello from the fake OpenAI.") {
		t.Errorf("replay of the injected cassette: exit %d\n%s%s", code, out, stderr)
	}
	if _, stderr, code := runCLI(t, "", "cassette", "inject", injected, filepath.Join(dir, "x.yaml"), "--op", "418@0"); code != 2 || !strings.Contains(stderr, "418") {
		t.Errorf("bad op: exit %d: %s", code, stderr)
	}
	if _, _, code := runCLI(t, "", "cassette", "frobnicate"); code != 2 {
		t.Errorf("unknown subcommand: exit %d", code)
	}
}

// TestImportedRecordingsReplayThroughTheEngine: every real recording in
// cassettes/real, imported with `openmax cassette import`, replays
// through the engine and the stdio wire with the reply fixture.Expected lists.
func TestImportedRecordingsReplayThroughTheEngine(t *testing.T) {
	tests := map[string]string{
		"simonw-llm__test_tool_use_basic.yaml":                             `The result of \\( 1231 \\times 2331 \\) is \\( 2,869,461 \\).`,
		"simonw-llm-anthropic__test_stream_events_tool_calls.yaml":         `"done","stop_reason":"tool_use"`,
		"simonw-llm-anthropic__test_thinking_prompt.yaml":                  `"message_done","text":"- Captain\n- Scoop"`,
		"anthropic-sdk-go__tool_runner_streaming_all.yaml":                 `"message_done","text":"The current weather in San Francisco is 68 degrees Fahrenheit."`,
		"fantasy__openai-gpt-4o-mini__multi_tool_streaming.yaml":           `"message_done","text":"The sum of 2 and 3 is 5, and the product of 2 and 3 is 6."`,
		"langchaingo-openai__TestClient_CreateChatCompletionStream.httprr": `"message_done","text":"1, 2, 3, 4, 5"`,
		"autogpt-cassettes-206c0689__test_write_file.yaml":                 `write_to_file`,
	}
	for file, want := range tests {
		t.Run(file, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "imported.yaml")
			if _, stderr, code := runCLI(t, "", "cassette", "import", fixture.Real(t, file), out); code != 0 {
				t.Fatalf("import: exit %d: %s", code, stderr)
			}
			transcript, stderr, _ := runCLI(t, "", "replay", out)
			if !strings.Contains(transcript, want) {
				t.Errorf("replay lacks %s\n%s%s", want, transcript, stderr)
			}
			if _, err := wire.CheckStreamStrict(strings.NewReader(transcript), func(v wire.Verdict) {
				if v.Err != nil {
					t.Errorf("checker: line %d: %v", v.Line, v.Err)
				}
			}); err != nil {
				t.Fatal(err)
			}
		})
	}
}
