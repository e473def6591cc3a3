package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/openmax/openmax/internal/fixture"
)

// TestSweepLibrary sweeps every cassette of the library: every single
// fault at every place, replayed through the real engine; none may break
// an invariant. (Locally, --repeat 2 also replays each variant twice and
// fails it when the two differ; that doubles the time, so CI leaves it to
// the golden library test, which replays every cassette twice.)
func TestSweepLibrary(t *testing.T) {
	t.Parallel() // waits on child processes: overlaps the package's other slow tests
	paths, _ := filepath.Glob(filepath.Join(libraryDir, "*.yaml"))
	if len(paths) == 0 {
		t.Fatal("no cassettes in " + libraryDir)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	start := time.Now()
	code := runSweep(ctx, []string{libraryDir, "--max-variants", "0", "--json"}, &stdout, &stderr, env{})
	elapsed := time.Since(start)
	var rep struct {
		Rows []struct {
			Cassette, Variant string
			Failures          []string
		}
		Variants, Cassettes, Failed int
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("exit %d, stdout is not the JSON report: %v\n%s%s", code, err, stdout.Bytes(), stderr.Bytes())
	}
	t.Logf("%d variants over %d cassettes in %s: %.0f variants/s",
		rep.Variants, rep.Cassettes, elapsed.Round(time.Millisecond), float64(rep.Variants)/elapsed.Seconds())
	if rep.Cassettes != len(paths) {
		t.Errorf("%d cassettes swept, the library has %d", rep.Cassettes, len(paths))
	}
	if rep.Variants < 10*len(paths) {
		t.Errorf("only %d variants over %d cassettes", rep.Variants, len(paths))
	}
	for _, r := range rep.Rows {
		if len(r.Failures) > 0 {
			t.Errorf("%s %s: %s", r.Cassette, r.Variant, strings.Join(r.Failures, "; "))
		}
	}
	if code != 0 || rep.Failed != 0 {
		t.Errorf("exit %d, %d failed; stderr:\n%s", code, rep.Failed, stderr.Bytes())
	}
}

func TestSweepCLI(t *testing.T) {
	one := filepath.Join(libraryDir, "openai_tool_round_trip.yaml")
	tests := []struct {
		name     string
		args     []string
		code     int
		stdout   []string // each in stdout
		stderr   string   // in stderr
		noStdout bool
	}{
		{"no argument", nil, 2, nil, "usage: openmax cassette sweep", true},
		{"two arguments", []string{one, one}, 2, nil, "usage: openmax cassette sweep", true},
		{"a missing file", []string{"no/such.yaml"}, 1, nil, "no such file", true},
		{"a bad flag", []string{one, "--parallel", "x"}, 2, nil, "invalid value", true},
		{"a zero deadline", []string{one, "--deadline", "0s"}, 2, nil, "usage:", true},
		{"an empty directory", []string{t.TempDir()}, 1, nil, "no cassettes", true},
		{"one cassette, bounded", []string{one, "--max-variants", "11", "--parallel", "3"}, 0, []string{
			"CASSETTE                     VARIANT",
			"\nopenai_tool_round_trip.yaml  none ",
			"\nopenai_tool_round_trip.yaml  429@1 ",
			"\nopenai_tool_round_trip.yaml  truncate@0:chunk=1 ",
			"\n12 variant(s) over 1 cassette(s), 0 failed\n",
		}, "12 variants over 1 cassette(s), 0 failed", false},
		{"flags before the file, JSON", []string{"--json", "--max-variants", "3", one}, 0, []string{
			`"variant": "none"`, `"variants": 4`, `"failed": 0`,
		}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := runSweep(context.Background(), tt.args, &stdout, &stderr, env{})
			if code != tt.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tt.code, stderr.Bytes())
			}
			for _, s := range tt.stdout {
				if !strings.Contains(stdout.String(), s) {
					t.Errorf("stdout lacks %q:\n%s", s, stdout.Bytes())
				}
			}
			if !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tt.stderr, stderr.Bytes())
			}
			if tt.noStdout && stdout.Len() > 0 {
				t.Errorf("stdout on a usage error:\n%s", stdout.Bytes())
			}
		})
	}
}

