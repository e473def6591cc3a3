// Package goldens pins the wire output of recorded harness sessions: it
// replays a folder of session cassettes through the real harness, each as
// a subtest, and compares each transcript with its golden file (goldie
// style, rewritten with -update).
package goldens

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/internal/golden"
	"github.com/openmax/openmax/internal/shard"
	"github.com/openmax/openmax/recorder/importer"
	"github.com/openmax/openmax/recorder/replay"
	"github.com/openmax/openmax/replay/tape"
)

// withoutBazel is the environment with Bazel's test variables hidden.
func withoutBazel(key string) string {
	switch key {
	case "TEST_SHARD_INDEX", "TEST_TOTAL_SHARDS", "TEST_SHARD_STATUS_FILE", "XML_OUTPUT_FILE", "TEST_UNDECLARED_OUTPUTS_DIR", "TESTBRIDGE_TEST_ONLY":
		return ""
	}
	return os.Getenv(key)
}

// Run replays every cassette in dir (*.yaml) through the real harness,
// offline and on virtual time, each as a subtest named after its file, and
// fails the subtest when the replay did not reproduce the recording (a
// recorded command refused, a request the cassette could not answer, an
// interaction never requested), when two replays differ by a byte, when a
// line breaks the openmax-stdio contract (wire.Checker), or when the
// transcript differs from goldenDir/NAME.golden. With update it writes the
// transcripts as the golden files instead; wire it to a -update flag:
//
//	var update = flag.Bool("update", false, "rewrite golden files")
//
//	func TestRecordedSessions(t *testing.T) {
//		goldens.Run(t, "testdata/cassettes", "testdata/golden", *update)
//	}
//
// The golden files are the ones `openmax replay DIR --golden GOLDENDIR`
// checks and writes. Recordings in another recorder's format (vcrpy,
// go-vcr, httprr) are converted as `openmax cassette import` would.
//
// When the environment names a shard of a split run (OPENMAX_SHARD=K/N, or
// a CI engine's variables: CircleCI, Buildkite, GitLab, a Kubernetes
// Indexed Job with OPENMAX_SHARDS=N), only that shard's cassettes replay;
// the others' subtests are skipped, saying which shard runs them. The
// shards are the ones `openmax replay DIR --shard K/N` runs. Bazel's
// variables are left to the Go rules, which shard a go_test by test
// function.
func Run(t *testing.T, dir, goldenDir string, update bool) {
	t.Helper()
	RunShard(t, dir, goldenDir, update, "")
}

// RunShard is Run on shard K/N of the cassettes ("2/4"); "" reads the
// shard from the environment as Run does.
func RunShard(t *testing.T, dir, goldenDir string, update bool, spec string) {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("goldens.Run: no cassettes (*.yaml) in %s", dir)
	}
	sort.Strings(paths)
	shards := 0
	if v := os.Getenv("OPENMAX_SHARDS"); v != "" {
		if shards, err = strconv.Atoi(v); err != nil {
			t.Fatalf("goldens.Run: OPENMAX_SHARDS=%q is not a number", v)
		}
	}
	se, err := shard.Detect(spec, shards, withoutBazel)
	if err != nil {
		t.Fatalf("goldens.Run: %v", err)
	}
	var names []string
	for _, p := range paths {
		names = append(names, strings.TrimSuffix(filepath.Base(p), ".yaml"))
	}
	owner := shard.Plan(names, se.Spec.Total, nil)
	for _, p := range paths {
		name := strings.TrimSuffix(filepath.Base(p), ".yaml")
		t.Run(name, func(t *testing.T) {
			if se.Spec.Sharded() && owner[name] != se.Spec.Index {
				t.Skipf("%s is in shard %d/%d; this is shard %s (from %s)", name, owner[name]+1, se.Spec.Total, se.Spec, se.Source)
			}
			f, _, err := importer.Load(p)
			if err != nil {
				t.Fatal(err)
			}
			replayOnce := func() tape.Result {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				r, err := tape.Replay(ctx, f, tape.ReplayOptions{Serving: replay.Options{Pace: replay.Pace{Mode: replay.PaceInstant}}})
				if errors.Is(err, tape.ErrNoSession) {
					t.Fatalf("%s: %v\n%s", p, err, tape.NoSessionNextStep(p))
				}
				if err != nil {
					t.Fatal(err)
				}
				for _, p := range r.Problems(false) {
					t.Errorf("the replay did not reproduce the recording: %s", p)
				}
				return r
			}
			first, second := replayOnce(), replayOnce()
			if !bytes.Equal(first.Transcript(), second.Transcript()) {
				t.Errorf("two replays differ:\n%s\n---\n%s", first.Transcript(), second.Transcript())
			}
			c := wire.NewChecker(wire.Strict())
			c.SetInput(first.Stdin)
			if _, err := c.Stream(bytes.NewReader(first.Stdout), func(v wire.Verdict) {
				if v.Err != nil {
					t.Errorf("line %d breaks the contract: %v", v.Line, v.Err)
				}
			}); err != nil {
				t.Fatal(err)
			}
			if err := golden.File(filepath.Join(goldenDir, name+".golden"), "replay", first.Transcript(), update); err != nil {
				t.Error(err)
			}
		})
	}
}
