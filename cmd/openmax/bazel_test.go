package main

import (
	"archive/zip"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openmax/openmax/internal/citest"
	"github.com/openmax/openmax/internal/flock"
)

// bazelRulesJava is where Debian's bazel-rules-java puts rules_java, found
// through dpkg (the fallback is its usual place).
func bazelRulesJava(t *testing.T) string {
	t.Helper()
	if out, err := exec.Command("dpkg", "-L", "bazel-rules-java").Output(); err == nil {
		for _, l := range strings.Split(string(out), "\n") {
			if strings.HasSuffix(l, "/rules/java/WORKSPACE") {
				return filepath.Dir(l)
			}
		}
	}
	return "/usr/share/bazel/rules/java"
}

// needBazel skips a test where Bazel is not installed, with the reason,
// and fails it in CI (CI set, not to false or 0), whose .ci/run installs
// it.
func needBazel(t *testing.T) (bazel, rulesJava string) {
	t.Helper()
	bazel, err := exec.LookPath("bazel")
	rulesJava = bazelRulesJava(t)
	_, jerr := os.Stat(filepath.Join(rulesJava, "WORKSPACE"))
	if err == nil && jerr == nil {
		return bazel, rulesJava
	}
	why := "Bazel is not installed (apt-get install bazel-bootstrap bazel-rules-java, as .ci/run does)"
	if err == nil {
		why = "rules_java is not installed (apt-get install bazel-rules-java, as .ci/run does)"
	}
	citest.SkipOutsideCI(t, why)
	return "", ""
}

// TestBazelShardedLibrary runs the cassette library under real Bazel,
// offline: an sh_test with shard_count = 4 replays it with the openmax
// binary, which reads Bazel's sharding variables with no flag, touches the
// status file, writes its JUnit to XML_OUTPUT_FILE and its JSON among the
// undeclared outputs; an unsharded sh_test replays it whole. The four
// shards' reports, merged by `openmax report merge`, are byte for byte the
// whole run's, and every shard ran a part.
//
// One `bazel --batch test` builds and runs both. Its output root lives in
// the user's cache folder (Bazel's extracted server and the workspace's
// analysis stay there between runs), under a lock, since two test
// processes would share it.
func TestBazelShardedLibrary(t *testing.T) {
	bazel, rulesJava := needBazel(t)
	bin := buildBinary(t)
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	root := filepath.Join(cache, "openmax-bazel")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	lock, err := flock.Acquire(filepath.Join(root, "lock"), 0o644, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()

	// A fresh workspace at a fixed path (Bazel's output base is named by
	// it): the template, the library, its golden files and the binary.
	ws := filepath.Join(root, "workspace")
	if err := os.RemoveAll(ws); err != nil {
		t.Fatal(err)
	}
	copyTree(t, "testdata/bazel/workspace", ws)
	copyTree(t, libraryDir, filepath.Join(ws, "lib"))
	os.Remove(filepath.Join(ws, "lib", "README.md"))
	copyTree(t, "../../golden/cassettes", filepath.Join(ws, "golden", "lib"))
	copyFile(t, bin, filepath.Join(ws, "openmax"), 0o755)
	stubs, _ := filepath.Abs("testdata/bazel")

	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, bazel, "--batch", "--nohome_rc", "--noworkspace_rc", "--output_user_root="+filepath.Join(root, "output"),
		"test", "//:suite", "//:whole",
		"--override_repository=rules_java="+rulesJava,
		"--override_repository=rules_cc="+filepath.Join(stubs, "rules_cc"),
		"--override_repository=remote_coverage_tools="+filepath.Join(stubs, "remote_coverage_tools"),
		"--nocache_test_results", "--spawn_strategy=local",
		"--test_output=errors", "--noshow_progress", "--color=no", "--curses=no")
	cmd.Dir = ws
	out, err := cmd.CombinedOutput()
	t.Logf("bazel --batch test took %s", time.Since(start).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("bazel test: %v\n%s", err, out)
	}

	logs := filepath.Join(ws, "bazel-testlogs")
	var junits, jsons []string
	for k := 1; k <= 4; k++ {
		dir := filepath.Join(logs, "suite", "shard_"+itoa(k)+"_of_4")
		log, err := os.ReadFile(filepath.Join(dir, "test.log"))
		if err != nil {
			t.Fatal(err)
		}
		if want := "shard " + itoa(k) + "/4 (from bazel)"; !strings.Contains(string(log), want) {
			t.Errorf("shard %d's log lacks %q:\n%s", k, want, log)
		}
		junits = append(junits, filepath.Join(dir, "test.xml"))
		jsons = append(jsons, unzipReport(t, dir, "shard"+itoa(k)+".json"))
	}
	whole := filepath.Join(logs, "whole")
	for _, kind := range []struct {
		name   string
		shards []string
		whole  string
	}{
		{"junit", junits, filepath.Join(whole, "test.xml")},
		{"json", jsons, unzipReport(t, whole, "whole.json")},
	} {
		want, err := os.ReadFile(kind.whole)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(want, []byte(`"lib/openai_plain.yaml"`)) {
			t.Errorf("the whole run's %s is not openmax's report of the library:\n%s", kind.name, want)
		}
		merge := exec.Command(bin, append([]string{"report", "merge", "--" + kind.name, "-"}, kind.shards...)...)
		var stderr bytes.Buffer
		merge.Stderr = &stderr
		got, err := merge.Output()
		if err != nil {
			t.Fatalf("report merge: %v\n%s", err, stderr.String())
		}
		if !bytes.Equal(got, want) {
			t.Errorf("the merged shards' %s differs from the whole run's:\n%s\n---\n%s", kind.name, got, want)
		}
	}
}

// unzipReport takes openmax's JSON report out of the test's undeclared
// outputs (Bazel 4 zips them into test.outputs/outputs.zip) into a file
// named name, and returns its path.
func unzipReport(t *testing.T, testlog, name string) string {
	t.Helper()
	z, err := zip.OpenReader(filepath.Join(testlog, "test.outputs", "outputs.zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	f, err := z.Open("openmax-replay.json")
	if err != nil {
		t.Fatalf("%s: the undeclared outputs: %v", testlog, err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// copyTree copies the files of src into dst (created), recursively.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		copyFile(t, p, filepath.Join(dst, rel), info.Mode().Perm())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, src, dst string, perm os.FileMode) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, perm); err != nil {
		t.Fatal(err)
	}
}
