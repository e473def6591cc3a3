package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openmax/openmax/internal/golden"
	"github.com/openmax/openmax/recorder/cassette"
	"github.com/openmax/openmax/recorder/replay"
)

// TestHookSessionsReplayWithoutTheirHooks records every hook session case
// with `openmax record` (the live session must print its golden
// transcript), then replays the cassette with the hook program gone: the
// recorded hook calls answer, so blocked, turn_refused ×N, unverified and
// every hook_failed come back byte for byte.
func TestHookSessionsReplayWithoutTheirHooks(t *testing.T) {
	t.Parallel() // waits on child processes: overlaps the package's other slow tests
	paths, err := filepath.Glob(filepath.Join(sessionsDir, "hook_*.txtar"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no hook_* session cases: %v", err)
	}
	for _, casePath := range paths {
		name := strings.TrimSuffix(filepath.Base(casePath), ".txtar")
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), name+".yaml")
			live, _ := runSession(t, casePath, []string{"record", "--cassette", path})
			if err := golden.Section(casePath, "transcript", "recording", live, false); err != nil {
				t.Fatalf("recording changed the live transcript: %v", err)
			}
			f, err := cassette.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if f.Session == nil || len(f.Session.Hooks) == 0 {
				t.Fatalf("the cassette holds no hook calls")
			}
			if !strings.Contains(name, "file_invalid") && !anyExchange(f.Session.Hooks) {
				t.Errorf("the cassette holds no hook exchange: %+v", f.Session.Hooks)
			}

			// The hook program is gone while the cassette replays.
			prog := hookProgram(t)
			if err := os.Rename(prog, prog+".away"); err != nil {
				t.Fatal(err)
			}
			defer os.Rename(prog+".away", prog)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var stderr bytes.Buffer
			replayed, err := replayOne(ctx, path, replay.Pace{Mode: "instant"}, nil, &stderr, env{})
			if err != nil {
				t.Fatal(err)
			}
			if stderr.Len() > 0 {
				t.Errorf("the replay did not reproduce the recording:\n%s", stderr.String())
			}
			// The live transcript names the project $PROJECT; so does this.
			var hello struct{ Project string }
			first, _, _ := bytes.Cut(replayed, []byte("\n"))
			if err := json.Unmarshal(first, &hello); err != nil || hello.Project == "" {
				t.Fatalf("replay's first line %q: %v", first, err)
			}
			replayed = bytes.ReplaceAll(replayed, []byte(hello.Project), []byte("$PROJECT"))
			want := live
			if i := bytes.Index(live, []byte("request:")); i >= 0 {
				want = live[:i]
			}
			if !bytes.Equal(replayed, want) {
				t.Errorf("replay differs from the live session:\n--- live\n%s--- replay\n%s", want, replayed)
			}
		})
	}
}

func anyExchange(calls []cassette.HookCall) bool {
	for _, c := range calls {
		if len(c.Exchanges) > 0 {
			return true
		}
	}
	return false
}

// TestReplayLiveHooks: `openmax replay --live-hooks DIR` runs DIR's hooks
// against a recorded session instead of the recorded hook calls. The
// recording had its completion refused twice; a new hook refusing once
// (with the same reason, so the next request is the recorded one) gives
// one turn_refused and the second completion stands.
func TestReplayLiveHooks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "refused.yaml")
	runSession(t, sessionPath("hook_turn_refused_persistent"), []string{"record", "--cassette", path})

	dir := t.TempDir()
	state := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, ".openmax"), 0o755); err != nil {
		t.Fatal(err)
	}
	conf := `{"hooks": [{"name": "newcheck", "event": "turn_end", "command": "` + hookProgram(t) + `", "args": ["refuse-n", "1", "` + filepath.Join(state, "n") + `", "run the tests first"]}]}`
	if err := os.WriteFile(filepath.Join(dir, ".openmax", "hooks.json"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := runCLI(t, "", "replay", path, "--live-hooks", dir, "--allow-unused")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	if n := strings.Count(out, `"type":"turn_refused"`); n != 1 || !strings.Contains(out, `"hook":"newcheck","reason":"run the tests first (1)","continuation":0`) ||
		!strings.Contains(out, `"text":"Done, really."}`+"\n"+`{"session_id":"s1","type":"done","stop_reason":"stop"}`) {
		t.Errorf("live hook replay: %d turn_refused\n%s", n, out)
	}

	for _, tc := range []struct {
		args []string
		code int // 2 for a command-line mistake, 1 for a missing file
	}{
		{[]string{"replay", path, "--live-hooks", t.TempDir()}, 1},             // no hooks there
		{[]string{"replay", filepath.Dir(path), "--live-hooks", dir}, 2},       // a directory of cassettes
		{[]string{"replay", path, "--live-hooks", filepath.Join(dir, "x")}, 1}, // not a directory
	} {
		if _, stderr, code := runCLI(t, "", tc.args...); code != tc.code || !strings.Contains(stderr, "--live-hooks") {
			t.Errorf("%q: exit %d, %s", tc.args, code, stderr)
		}
	}
}
