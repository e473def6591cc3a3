package codexscenario_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openmax/openmax/replay/appserver"
	"github.com/openmax/openmax/replay/codexscenario"
)

// The committed recordings of the real codex (provider/codex/testdata).
var transcripts = filepath.Join("..", "..", "provider", "codex", "testdata", "transcripts")

func scenario(t *testing.T, name string) codexscenario.Scenario {
	t.Helper()
	sc, ok := codexscenario.Lookup(name)
	if !ok {
		t.Fatalf("no scenario %q", name)
	}
	return sc
}

// replay runs scenario name's driver against transcript files and returns
// the outcome and the driver's and the harness's errors.
func replay(t *testing.T, name string, files ...string) (codexscenario.Outcome, error, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h, err := codexscenario.NewReplay(t.TempDir(), files)
	if err != nil {
		t.Fatal(err)
	}
	out, runErr := scenario(t, name).Run(ctx, h)
	return out, runErr, h.Finish(ctx)
}

// edited writes the committed transcript of name with edit applied to its
// text.
func edited(t *testing.T, name string, edit func(string) string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(transcripts, name))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(edit(string(b))), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReplayPassesItsOwnRecording(t *testing.T) {
	out, runErr, finErr := replay(t, "text", filepath.Join(transcripts, "text.jsonl"))
	if runErr != nil || finErr != nil {
		t.Fatalf("run: %v; finish: %v", runErr, finErr)
	}
	if !strings.Contains(out.Summary, `item/completed agentMessage msg_fake_1_0 "Hello from the fake." (the text of its 3 deltas)`) {
		t.Errorf("outcome:\n%s", out.Summary)
	}
}

// TestReplayCatchesDrift: what a replay must refuse.
func TestReplayCatchesDrift(t *testing.T) {
	t.Run("another driver misses", func(t *testing.T) {
		// The model_switch driver's first turn/start says "Hello.", the
		// recording "Say hello.": the fake answers with the diff.
		_, runErr, finErr := replay(t, "model_switch", filepath.Join(transcripts, "text.jsonl"))
		if runErr == nil || !errors.Is(finErr, appserver.ErrMiss) {
			t.Errorf("run: %v; finish: %v; want a run error and a miss", runErr, finErr)
		}
	})
	t.Run("a recorded answer changed shows in the outcome", func(t *testing.T) {
		f := edited(t, "text.jsonl", func(s string) string { return strings.ReplaceAll(s, " the fake.", " a changed fake.") })
		out, runErr, finErr := replay(t, "text", f)
		if runErr != nil || finErr != nil {
			t.Fatalf("run: %v; finish: %v", runErr, finErr)
		}
		if !strings.Contains(out.Summary, `"Hello from a changed fake."`) {
			t.Errorf("outcome:\n%s", out.Summary)
		}
	})
	t.Run("a recorded client line changed is a miss", func(t *testing.T) {
		f := edited(t, "text.jsonl", func(s string) string { return strings.Replace(s, `"text":"Say hello."`, `"text":"Say hi."`, 1) })
		_, runErr, finErr := replay(t, "text", f)
		if runErr == nil || !errors.Is(finErr, appserver.ErrMiss) {
			t.Errorf("run: %v; finish: %v; want a run error and a miss", runErr, finErr)
		}
	})
	t.Run("lines left at the end", func(t *testing.T) {
		f := edited(t, "text.jsonl", func(s string) string {
			return s + `{"dir":"send","msg":{"id":99,"method":"thread/read","params":{"threadId":"x"}}}` + "\n"
		})
		_, runErr, finErr := replay(t, "text", f)
		if runErr != nil || !errors.Is(finErr, appserver.ErrLeftover) {
			t.Errorf("run: %v; finish: %v; want a leftover", runErr, finErr)
		}
	})
	t.Run("a missing second transcript", func(t *testing.T) {
		_, runErr, _ := replay(t, "resume_fork", filepath.Join(transcripts, "resume_fork.jsonl"))
		if !errors.Is(runErr, codexscenario.ErrNoClient) {
			t.Errorf("run: %v, want ErrNoClient", runErr)
		}
	})
	t.Run("an unused transcript", func(t *testing.T) {
		_, runErr, finErr := replay(t, "text", filepath.Join(transcripts, "text.jsonl"), filepath.Join(transcripts, "tool.jsonl"))
		if runErr != nil || finErr == nil || !strings.Contains(finErr.Error(), "started 1 clients for 2 transcripts") {
			t.Errorf("run: %v; finish: %v", runErr, finErr)
		}
	})
}

