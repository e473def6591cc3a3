package goldens_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/openmax/openmax/replay/goldens"
)

// TestGoldensNoSessionNextStep: goldens.Run on a cassette with no recorded
// session (a proxy recording) fails its subtest with the next step the
// CLI gives: serve it with fake-provider, or import it to make a session
// up. It runs Goldens in a child test process, which must fail.
func TestGoldensNoSessionNextStep(t *testing.T) {
	if dir := os.Getenv("OPENMAX_VCR_GOLDENS_DIR"); dir != "" {
		goldens.Run(t, dir, filepath.Join(dir, "golden"), false)
		return
	}
	data, err := os.ReadFile(filepath.Join("..", "..", "cassettes", "openai_plain.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	head, _, found := strings.Cut(string(data), "\nopenmax:\n")
	if !found {
		t.Fatal("the library cassette has no session to take out")
	}
	dir := t.TempDir()
	cassette := filepath.Join(dir, "proxy.yaml")
	if err := os.WriteFile(cassette, []byte(head+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestGoldensNoSessionNextStep$", "-test.v")
	cmd.Env = append(os.Environ(), "OPENMAX_VCR_GOLDENS_DIR="+dir)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("goldens.Run passed a cassette with no session:\n%s", out)
	}
	for _, want := range []string{"no recorded harness session", "openmax fake-provider --cassette " + cassette, "openmax cassette import " + cassette + " OUT.yaml"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the failure lacks %q:\n%s", want, out)
		}
	}
}

// TestGoldensShard runs goldens.Run on a small library in child test
// processes, one per shard, with the shard given as OPENMAX_SHARD=K/3 or
// as CircleCI's variables: each cassette runs in exactly one shard and is
// skipped in the others, saying which shard runs it.
func TestGoldensShard(t *testing.T) {
	if dir := os.Getenv("OPENMAX_GOLDENS_SHARD_DIR"); dir != "" {
		goldens.Run(t, dir, filepath.Join(dir, "golden"), false)
		return
	}
	dir := t.TempDir()
	names := []string{"openai_plain", "anthropic_plain", "gemini_plain", "openai_tool_round_trip", "5xx_and_529"}
	for _, n := range names {
		for _, f := range []struct{ from, to string }{
			{filepath.Join("..", "..", "cassettes", n+".yaml"), filepath.Join(dir, n+".yaml")},
			{filepath.Join("..", "..", "golden", "cassettes", n+".golden"), filepath.Join(dir, "golden", n+".golden")},
		} {
			data, err := os.ReadFile(f.from)
			if err != nil {
				t.Fatal(err)
			}
			os.MkdirAll(filepath.Dir(f.to), 0o755)
			if err := os.WriteFile(f.to, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tt := range []struct {
		name string
		env  func(k int) []string
		from string
	}{
		{"OPENMAX_SHARD", func(k int) []string { return []string{"OPENMAX_SHARD=" + strconv.Itoa(k+1) + "/3"} }, "OPENMAX_SHARD"},
		{"circleci", func(k int) []string {
			return []string{"CIRCLE_NODE_INDEX=" + strconv.Itoa(k), "CIRCLE_NODE_TOTAL=3"}
		}, "circleci"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ran := map[string]int{}
			for k := range 3 {
				cmd := exec.Command(os.Args[0], "-test.run=^TestGoldensShard$", "-test.v")
				cmd.Env = append(cleanShardEnv(), "OPENMAX_GOLDENS_SHARD_DIR="+dir)
				cmd.Env = append(cmd.Env, tt.env(k)...)
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("shard %d: %v\n%s", k+1, err, out)
				}
				for _, n := range names {
					pass := strings.Contains(string(out), "--- PASS: TestGoldensShard/"+n+" ")
					skip := strings.Contains(string(out), "--- SKIP: TestGoldensShard/"+n+" ")
					if pass == skip {
						t.Fatalf("shard %d: %s neither passed nor was skipped (or both):\n%s", k+1, n, out)
					}
					if pass {
						ran[n]++
					}
				}
				if want := "; this is shard " + strconv.Itoa(k+1) + "/3 (from " + tt.from + ")"; strings.Count(string(out), "--- SKIP") > 0 && !strings.Contains(string(out), want) {
					t.Errorf("shard %d: the skip reason lacks %q:\n%s", k+1, want, out)
				}
			}
			for _, n := range names {
				if ran[n] != 1 {
					t.Errorf("%s ran in %d shards, want 1", n, ran[n])
				}
			}
		})
	}
}

// cleanShardEnv is the environment without any shard variable of a CI
// engine the suite itself may run under.
func cleanShardEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "OPENMAX_SHARD", "OPENMAX_SHARDS", "CIRCLE_NODE_INDEX", "CIRCLE_NODE_TOTAL", "BUILDKITE_PARALLEL_JOB", "BUILDKITE_PARALLEL_JOB_COUNT",
			"CI_NODE_INDEX", "CI_NODE_TOTAL", "JOB_COMPLETION_INDEX", "TEST_SHARD_INDEX", "TEST_TOTAL_SHARDS":
			continue
		}
		env = append(env, kv)
	}
	return env
}
