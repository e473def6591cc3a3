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
	"github.com/openmax/openmax/replay"
)

// TestHookSessionsReplayWithoutTheirHooks records every hook session case
// with `openmax record` (the live session must print its golden
// transcript), then replays the cassette with the hook program gone: the
// recorded hook calls answer, so blocked, turn_refused ×N, unverified and
// every hook_failed come back byte for byte.
func TestHookSessionsReplayWithoutTheirHooks(t *testing.T) {
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