func TestCompareTranscripts(t *testing.T) {
	const (
		init     = `{"dir":"send","msg":{"id":1,"method":"initialize","params":{"clientInfo":{"name":"x","version":"1.0"}}}}`
		initRes  = `{"dir":"recv","msg":{"id":1,"result":{}}}`
		start    = `{"dir":"send","msg":{"id":2,"method":"thread/start","params":{"cwd":"/rec/dir"}}}`
		started  = `{"dir":"recv","msg":{"method":"thread/started","params":{"thread":{"cwd":"/rec/dir","path":"/rec/dir/a"}},"emittedAtMs":1}}`
		startRes = `{"dir":"recv","msg":{"id":2,"result":{"thread":{"id":"t1","createdAt":5}}}}`
	)
	rec := strings.Join([]string{init, initRes, start, started, startRes}, "\n") + "\n"
	tests := []struct {
		name, got string
		ok        bool
	}{
		{"the same", rec, true},
		{"another dir, times, request ids and client version",
			strings.Join([]string{
				strings.NewReplacer(`"id":1`, `"id":7`, `"1.0"`, `"2.0"`).Replace(init),
				initRes,
				strings.NewReplacer(`/rec/dir`, `/other/place`, `"id":2`, `"id":8`).Replace(start),
				strings.NewReplacer(`/rec/dir`, `/other/place`, `"emittedAtMs":1`, `"emittedAtMs":99`).Replace(started),
				strings.Replace(startRes, `"createdAt":5`, `"createdAt":6`, 1),
			}, "\n"), true},
		{"a client line earlier among the app-server's",
			strings.Join([]string{init, start, initRes, started, startRes}, "\n"), true},
		{"a client line later than recorded",
			strings.Join([]string{init, initRes, started, start, startRes}, "\n"), false},
		{"an app-server line changed",
			strings.Join([]string{init, initRes, start, started, strings.Replace(startRes, `"t1"`, `"t2"`, 1)}, "\n"), false},
		{"a client line changed",
			strings.Join([]string{init, initRes, strings.Replace(start, `thread/start`, `thread/resume`, 1), started, startRes}, "\n"), false},
		{"a line missing", strings.Join([]string{init, initRes, start, started}, "\n"), false},
		{"a path outside the dir",
			strings.Join([]string{init, initRes, start, strings.Replace(started, `/rec/dir/a`, `/rec/dirt/a`, 1), startRes}, "\n"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gotDir := "/rec/dir"
			if strings.Contains(tt.got, "/other/place") {
				gotDir = "/other/place"
			}
			err := codexscenario.CompareTranscripts([]byte(rec), []byte(tt.got), codexscenario.RecordedDir([]byte(rec)), gotDir)
			if (err == nil) != tt.ok {
				t.Errorf("err = %v, want ok %v", err, tt.ok)
			}
		})
	}
}

func TestRecordingWaitsForLines(t *testing.T) {
	var r codexscenario.Recording
	done := make(chan error, 1)
	go func() { done <- r.WaitLines(context.Background(), 2) }()
	r.Write([]byte("a\n"))
	r.Write([]byte("b\n"))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := r.WaitLines(ctx, 3); !errors.Is(err, context.Canceled) {
		t.Errorf("WaitLines past the end with a cancelled context: %v", err)
	}
	if string(r.Bytes()) != "a\nb\n" {
		t.Errorf("Bytes %q", r.Bytes())
	}
}