// The table holds no timing: two sweeps of a cassette print the same bytes
// whatever the parallelism.
func TestSweepDeterministic(t *testing.T) {
	one := filepath.Join(libraryDir, "anthropic_tool_round_trip.yaml")
	var first []byte
	for _, par := range []string{"1", "4"} {
		var stdout, stderr bytes.Buffer
		if code := runSweep(context.Background(), []string{one, "--parallel", par}, &stdout, &stderr, env{}); code != 0 {
			t.Fatalf("exit %d:\n%s%s", code, stdout.Bytes(), stderr.Bytes())
		}
		if first == nil {
			first = stdout.Bytes()
		} else if !bytes.Equal(first, stdout.Bytes()) {
			t.Fatalf("--parallel %s printed other bytes:\n%s\nthan:\n%s", par, stdout.Bytes(), first)
		}
	}
}

// `openmax cassette sweep` is reachable from the binary's argument list.
func TestSweepSubcommand(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"cassette", "sweep"}, strings.NewReader(""), &stdout, &stderr, env{}); code != 2 {
		t.Errorf("exit %d, want 2 (usage)", code)
	}
	if !strings.Contains(stderr.String(), "usage: openmax cassette sweep") {
		t.Errorf("stderr:\n%s", stderr.Bytes())
	}
}

// TestLoadSweepSaysWhatASerialLoadSays: loadSweep reads a folder's
// recordings on parallel goroutines, yet its stderr (the notes of the
// converted ones) and the failure it reports (the first malformed file by
// name) are those of loading the files one by one in name order, at every
// parallelism.
func TestLoadSweepSaysWhatASerialLoadSays(t *testing.T) {
	files := []string{
		fixture.Real(t, "simonw-llm__test_tool_use_basic.yaml"),
		fixture.Real(t, "anthropic-sdk-go__tool_runner_streaming_all.yaml"),
		fixture.Real(t, "fantasy__gemini-2.5-flash__thinking-streaming.yaml"),
		fixture.Real(t, "dd-trace-py__response_stream_incomplete.yaml"),
	}
	lib, _ := filepath.Glob(filepath.Join(libraryDir, "*.yaml"))
	if len(lib) < 2 {
		t.Fatal("no cassettes in " + libraryDir)
	}
	files = append(files, lib[:2]...)
	for _, tt := range []struct {
		name string
		bad  []string // malformed files added, by name
	}{
		{"every file loads", nil},
		{"two malformed files", []string{"c_bad.yaml", "e_bad.yaml"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for i, f := range files {
				data, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				// Names that interleave the kinds of file: a_, b_, d_, ...
				name := fmt.Sprintf("%c_%s", "abdfgh"[i], filepath.Base(f))
				if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for _, b := range tt.bad {
				if err := os.WriteFile(filepath.Join(dir, b), []byte("interactions: [unclosed\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			// The reference: one by one, in name order, up to the first failure.
			paths, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
			sort.Strings(paths)
			var want bytes.Buffer
			var wantErr error
			var wantNames []string
			for _, p := range paths {
				if _, err := loadCassette(p, "openmax cassette sweep", &want); err != nil {
					wantErr = err
					break
				}
				wantNames = append(wantNames, filepath.Base(p))
			}
			if !strings.Contains(want.String(), "converted in memory") {
				t.Fatalf("no recording was converted; the test needs some:\n%s", want.String())
			}
			if (wantErr != nil) != (len(tt.bad) > 0) {
				t.Fatalf("serial load error %v with %d malformed files", wantErr, len(tt.bad))
			}
			for _, par := range []int{1, 2, 8} {
				var got bytes.Buffer
				cs, err := loadSweep(dir, par, &got)
				if got.String() != want.String() {
					t.Errorf("parallel %d: stderr\n%s\nwant\n%s", par, got.String(), want.String())
				}
				if fmt.Sprint(err) != fmt.Sprint(wantErr) {
					t.Errorf("parallel %d: error %v, want %v", par, err, wantErr)
				}
				if wantErr == nil {
					var names []string
					for _, c := range cs {
						names = append(names, c.Name)
					}
					if !slices.Equal(names, wantNames) {
						t.Errorf("parallel %d: cassettes %v, want %v", par, names, wantNames)
					}
				}
			}
		})
	}
}
