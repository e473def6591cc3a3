package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/openmax/openmax/internal/fixture"
)

// TestBedrockCassetteCommands: the cassette tools read Bedrock's binary
// event stream frame by frame, in the library cassettes and in the real
// recordings A14 and A15: show names each frame, inject writes an
// exception frame or cuts a frame in two and the replay reads the
// result as AWS's client would, sweep judges every fault at every place.
func TestBedrockCassetteCommands(t *testing.T) {
	for _, tt := range []struct {
		file string
		want []string
	}{
		{filepath.Join(libraryDir, "bedrock_tool_round_trip.yaml"), []string{
			"chunk 1 at +0s, 119 B: messageStart", `chunk 3 at +0s, 173 B: text "Checking."`,
			"tool call 0: echo_args {\"path\":\"a.txt\"} (tooluse_1)", "finish: tool_use", "signal: messageStop"}},
		{filepath.Join(libraryDir, "bedrock_cut_mid_frame.yaml"), []string{"invoke-with-response-stream", `text "Partial answer"`}},
		{fixture.RealDir() + "/fantasy__bedrock-anthropic-claude-haiku-4-5__tool_streaming.yaml", []string{"tool call 0: weather", "signal: message_stop"}},
		{fixture.RealDir() + "/pydantic-ai-bedrock__test_bedrock_model_iter_stream.yaml", []string{"signal: messageStop"}},
	} {
		out, stderr, code := runCLI(t, "", "cassette", "show", tt.file)
		for _, w := range tt.want {
			if code != 0 || !strings.Contains(out, w) {
				t.Errorf("show %s: exit %d, no %q in\n%s%s", filepath.Base(tt.file), code, w, out, stderr)
			}
		}
	}

	for _, tt := range []struct {
		op   string
		want []string
	}{
		{"stream-error@0:chunk=3,code=throttlingException", []string{`"Hello from the fake Bedrock."`,
			`"type":"error","message":"throttlingException: Too many requests, please wait before trying again."`}},
		{"stream-error@0:chunk=1,recover=true", []string{`"type":"retry"`, "serviceUnavailableException", `"stop_reason":"end_turn"`}},
		{"truncate@0:chunk=5", []string{`"Hello from the fake Bedrock."`, "inside a message", `"stop_reason":"truncated"`}},
		{"429@0:retry-after=2", []string{"ThrottlingException: Too many requests", `"stop_reason":"end_turn"`}},
	} {
		t.Run(tt.op, func(t *testing.T) {
			got, stdin := injectAndReplay(t, "bedrock_plain", tt.op)
			checkTranscript(t, []byte(got), []byte(stdin))
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("no %q in\n%s", w, got)
				}
			}
		})
	}

	for _, f := range []string{filepath.Join(libraryDir, "bedrock_tool_round_trip.yaml"), fixture.RealDir() + "/fantasy__bedrock-anthropic-claude-haiku-4-5__tool_streaming.yaml"} {
		out, stderr, code := runCLI(t, "", "cassette", "sweep", f)
		if code != 0 || !strings.Contains(out, " 0 failed") {
			t.Errorf("sweep %s: exit %d\n%s%s", filepath.Base(f), code, out, stderr)
		}
	}
}
