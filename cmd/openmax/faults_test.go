package main

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openmax/openmax/recorder/cassette"
	"github.com/openmax/openmax/recorder/replay"
)

// injectAndReplay writes a copy of the library cassette name with ops
// injected (through `openmax cassette inject`) and replays it, returning
// the transcript and the stdin the recorded client sends.
func injectAndReplay(t *testing.T, name string, ops ...string) (transcript, stdin string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), name+".yaml")
	args := []string{"cassette", "inject", filepath.Join(libraryDir, name+".yaml"), out}
	for _, op := range ops {
		args = append(args, "--op", op)
	}
	if _, stderr, code := runCLI(t, "", args...); code != 0 {
		t.Fatalf("inject %v: exit %d: %s", ops, code, stderr)
	}
	f, err := cassette.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	var in strings.Builder
	for _, c := range f.Session.Commands {
		in.WriteString(c.Line + "\n")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got, err := replayFile(ctx, f, out, replay.Pace{Mode: replay.PaceInstant}, nil, io.Discard, env{})
	if err != nil {
		t.Fatal(err)
	}
	return string(got), in.String()
}

// TestFaultsKeepEveryTurn injects faults anywhere into the README's
// two-turn story: whatever the fault does to the first turn, the second
// user command still arrives after its done and gets a turn of its own.
func TestFaultsKeepEveryTurn(t *testing.T) {
	// story.yaml: #0 is a 429, #1 the first answer (cut off), #2 the
	// answer to "please continue".
	for _, op := range []string{
		"429@0", "429@1:retry-after=3", // more retry lines before the first answer
		"503@1", "529@2",
		"reset@1:byte=0,recover=true", // dies before text, the retry gets the recording
		"reset@1:byte=200",            // dies after text: the turn ends early
		"stream-error@1:chunk=0,recover=true",
		"truncate@2:chunk=0,recover=true",
		"reset@2:byte=100",
		"stream-error@2:chunk=0",
	} {
		t.Run(op, func(t *testing.T) {
			got, stdin := injectAndReplay(t, "story", op)
			checkTranscript(t, []byte(got), []byte(stdin))
			if n := strings.Count(got, `"type":"done"`); n != 2 {
				t.Errorf("%d dones, want one per recorded turn:\n%s", n, got)
			}
			if strings.Contains(got, `"type":"protocol_error"`) {
				t.Errorf("a recorded command was refused:\n%s", got)
			}
		})
	}
}

// TestInjectRecovery: a body fault with recover=true is served once and
// the engine's retry gets the recorded reply; without it the retry has
// nothing to match.
func TestInjectRecovery(t *testing.T) {
	got, stdin := injectAndReplay(t, "openai_plain", "reset@0:byte=0,recover=true")
	checkTranscript(t, []byte(got), []byte(stdin))
	if !strings.Contains(got, `"type":"retry"`) || !strings.Contains(got, `"stop_reason":"stop"`) || !strings.Contains(got, "Hello from the fake OpenAI.") || strings.Contains(got, "replay_miss") {
		t.Errorf("the retry did not get the recorded reply:\n%s", got)
	}
	got, _ = injectAndReplay(t, "openai_plain", "reset@0:byte=0")
	if !strings.Contains(got, "replay_miss") || !strings.Contains(got, `"stop_reason":"error"`) {
		t.Errorf("without recover the retry should miss:\n%s", got)
	}
}
