package codex_test

import (
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openmax/openmax/internal/golden"
	"github.com/openmax/openmax/internal/rapidchecks"
	"github.com/openmax/openmax/replay/codexscenario"
)

var update = flag.Bool("update", false, "rewrite the golden outcomes of the replayed codex sessions in testdata/outcomes")

var (
	transcriptsDir = filepath.Join("testdata", "transcripts")
	outcomesDir    = filepath.Join("testdata", "outcomes")
)

// recordHint says how the recordings are made.
const recordHint = "(the recordings are made against the real codex: OPENMAX_RECORD_CODEX=1 go test ./cmd/openmax -run 'TestCodexAppServer$')"

// replayScenario runs sc against the in-process fake app-server replaying
// its committed transcripts, and checks the replay: nothing missed, nothing
// left, the client's transcript the recording's.
func replayScenario(t *testing.T, sc codexscenario.Scenario) codexscenario.Outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var files []string
	for n := 1; n <= sc.Clients; n++ {
		files = append(files, filepath.Join(transcriptsDir, codexscenario.TranscriptFile(sc.Name, n)))
	}
	h, err := codexscenario.NewReplay(t.TempDir(), files)
	if errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%v %s", err, recordHint)
	}
	if err != nil {
		t.Fatal(err)
	}
	out, err := sc.Run(ctx, h)
	if ferr := h.Finish(ctx); ferr != nil {
		err = errors.Join(err, ferr)
	}
	if err != nil {
		t.Fatalf("%v\nthe outcome so far:\n%s", err, out.Summary)
	}
	return out
}

// TestReplayGolden replays every scenario's recording of the real codex
// 0.169.0 to the client, driven as it was recorded: the fake app-server
// must replay each transcript whole with no miss, the client's own
// transcript must reproduce the recording line for line, and what the
// client saw must equal the golden outcome (-update rewrites it).
func TestReplayGolden(t *testing.T) {
	for _, sc := range codexscenario.All() {
		t.Run(sc.Name, func(t *testing.T) {
			t.Parallel()
			out := replayScenario(t, sc)
			path := filepath.Join(outcomesDir, codexscenario.OutcomeFile(sc.Name))
			if err := golden.File(path, "replayed", []byte(out.Summary), *update); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestReplayScenariosAreSound checks the scenarios against what is
// committed: every transcript and outcome belongs to a scenario (none
// left from a renamed one), and each outcome is a summary a client can
// fail: a turn completed, its agent text there.
func TestReplayScenariosAreSound(t *testing.T) {
	want := map[string]bool{}
	for _, sc := range codexscenario.All() {
		for n := 1; n <= sc.Clients; n++ {
			want[filepath.Join(transcriptsDir, codexscenario.TranscriptFile(sc.Name, n))] = true
		}
		want[filepath.Join(outcomesDir, codexscenario.OutcomeFile(sc.Name))] = true
	}
	var have []string
	for _, dir := range []string{transcriptsDir, outcomesDir} {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			have = append(have, filepath.Join(dir, e.Name()))
		}
	}
	for _, f := range have {
		if !want[f] {
			t.Errorf("%s belongs to no scenario of replay/codexscenario", f)
		}
		delete(want, f)
	}
	for f := range want {
		t.Errorf("%s is missing %s", f, recordHint)
	}
	for _, sc := range codexscenario.All() {
		b, err := os.ReadFile(filepath.Join(outcomesDir, codexscenario.OutcomeFile(sc.Name)))
		if err != nil {
			continue
		}
		if !strings.Contains(string(b), "turn/completed status=completed") {
			t.Errorf("%s: no turn completed in the outcome:\n%s", sc.Name, b)
		}
	}
}

// TestReplayIsDeterministic replays every scenario again and again: the
// same outcome every time (the fake and the client keep no state between
// runs and race on nothing the outcome shows). Fewer rounds under -race.
func TestReplayIsDeterministic(t *testing.T) {
	rounds := rapidchecks.Pick(30, 5)
	if testing.Short() {
		rounds = 2
	}
	for _, sc := range codexscenario.All() {
		t.Run(sc.Name, func(t *testing.T) {
			t.Parallel()
			var outs []string
			for range rounds {
				outs = append(outs, replayScenario(t, sc).Summary)
			}
			if i := slices.IndexFunc(outs, func(s string) bool { return s != outs[0] }); i >= 0 {
				t.Errorf("round %d differs from round 0:\n%s", i,
					golden.Diff("round 0", "round", []byte(outs[0]), []byte(outs[i])))
			}
		})
	}
}
